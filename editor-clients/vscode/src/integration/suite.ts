// Runs inside VS Code (extensionTestsPath): the extension activates, starts the real server, registers
// its commands, and a save in the workspace reaches the server. Plain assertions, no test framework.

import assert from "node:assert/strict";
import * as path from "node:path";
import * as vscode from "vscode";

async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 20000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
        const v = await fn();
        if (v !== undefined && v !== false) {
            return v;
        }
        if (Date.now() > deadline) {
            throw new Error(`timed out waiting for ${what}`);
        }
        await new Promise((r) => setTimeout(r, 100));
    }
}

export async function run(): Promise<void> {
    const ext = vscode.extensions.getExtension("turnback.turnback");
    assert.ok(ext, "the extension is installed");
    await ext.activate();
    const commands = await vscode.commands.getCommands(true);
    for (const id of ["turnback.rewindAtResponse", "turnback.rewindToPrompt", "turnback.rewindBeforeDirective", "turnback.redo", "turnback.showGaps"]) {
        assert.ok(commands.includes(id), `${id} is registered`);
    }
    // The server's own executeCommand commands appear once the language client is running.
    await waitFor("the server", async () => (await vscode.commands.getCommands(true)).includes("turnback.session.info") || undefined);
    const folder = vscode.workspace.workspaceFolders![0].uri;
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(folder.fsPath, "a.txt")));
    const editor = await vscode.window.showTextDocument(doc);
    const turn = await vscode.commands.executeCommand<{ turn: number }>("turnback.turn.begin", { prompt: "integration" });
    assert.equal(turn.turn, 1);
    await editor.edit((e) => e.insert(new vscode.Position(0, 0), "zero\n"));
    await doc.save();
    const log = await waitFor("the saved file in the log", async () => {
        const l = await vscode.commands.executeCommand<{ turns: { files: unknown[] }[] }>("turnback.session.log", {});
        return l.turns[0]?.files.length ? l : undefined;
    });
    assert.equal(log.turns.length, 1);
}
