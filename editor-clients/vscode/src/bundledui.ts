// The VS Code side of the bundled server (bundled.ts): the Python extension's interpreter through its
// public API, the one message when no interpreter fits with the button that fixes it ("Install into
// a private environment"), and `turnback` on the integrated terminal's PATH.

import * as vscode from "vscode";
import * as path from "path";

import { bundledTarget, chooseServer, installPrivate, outcomeMessage, privatePython, writeShim } from "./bundled";
import type { Candidate, Launch, Outcome } from "./bundled";
import { DEFAULT_COMMAND, findExecutable } from "./config";
import type { Settings } from "./config";
import { log, rt } from "./runtime";

/** The part of ms-python.python's exported API used here (its `environments` API). */
interface PythonEnvironmentPath {
    id: string;
    path: string;
}
interface PythonExtensionApi {
    environments?: {
        getActiveEnvironmentPath(resource?: vscode.Uri): PythonEnvironmentPath;
        resolveEnvironment(env: PythonEnvironmentPath | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
        onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
    };
}

export const INSTALL_PRIVATE = "Install into a private environment";
const SELECT_INTERPRETER = "Select Interpreter";
const SHOW_OUTPUT = "Show Output";

async function pythonApi(): Promise<PythonExtensionApi["environments"] | undefined> {
    const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
    if (!ext) {
        return undefined;
    }
    try {
        const api = ext.isActive ? ext.exports : await ext.activate();
        return api?.environments;
    } catch (err) {
        log(`turnback: the Python extension did not answer: ${String(err)}`);
        return undefined;
    }
}

/** The interpreters to try, in order: the Python extension's for this folder, python3 on PATH. */
export async function interpreterCandidates(folder?: vscode.Uri): Promise<Candidate[]> {
    const out: Candidate[] = [];
    const envs = await pythonApi();
    if (envs) {
        try {
            const active = envs.getActiveEnvironmentPath(folder);
            const resolved = await envs.resolveEnvironment(active);
            const python = resolved?.executable.uri?.fsPath;
            if (python) {
                out.push({ python, from: "the Python extension's interpreter" });
            }
        } catch (err) {
            log(`turnback: could not read the Python extension's interpreter: ${String(err)}`);
        }
    }
    const onPath = findExecutable("python3");
    if (onPath && !out.some((c) => c.python === onPath)) {
        out.push({ python: onPath, from: "python3 on PATH" });
    }
    return out;
}

/** Only the default command gives way to the bundled server: a program set in turnback.server.command
 *  or turnback.server.python that is missing is the user's to fix, and is said so. */
export function usesDefaultCommand(settings: Settings): boolean {
    const cmd = (settings.serverCommand ?? []).filter((p) => typeof p === "string" && p.length > 0);
    return !settings.serverPython?.trim() && (cmd.length === 0 || cmd.join(" ") === DEFAULT_COMMAND.join(" "));
}

let watching = false;

/**
 * The bundled server's launch; "told" when the user was told why it cannot run (one message, with
 * the button that fixes it); undefined when this is not a release .vsix (no bundled server: the
 * caller says the server was not found, as before).
 */
export async function bundledServer(context: vscode.ExtensionContext, folder: vscode.Uri | undefined,
    restart: () => Promise<void>): Promise<Launch | "told" | undefined> {
    if (!bundledTarget(context.extensionPath)) {
        return undefined;
    }
    const storage = context.globalStorageUri.fsPath;
    const candidates = await interpreterCandidates(folder);
    const outcome = await chooseServer(context.extensionPath, candidates, storage);
    watchInterpreter(context, restart);
    if (outcome.kind === "launch") {
        log(outcome.launch.note);
        const bin = writeShim(storage, outcome.launch);
        if (bin) {
            outcome.launch.shim = path.join(bin, "turnback");
            context.environmentVariableCollection.prepend("PATH", `${bin}:`);
            context.environmentVariableCollection.description = "turnback: the `turnback` command of the server bundled with the extension";
        } else {
            log(`turnback: could not write ${storage}/bin/turnback; the integrated terminal has no turnback command`);
        }
        return outcome.launch;
    }
    tell(context, outcome, candidates, restart);
    return "told";
}

/** A new interpreter chosen in the Python extension: the bundled server follows it. */
function watchInterpreter(context: vscode.ExtensionContext, restart: () => Promise<void>): void {
    if (watching) {
        return;
    }
    watching = true;
    void pythonApi().then((envs) => {
        if (envs) {
            context.subscriptions.push(envs.onDidChangeActiveEnvironmentPath(() => void restart()));
        }
    });
}

function tell(context: vscode.ExtensionContext, outcome: Outcome, candidates: Candidate[], restart: () => Promise<void>): void {
    const message = outcomeMessage(outcome);
    log(message);
    rt.statusItem.text = "$(error) turnback: no Python for the server";
    rt.statusItem.tooltip = `${message}\nClick to show the output.`;
    rt.statusItem.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    rt.statusItem.command = "turnback.showOutput";
    rt.statusItem.show();
    const buttons: string[] = [];
    if (outcome.kind === "unfit") {
        buttons.push(INSTALL_PRIVATE);
    }
    if (outcome.kind !== "wrong-platform" && vscode.extensions.getExtension("ms-python.python")) {
        buttons.push(SELECT_INTERPRETER);
    }
    buttons.push(SHOW_OUTPUT);
    void vscode.window.showErrorMessage(message, ...buttons).then(async (choice) => {
        if (choice === INSTALL_PRIVATE) {
            await installIntoPrivate(context, candidates, restart);
        } else if (choice === SELECT_INTERPRETER) {
            await vscode.commands.executeCommand("python.setInterpreter");
        } else if (choice === SHOW_OUTPUT) {
            rt.output.show();
        }
    });
}

export async function installIntoPrivate(context: vscode.ExtensionContext, candidates: Candidate[],
    restart: () => Promise<void>): Promise<void> {
    const storage = context.globalStorageUri.fsPath;
    const python = await privatePython(candidates, context.extensionPath);
    if (!python) {
        const message = "turnback: a private environment needs Python 3.10 or newer, and none was found " +
            "(the Python extension's interpreter, python3.13 ... python3.10 and python3 on PATH). Install one " +
            "(for example sudo apt install python3), then Restart Server.";
        log(message);
        void vscode.window.showErrorMessage(message, SHOW_OUTPUT).then((c) => c && rt.output.show());
        return;
    }
    const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification,
        title: `turnback: installing the server into a private environment (Python ${python.version})…` },
    () => installPrivate(context.extensionPath, storage, python.python));
    rt.output.appendLine(result.log);
    log(result.message);
    if (!result.ok) {
        void vscode.window.showErrorMessage(result.message, SHOW_OUTPUT).then((c) => c && rt.output.show());
        return;
    }
    void vscode.window.showInformationMessage(result.message);
    await restart();
}
