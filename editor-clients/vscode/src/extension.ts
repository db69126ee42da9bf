// The VS Code side of turnback: activation, the language client, the status bar, and the wiring of
// the views (views.ts) and commands (commands.ts). Everything they show is built by modules without
// `vscode` (render.ts, flows.ts, …), which the plain-Node tests drive against the real server.

import * as vscode from "vscode";
import { LanguageClient, State, TransportKind } from "vscode-languageclient/node";
import type { LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

import { registerCommands } from "./commands";
import { initializationOptions, serverCommand, startFailureMessage } from "./config";
import type { ServerCommand, Settings } from "./config";
import { failureMessage } from "./flows";
import { Notifications, TurnbackApi } from "./protocol";
import type { RewoundParams } from "./protocol";
import { Commands, renderStatus } from "./render";
import { log, rt } from "./runtime";
import { foundNote, isResolved, notFoundHelp, notFoundMessage, resolveServer, settingForProgram } from "./setup";
import { DirectiveLensProvider, DirectiveTreeProvider, IMAGES, ImageContentProvider, SessionTreeProvider, workspaceRoot } from "./views";

let tree: SessionTreeProvider;
let directivesTree: DirectiveTreeProvider;
let lenses: DirectiveLensProvider;
/** The "server not found" notification is shown once per window (the status bar and the view keep
 *  saying it until a server runs). */
let setupNoticeShown = false;

function readSettings(): Settings {
    const c = vscode.workspace.getConfiguration("turnback");
    return {
        serverCommand: c.get<string[]>("server.command"),
        serverPython: c.get<string | null>("server.python"),
        storeKind: c.get<"heads" | "pid">("store.kind"),
        storePath: c.get<string | null>("store.path"),
        maxFileBytes: c.get<number>("capture.maxFileBytes"),
        sweep: c.get<boolean>("capture.sweep"),
        graceHeads: c.get<number>("collect.graceHeads"),
    };
}

function setRunning(running: boolean): void {
    void vscode.commands.executeCommand("setContext", "turnback.serverRunning", running);
}

// -----------------------------------------------------------------------------------------------
// Server

async function startClient(context: vscode.ExtensionContext): Promise<void> {
    const root = workspaceRoot();
    if (!root) {
        log("turnback: no workspace folder is open; the sidecar starts with one.");
        return;
    }
    const settings = readSettings();
    const wanted = serverCommand(settings);
    const found = resolveServer(wanted, { root });
    if (!isResolved(found)) {
        notInstalled(wanted, found.tried, root);
        return;
    }
    const cmd: ServerCommand = { command: found.command, args: found.args };
    rt.server = cmd;
    log(foundNote(found));
    const serverOptions: ServerOptions = {
        command: cmd.command,
        args: cmd.args,
        transport: TransportKind.stdio,
        options: { cwd: root },
    };
    const clientOptions: LanguageClientOptions = {
        documentSelector: [{ scheme: "file" }],
        outputChannel: rt.output,
        initializationOptions: initializationOptions(settings),
        workspaceFolder: vscode.workspace.workspaceFolders?.[0],
        initializationFailedHandler: (err) => {
            log(`turnback: initialize failed: ${String(err)}`);
            void vscode.window.showErrorMessage(`turnback could not open this workspace's session: ${failureText(err)}`, "Show Output")
                .then((choice) => choice && rt.output.show());
            return false;
        },
    };
    log(`turnback: starting ${[cmd.command, ...cmd.args].join(" ")} in ${root}`);
    const c = new LanguageClient("turnback", "Turnback", serverOptions, clientOptions);
    rt.state.attach(c);
    c.onNotification(Notifications.rewound, (p: RewoundParams) => onRewound(p));
    c.onDidChangeState((e) => {
        if (e.newState === State.Running && e.oldState === State.Starting && rt.client === c && rt.state.status) {
            // The language client restarted a crashed server by itself: what we showed is stale.
            void refreshFromServer(true);
        }
        // Only the current client speaks for the status bar: a client stopped by a restart reports
        // Stopped after its successor may already have shown the new server's status.
        if (e.newState === State.Stopped && rt.client === c) {
            setRunning(false);
            rt.statusItem.text = "$(circle-slash) turnback";
            rt.statusItem.tooltip = "turnback: the server is not running. Click to show its output.";
            rt.statusItem.backgroundColor = undefined;
            rt.statusItem.command = Commands.showOutput;
        }
    });
    rt.client = c;
    rt.api = new TurnbackApi(c);
    try {
        await c.start();
    } catch (err) {
        rt.client = undefined;
        rt.api = undefined;
        log(`turnback: ${String(err)}`);
        if (String(err).includes("ENOENT")) {
            notInstalled(wanted, [cmd.command], root);
        } else {
            rt.statusItem.text = "$(circle-slash) turnback";
            rt.statusItem.tooltip = "turnback: the server did not start. Click to show its output.";
            rt.statusItem.backgroundColor = undefined;
            rt.statusItem.command = Commands.showOutput;
            void vscode.window.showErrorMessage(startFailureMessage(err, cmd), "Show Output")
                .then((choice) => choice && rt.output.show());
        }
        return;
    }
    setRunning(true);
    context.subscriptions.push({ dispose: () => void c.stop() });
    try {
        const info = await rt.api.sessionInfo();
        log(`turnback: running: session ${info.sessionId}, ${info.ownership}, ${info.turnCount} turn(s), ` +
            `${info.liveGaps} gap(s), ${info.recovery} recovery record(s)`);
    } catch (err) {
        log(failureMessage("reading the session", err));
    }
    await refreshFromServer();
}

/** Say what is missing and where it was looked for, with the two ways out: choose the program, or
 *  open the setting. The status bar and the session view keep saying it until a server runs. */
function notInstalled(cmd: ServerCommand, tried: string[], root?: string): void {
    const message = notFoundMessage(cmd, tried);
    log(`${message}\n${notFoundHelp(root)}`);
    setRunning(false);
    rt.server = undefined;
    rt.statusItem.text = "$(error) turnback: server not found";
    rt.statusItem.tooltip = `${message}\nClick to choose its program.`;
    rt.statusItem.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    rt.statusItem.command = Commands.chooseServer;
    rt.statusItem.show();
    if (setupNoticeShown) {
        return;
    }
    setupNoticeShown = true;
    void vscode.window.showWarningMessage(message, CHOOSE_EXECUTABLE, OPEN_SETTING).then((choice) => {
        setupNoticeShown = false;
        if (choice === CHOOSE_EXECUTABLE) {
            void vscode.commands.executeCommand(Commands.chooseServer);
        } else if (choice === OPEN_SETTING) {
            void vscode.commands.executeCommand("workbench.action.openSettings", "turnback.server");
        }
    });
}

const CHOOSE_EXECUTABLE = "Choose Executable…";
const OPEN_SETTING = "Open Setting";

/** "Choose Executable…": a file dialog; the program goes into the user's settings, which restarts
 *  the server (onDidChangeConfiguration). */
async function chooseServer(): Promise<void> {
    const picked = await vscode.window.showOpenDialog({
        title: "The turnback program (…/bin/turnback) or a Python that has turnback installed",
        openLabel: "Use This Program", canSelectFiles: true, canSelectFolders: false, canSelectMany: false,
        ...(workspaceRoot() ? { defaultUri: vscode.Uri.file(workspaceRoot()!) } : {}),
    });
    const program = picked?.[0]?.fsPath;
    if (!program) {
        return;
    }
    const { key, value } = settingForProgram(program);
    log(`turnback: turnback.${key} set to ${JSON.stringify(value)} (Choose Executable…)`);
    const config = vscode.workspace.getConfiguration("turnback");
    if (key === "server.command") {
        await config.update("server.python", undefined, vscode.ConfigurationTarget.Global);
    }
    await config.update(key, value, vscode.ConfigurationTarget.Global);
}

/** Status, directives and the views from requests (the notifications only carry changes). */
async function refreshFromServer(force = false): Promise<void> {
    const api = rt.api;
    if (!api) {
        return;
    }
    try {
        if (!rt.state.status || force) {
            try {
                rt.state.setStatus(await api.sessionStatus());
            } catch {
                // an older server: the count from session/info, the list from the next notification
                const info = await api.sessionInfo();
                rt.state.setStatus({ liveGaps: info.liveGaps, gaps: [], ownership: info.ownership, collecting: false, headSeq: info.headSeq, recovery: info.recovery });
            }
        }
        const { directives } = await api.directiveList();
        rt.state.replaceDirectives(directives);
    } catch (err) {
        log(failureMessage("reading the session", err));
    }
    tree.refresh();
}

/** After a rewind, restore, Redo or fork made by any client: the views, the directives, the buffers
 *  (VS Code reloads unmodified editors from disk by itself). */
function onRewound(p: RewoundParams): void {
    log(`turnback: ${p.operation}${p.mode && p.mode !== "all" ? ` (${p.mode} only)` : ""} committed: ${p.files.length} file(s), ${p.turnCount} turn(s)`);
    void refreshFromServer(true);
}

function failureText(err: unknown): string {
    return err instanceof Error ? err.message : String((err as { message?: string })?.message ?? err);
}

// -----------------------------------------------------------------------------------------------
// Status bar

function updateStatusBar(): void {
    const view = renderStatus(rt.state.status, { root: workspaceRoot() });
    rt.statusItem.text = view.text;
    rt.statusItem.tooltip = view.tooltip;
    rt.statusItem.backgroundColor = view.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    rt.statusItem.command = view.opens === "recovery" ? Commands.showRecovery : Commands.showGaps;
    rt.statusItem.show();
    void vscode.commands.executeCommand("setContext", "turnback.recoveryPending", (rt.state.status?.recovery ?? 0) > 0);
}

// -----------------------------------------------------------------------------------------------
// Activation

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    rt.output = vscode.window.createOutputChannel("Turnback");
    rt.statusItem = vscode.window.createStatusBarItem("turnback.gaps", vscode.StatusBarAlignment.Left, 50);
    rt.statusItem.name = "Turnback gaps";
    tree = new SessionTreeProvider();
    directivesTree = new DirectiveTreeProvider();
    lenses = new DirectiveLensProvider();
    rt.views = {
        refresh: () => tree.refresh(),
        refreshSoon: () => tree.refreshSoon(),
        directivesChanged: () => { lenses.changed(); directivesTree.refresh(); },
    };
    updateStatusBar();

    const restart = async () => {
        const old = rt.client;
        rt.client = undefined;
        rt.api = undefined;
        if (old) {
            await old.stop().catch(() => undefined);
        }
        rt.state.status = undefined;
        await startClient(context);
    };
    context.subscriptions.push(
        rt.output,
        rt.statusItem,
        vscode.window.registerTreeDataProvider("turnback.session", tree),
        vscode.window.registerTreeDataProvider("turnback.directives", directivesTree),
        vscode.languages.registerCodeLensProvider({ scheme: "file" }, lenses),
        vscode.workspace.registerTextDocumentContentProvider(IMAGES, new ImageContentProvider()),
        ...registerCommands(),
        vscode.commands.registerCommand(Commands.refreshSession, () => refreshFromServer(true)),
        vscode.commands.registerCommand(Commands.refreshDirectives, () => refreshFromServer(true)),
        vscode.commands.registerCommand(Commands.showOutput, () => rt.output.show()),
        vscode.commands.registerCommand(Commands.restartServer, restart),
        vscode.commands.registerCommand(Commands.chooseServer, chooseServer),
        rt.state.onDidChange((change) => {
            if (change.kind === "status") {
                updateStatusBar();
                tree.refreshSoon();
            } else if (change.kind === "directives") {
                rt.views.directivesChanged();
            } else if (change.kind === "epoch") {
                tree.refresh();
            } else if (change.kind === "recovered" && rt.state.recovered) {
                // the server finished or rolled back what a crash interrupted: say what, once
                rt.output.appendLine(`turnback: ${rt.state.recovered.message}`);
                void vscode.window.showWarningMessage(`turnback: ${rt.state.recovered.message}`);
                tree.refresh();
            }
        }),
        // A capture changes no field of turnback/status, so no notification follows a save or a change
        // the file watcher reports (the agent's, between turns): refresh the view ourselves, soon and
        // once (the server has the event before the refresh's session/log request).
        vscode.workspace.onDidSaveTextDocument((doc) => {
            if (doc.uri.scheme === "file") {
                tree.refreshSoon();
            }
        }),
        ...watchForTheView(),
        vscode.workspace.onDidChangeConfiguration(async (e) => {
            if (!e.affectsConfiguration("turnback")) {
                return;
            }
            // Not running (a program not found, say): the new settings are tried at once.
            if (!rt.client?.isRunning() || e.affectsConfiguration("turnback.server")) {
                await restart();
                return;
            }
            const choice = await vscode.window.showInformationMessage(
                "turnback settings changed; restart the server to apply them?", "Restart");
            if (choice === "Restart") {
                await restart();
            }
        }),
    );
    await startClient(context);
}

/** Files changed on disk (by the agent, by you outside the editor): the view follows them. */
function watchForTheView(): vscode.Disposable[] {
    const watcher = vscode.workspace.createFileSystemWatcher("**/*");
    const changed = (uri: vscode.Uri) => {
        if (!uri.path.includes("/.turnback/") && !uri.path.includes("/.git/")) {
            tree.refreshSoon();
        }
    };
    return [watcher, watcher.onDidCreate(changed), watcher.onDidChange(changed), watcher.onDidDelete(changed)];
}

export async function deactivate(): Promise<void> {
    if (rt.client) {
        await rt.client.stop().catch(() => undefined);
    }
}
