// A command line the extension tells a person to run, shown whole with Copy and Run buttons (issue
// 40): the `claude --resume …` of a rewind, Redo or fork; `turnback hooks install AGENT` from the
// welcome. The notification's message is the sentence and, on a line of its own, the whole command;
// Copy puts it on the clipboard, Run in Terminal types it into a terminal of the workspace and runs it.

import * as vscode from "vscode";

import { log } from "./runtime";
import { workspaceRoot } from "./views";

export const COPY = "Copy Command";
export const RUN = "Run in Terminal";

/** Show `sentence` and `command`; returns what was chosen (or undefined when dismissed). */
export async function offerCommand(sentence: string, command: string,
    opts: { terminalName?: string; extra?: string[]; error?: boolean } = {}): Promise<string | undefined> {
    log(`turnback: ${sentence} ${command}`);
    const buttons = [COPY, RUN, ...(opts.extra ?? [])];
    const text = `${sentence}\n${command}`;
    const choice = await (opts.error ? vscode.window.showErrorMessage(text, ...buttons)
        : vscode.window.showInformationMessage(text, ...buttons));
    if (choice === COPY) {
        await vscode.env.clipboard.writeText(command);
        void vscode.window.setStatusBarMessage("turnback: command copied", 4000);
    } else if (choice === RUN) {
        runInTerminal(command, opts.terminalName ?? "Turnback");
    }
    return choice;
}

export function runInTerminal(command: string, name: string): vscode.Terminal {
    const root = workspaceRoot();
    const terminal = vscode.window.createTerminal({ name, ...(root ? { cwd: root } : {}) });
    terminal.show();
    terminal.sendText(command, true);
    return terminal;
}
