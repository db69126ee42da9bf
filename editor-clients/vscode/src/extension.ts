// The VS Code side of turnback: the only module that imports `vscode`. Everything it shows is built
// by render.ts and flows.ts, which the plain-Node tests drive against the real server.

import * as vscode from "vscode";
import { LanguageClient, State, TransportKind, WorkDoneProgress } from "vscode-languageclient/node";
import type { LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

import { findExecutable, initializationOptions, serverCommand, startFailureMessage, NOT_INSTALLED } from "./config";
import type { ServerCommand, Settings } from "./config";
import { failureMessage, redoFlow, rewindFlow } from "./flows";
import { forkFlow, lineageNode } from "./fork";
import { recoveryFlow } from "./recovery";
import type { FlowOutcome, FlowUi } from "./flows";
import { TurnbackApi } from "./protocol";
import type { Boundary, Directive, RedoGroup } from "./protocol";
import {
    Commands,
    directiveAttemptPicks,
    directiveLenses,
    dialogDetail,
    firstLine,
    gapPicks,
    mentionsPath,
    promptPicks,
    redoPicks,
    renderStatus,
    responsePicks,
    sessionTree,
} from "./render";
import type { BoundaryPick, Confirmation, TreeNode } from "./render";
import { SessionState } from "./state";

let client: LanguageClient | undefined;
let api: TurnbackApi | undefined;
const state = new SessionState();
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
let tree: SessionTreeProvider;
let lenses: DirectiveLensProvider;

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

function workspaceRoot(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

// -----------------------------------------------------------------------------------------------
// Server

async function startClient(context: vscode.ExtensionContext): Promise<void> {
    const root = workspaceRoot();
    if (!root) {
        output.appendLine("turnback: no workspace folder is open; the sidecar starts with one.");
        return;
    }
    const settings = readSettings();
    const cmd = serverCommand(settings);
    if (!findExecutable(cmd.command, process.env, root)) {
        void notInstalled(cmd);
        return;
    }
    const serverOptions: ServerOptions = {
        command: cmd.command,
        args: cmd.args,
        transport: TransportKind.stdio,
        options: { cwd: root },
    };
    const clientOptions: LanguageClientOptions = {
        documentSelector: [{ scheme: "file" }],
        outputChannel: output,
        initializationOptions: initializationOptions(settings),
        workspaceFolder: vscode.workspace.workspaceFolders?.[0],
        initializationFailedHandler: (err) => {
            output.appendLine(`turnback: initialize failed: ${String(err)}`);
            void vscode.window.showErrorMessage(`turnback could not open this workspace's session: ${failureText(err)}`, "Show Output")
                .then((choice) => choice && output.show());
            return false;
        },
    };
    output.appendLine(`turnback: starting ${[cmd.command, ...cmd.args].join(" ")} in ${root}`);
    const c = new LanguageClient("turnback", "Turnback", serverOptions, clientOptions);
    state.attach(c);
    c.onDidChangeState((e) => {
        if (e.newState === State.Running && e.oldState === State.Starting && client === c && state.status) {
            // The language client restarted a crashed server by itself: what we showed is stale.
            void refreshFromServer(true);
        }
        // Only the current client speaks for the status bar: a client stopped by a restart reports
        // Stopped after its successor may already have shown the new server's status.
        if (e.newState === State.Stopped && client === c) {
            statusItem.text = "$(circle-slash) turnback";
            statusItem.tooltip = "turnback: the server is not running. Click to show its output.";
            statusItem.backgroundColor = undefined;
            statusItem.command = Commands.showOutput;
        }
    });
    client = c;
    api = new TurnbackApi(c);
    try {
        await c.start();
    } catch (err) {
        client = undefined;
        api = undefined;
        output.appendLine(`turnback: ${String(err)}`);
        if (String(err).includes("ENOENT")) {
            void notInstalled(cmd);
        } else {
            statusItem.text = "$(circle-slash) turnback";
            statusItem.tooltip = "turnback: the server did not start. Click to show its output.";
            statusItem.backgroundColor = undefined;
            statusItem.command = Commands.showOutput;
            void vscode.window.showErrorMessage(startFailureMessage(err, cmd), "Show Output")
                .then((choice) => choice && output.show());
        }
        return;
    }
    context.subscriptions.push({ dispose: () => void c.stop() });
    try {
        const info = await api.sessionInfo();
        output.appendLine(`turnback: running: session ${info.sessionId}, ${info.ownership}, ${info.turnCount} turn(s), ` +
            `${info.liveGaps} gap(s), ${info.recovery} recovery record(s)`);
    } catch (err) {
        output.appendLine(failureMessage("reading the session", err));
    }
    await refreshFromServer();
}

async function notInstalled(cmd: ServerCommand): Promise<void> {
    output.appendLine(`turnback: ${NOT_INSTALLED} (tried: ${[cmd.command, ...cmd.args].join(" ")})`);
    statusItem.text = "$(circle-slash) turnback";
    statusItem.tooltip = NOT_INSTALLED;
    statusItem.command = Commands.showOutput;
    const choice = await vscode.window.showErrorMessage(startFailureMessage(Object.assign(new Error("spawn ENOENT"), { code: "ENOENT" }), cmd),
        "Open Settings", "Show Output");
    if (choice === "Open Settings") {
        await vscode.commands.executeCommand("workbench.action.openSettings", "turnback.server");
    } else if (choice === "Show Output") {
        output.show();
    }
}

/** Status, directives and the tree from requests (the notifications only carry changes). */
async function refreshFromServer(force = false): Promise<void> {
    if (!api) {
        return;
    }
    try {
        if (!state.status || force) {
            try {
                state.setStatus(await api.sessionStatus());
            } catch {
                // an older server: the count from session/info, the list from the next notification
                const info = await api.sessionInfo();
                state.setStatus({ liveGaps: info.liveGaps, gaps: [], ownership: info.ownership, collecting: false, headSeq: info.headSeq, recovery: info.recovery });
            }
        }
        const { directives } = await api.directiveList();
        state.replaceDirectives(directives);
    } catch (err) {
        output.appendLine(failureMessage("reading the session", err));
    }
    tree.refresh();
}

function failureText(err: unknown): string {
    return err instanceof Error ? err.message : String((err as { message?: string })?.message ?? err);
}

function requireApi(): TurnbackApi | undefined {
    if (!api || !client || !client.isRunning()) {
        void vscode.window.showWarningMessage("turnback is not running in this workspace.", "Show Output")
            .then((choice) => choice && output.show());
        return undefined;
    }
    return api;
}

// -----------------------------------------------------------------------------------------------
// Status bar

function updateStatusBar(): void {
    const view = renderStatus(state.status, { root: workspaceRoot() });
    statusItem.text = view.text;
    statusItem.tooltip = view.tooltip;
    statusItem.backgroundColor = view.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    statusItem.command = view.opens === "recovery" ? Commands.showRecovery : Commands.showGaps;
    statusItem.show();
    void vscode.commands.executeCommand("setContext", "turnback.recoveryPending", (state.status?.recovery ?? 0) > 0);
}

// -----------------------------------------------------------------------------------------------
// Tree view

const TREE_ICONS: Record<string, string> = {
    "turnback.turn.directive": "wand",
    "turnback.lineage": "type-hierarchy",
    "turnback.session": "git-branch",
    "turnback.session.frozen": "lock",
};

class SessionTreeProvider implements vscode.TreeDataProvider<TreeNode> {
    private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
    readonly onDidChangeTreeData = this.emitter.event;
    private timer: NodeJS.Timeout | undefined;

    refresh(): void {
        this.emitter.fire(undefined);
    }

    /** Coalesce bursts of status notifications (every capture sends one). */
    refreshSoon(): void {
        if (this.timer) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => this.refresh(), 400);
    }

    getTreeItem(node: TreeNode): vscode.TreeItem {
        const item = new vscode.TreeItem(node.label, !node.children?.length ? vscode.TreeItemCollapsibleState.None
            : node.expanded ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
        item.id = node.id;
        item.description = node.description;
        item.tooltip = node.tooltip;
        item.contextValue = node.contextValue;
        if (node.uri) {
            const uri = vscode.Uri.parse(node.uri);
            item.resourceUri = uri;
            item.command = { command: "vscode.open", title: "Open", arguments: [uri] };
        } else {
            item.iconPath = new vscode.ThemeIcon(TREE_ICONS[node.contextValue] ?? "comment-discussion");
        }
        return item;
    }

    async getChildren(node?: TreeNode): Promise<TreeNode[]> {
        if (node) {
            return node.children ?? [];
        }
        if (!api || !client?.isRunning()) {
            return [];
        }
        try {
            const turns = sessionTree(await api.sessionLog(), workspaceRoot());
            const lineage = await api.sessionList().then((r) => lineageNode(r.sessions ?? []), () => undefined);
            return lineage ? [lineage, ...turns] : turns;
        } catch (err) {
            output.appendLine(failureMessage("reading the session log", err));
            return [];
        }
    }
}

// -----------------------------------------------------------------------------------------------
// Directive CodeLenses

class DirectiveLensProvider implements vscode.CodeLensProvider {
    private readonly emitter = new vscode.EventEmitter<void>();
    readonly onDidChangeCodeLenses = this.emitter.event;

    changed(): void {
        this.emitter.fire();
    }

    provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
        const out: vscode.CodeLens[] = [];
        for (const d of state.directivesFor(doc.uri.toString())) {
            const line = Math.max(0, Math.min(d.anchor.line, doc.lineCount - 1));
            const range = new vscode.Range(line, 0, line, 0);
            for (const spec of directiveLenses(d)) {
                out.push(new vscode.CodeLens(range, {
                    title: spec.title,
                    tooltip: spec.tooltip,
                    command: spec.command ?? "",
                    arguments: spec.arguments,
                }));
            }
        }
        return out;
    }
}

// -----------------------------------------------------------------------------------------------
// Commands

const modalUi: FlowUi = {
    async confirm(c: Confirmation): Promise<string | undefined> {
        output.appendLine(`${c.title}\n${c.detail}\n`);
        // Unsaved editors over files the plan touches would end in a conflict: say so in the dialog.
        const dirty = vscode.workspace.textDocuments
            .filter((d) => d.isDirty && d.uri.scheme === "file")
            .map((d) => vscode.workspace.asRelativePath(d.uri, false))
            .filter((rel) => mentionsPath(c.detail, rel));
        const detail = dialogDetail(dirty.length
            ? `${c.detail}\n\n⚠ Unsaved changes in the editor: ${dirty.join(", ")}. Save or revert them first, or the editor will show a conflict.`
            : c.detail);
        const buttons = [c.action, ...(c.alternative ? [c.alternative] : []), ...(c.more ?? [])];
        return vscode.window.showWarningMessage(c.title, { modal: true, detail }, ...buttons);
    },
    during<T>(title: string, work: (workDoneToken?: string) => Promise<T>): Promise<T> {
        const c = client;
        if (!c) {
            return work(undefined);
        }
        // The server reports $/progress on a token the request carries; show it as a notification.
        const token = `turnback-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
        return Promise.resolve(vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, async (progress) => {
            const listening = c.onProgress(WorkDoneProgress.type, token, (p) => {
                if (p.kind !== "end" && p.message) {
                    progress.report({ message: p.message });
                }
            });
            try {
                return await work(token);
            } finally {
                listening.dispose();
            }
        }));
    },
};

async function report(outcome: FlowOutcome): Promise<void> {
    output.appendLine(`turnback: ${outcome.message}`);
    if (outcome.status === "committed") {
        void vscode.window.showInformationMessage(outcome.message);
    } else if (outcome.status === "rolled-back" || outcome.status === "stale") {
        const buttons = outcome.result?.recovery?.length ? ["Show Recovery", "Show Output"] : ["Show Output"];
        void vscode.window.showErrorMessage(outcome.message, ...buttons).then((choice) => {
            if (choice === "Show Recovery") {
                void vscode.commands.executeCommand(Commands.showRecovery);
            } else if (choice) {
                output.show();
            }
        });
    } else if (outcome.status === "unavailable" || outcome.status === "nothing-to-do") {
        void vscode.window.showInformationMessage(outcome.message);
    }
    tree.refresh();
}

async function runRewind(boundary: Boundary): Promise<void> {
    const a = requireApi();
    if (!a) {
        return;
    }
    try {
        await report(await rewindFlow(a, boundary, modalUi, { root: workspaceRoot() }));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("rewind", err));
    }
}

function turnOf(arg: unknown): number | undefined {
    const t = (arg as { turn?: unknown } | undefined)?.turn;
    return typeof t === "number" ? t : typeof arg === "number" ? arg : undefined;
}

async function pickBoundary(kind: "response" | "prompt", title?: string): Promise<Boundary | undefined> {
    const a = requireApi();
    if (!a) {
        return undefined;
    }
    let log;
    try {
        log = await a.sessionLog();
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("reading the session log", err));
        return undefined;
    }
    if (!log.turns.length) {
        void vscode.window.showInformationMessage("turnback: this session has no turn yet.");
        return undefined;
    }
    const items: BoundaryPick[] = kind === "response" ? responsePicks(log) : promptPicks(log);
    const picked = await vscode.window.showQuickPick(items, {
        title: title ?? (kind === "response" ? "Rewind at this response (keeps it)" : "Rewind to before this prompt (discards it)"),
        placeHolder: kind === "response" ? "Pick the last answer to keep" : "Pick the first prompt to discard",
        matchOnDescription: true,
        matchOnDetail: true,
    });
    return picked?.boundary;
}

async function rewindAtResponse(arg?: unknown): Promise<void> {
    const turn = turnOf(arg);
    const boundary = turn !== undefined ? { kind: "afterResponse" as const, turn } : await pickBoundary("response");
    if (boundary) {
        await runRewind(boundary);
    }
}

async function rewindToPrompt(arg?: unknown): Promise<void> {
    const turn = turnOf(arg);
    const boundary = turn !== undefined ? { kind: "beforePrompt" as const, turn } : await pickBoundary("prompt");
    if (boundary) {
        await runRewind(boundary);
    }
}

async function pickDirective(): Promise<Directive | undefined> {
    const editor = vscode.window.activeTextEditor;
    let candidates = editor ? state.directivesFor(editor.document.uri.toString()) : [];
    if (editor && candidates.length > 1) {
        // The one nearest above the cursor first.
        const line = editor.selection.active.line;
        candidates = [...candidates].sort((x, y) => Math.abs(x.anchor.line - line) - Math.abs(y.anchor.line - line));
    }
    if (!candidates.length) {
        candidates = state.allDirectives();
    }
    candidates = candidates.filter((d) => d.attempts?.length);
    if (!candidates.length) {
        void vscode.window.showInformationMessage("turnback: no directive has an attempt to rewind.");
        return undefined;
    }
    if (candidates.length === 1) {
        return candidates[0];
    }
    const picked = await vscode.window.showQuickPick(candidates.map((d) => ({
        label: `$(wand) ${firstLine(d.request, 70)}`,
        description: `${d.state} · ${d.attempts.length} attempt(s)`,
        detail: vscode.workspace.asRelativePath(vscode.Uri.parse(d.uri)) + `:${d.anchor.line + 1}`,
        d,
    })), { title: "Rewind before an implementation: which directive?" });
    return picked?.d;
}

async function rewindBeforeDirective(arg?: unknown): Promise<void> {
    const a = requireApi();
    if (!a) {
        return;
    }
    const given = arg as { directiveId?: string; turn?: number } | undefined;
    let d: Directive | undefined = given?.directiveId ? state.findDirective(given.directiveId) : undefined;
    if (given?.directiveId && !d) {
        try {
            d = (await a.directiveList()).directives.find((x) => x.id === given.directiveId);
        } catch {
            d = undefined;
        }
    }
    if (!d) {
        d = await pickDirective();
    }
    if (!d) {
        return;
    }
    let turn = typeof given?.turn === "number" && given.directiveId === d.id ? given.turn : undefined;
    if (turn === undefined) {
        const picks = directiveAttemptPicks(d);
        const picked = picks.length === 1 ? picks[0] : await vscode.window.showQuickPick(picks, {
            title: `Rewind before which attempt at “${firstLine(d.request, 50)}”?`,
        });
        turn = picked?.turn;
    }
    if (turn !== undefined) {
        await runRewind({ kind: "beforeDirectiveAttempt", directiveId: d.id, turn });
    }
}

async function redo(): Promise<void> {
    const a = requireApi();
    if (!a) {
        return;
    }
    const pick = async (groups: RedoGroup[]): Promise<RedoGroup | undefined> => {
        const items = redoPicks({ available: true, groups });
        const picked = await vscode.window.showQuickPick(items, { title: "Redo: bring back which head?" });
        return picked ? groups.find((g) => g.headSeq === picked.headSeq) : undefined;
    };
    try {
        await report(await redoFlow(a, pick, modalUi, { root: workspaceRoot() }));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("redo", err));
    }
}

async function showRecovery(): Promise<void> {
    const a = requireApi();
    if (!a) {
        return;
    }
    try {
        const outcome = await recoveryFlow(a, {
            pick: (items) => Promise.resolve(vscode.window.showQuickPick(items, {
                title: "turnback: recovery records, what a rewind or redo could not put back",
                matchOnDescription: true,
                matchOnDetail: true,
            })),
            confirm: (c) => modalUi.confirm(c),
        }, { root: workspaceRoot() });
        output.appendLine(`turnback: ${outcome.message}`);
        if (outcome.status === "failed") {
            void vscode.window.showErrorMessage(outcome.message, "Show Output").then((choice) => choice && output.show());
        } else if (outcome.status !== "cancelled") {
            void vscode.window.showInformationMessage(outcome.message);
        }
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("recovery", err));
    }
    await refreshFromServer(true);
}

async function forkAtResponse(arg?: unknown): Promise<void> {
    const a = requireApi();
    if (!a) {
        return;
    }
    let turn = turnOf(arg);
    if (turn === undefined) {
        const boundary = await pickBoundary("response", "Fork at this response (the branch keeps it)");
        turn = boundary?.turn;
    }
    if (turn === undefined) {
        return;
    }
    const root = workspaceRoot();
    try {
        const outcome = await forkFlow(a, turn, {
            confirm: (c) => modalUi.confirm(c),
            worktreePath: () => Promise.resolve(vscode.window.showInputBox({
                title: "Fork into a worktree: the branch's folder",
                prompt: "A new folder (a git worktree when this is a git repository); this folder stays as it is.",
                value: root ? `${root}-fork-${turn}` : "",
                validateInput: (v) => (v.trim() ? undefined : "A folder path, please."),
            })).then((v) => v?.trim() || undefined),
        }, { root });
        output.appendLine(`turnback: ${outcome.message}`);
        if (outcome.status === "forked") {
            const worktree = outcome.result?.branch?.worktree;
            const choice = await vscode.window.showInformationMessage(outcome.message, ...(worktree ? ["Open Worktree"] : []));
            if (choice === "Open Worktree" && worktree) {
                await vscode.commands.executeCommand("vscode.openFolder", vscode.Uri.file(worktree), { forceNewWindow: true });
            }
        } else if (outcome.status === "refused" || outcome.status === "rolled-back" || outcome.status === "stale") {
            void vscode.window.showErrorMessage(outcome.message, "Show Output").then((choice) => choice && output.show());
        }
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("fork", err));
    }
    await refreshFromServer(true);
}

async function showGaps(): Promise<void> {
    const items = gapPicks(state.status, workspaceRoot());
    if (!items.length) {
        void vscode.window.showInformationMessage("turnback: no gap, every change is captured.");
        return;
    }
    const picked = await vscode.window.showQuickPick(items, {
        title: `turnback: ${items.length} gap(s), what a rewind cannot put back`,
        matchOnDescription: true,
        matchOnDetail: true,
    });
    if (picked?.uri) {
        try {
            await vscode.window.showTextDocument(vscode.Uri.parse(picked.uri));
        } catch {
            // a gap may be a file that cannot be opened (too large, unreadable, a link): reveal it instead
            await vscode.commands.executeCommand("revealInExplorer", vscode.Uri.parse(picked.uri));
        }
    }
}

async function editDirectiveRequest(arg?: unknown): Promise<void> {
    const a = requireApi();
    const id = (arg as { directiveId?: string } | undefined)?.directiveId;
    const d = id ? state.findDirective(id) : undefined;
    if (!a || !d) {
        return;
    }
    const request = await vscode.window.showInputBox({
        title: "Edit the directive's request",
        value: d.request,
        prompt: "The next attempt at this directive uses the new request.",
    });
    if (request === undefined || request === d.request) {
        return;
    }
    try {
        await a.directiveUpsert({
            id: d.id,
            uri: d.uri,
            anchor: { line: d.anchor.line, character: d.anchor.character },
            request,
            ...(d.parentId ? { parentId: d.parentId } : {}),
        });
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("editing the directive", err));
    }
}

// -----------------------------------------------------------------------------------------------
// Activation

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    output = vscode.window.createOutputChannel("Turnback");
    statusItem = vscode.window.createStatusBarItem("turnback.gaps", vscode.StatusBarAlignment.Left, 50);
    statusItem.name = "Turnback gaps";
    tree = new SessionTreeProvider();
    lenses = new DirectiveLensProvider();
    updateStatusBar();

    context.subscriptions.push(
        output,
        statusItem,
        vscode.window.registerTreeDataProvider("turnback.session", tree),
        vscode.languages.registerCodeLensProvider({ scheme: "file" }, lenses),
        vscode.commands.registerCommand(Commands.rewindAtResponse, rewindAtResponse),
        vscode.commands.registerCommand(Commands.rewindToPrompt, rewindToPrompt),
        vscode.commands.registerCommand(Commands.rewindBeforeDirective, rewindBeforeDirective),
        vscode.commands.registerCommand(Commands.redo, redo),
        vscode.commands.registerCommand(Commands.showGaps, showGaps),
        vscode.commands.registerCommand(Commands.showRecovery, showRecovery),
        vscode.commands.registerCommand(Commands.forkAtResponse, forkAtResponse),
        vscode.commands.registerCommand(Commands.editDirectiveRequest, editDirectiveRequest),
        vscode.commands.registerCommand(Commands.refreshSession, () => refreshFromServer(true)),
        vscode.commands.registerCommand(Commands.showOutput, () => output.show()),
        vscode.commands.registerCommand(Commands.restartServer, async () => {
            const old = client;
            client = undefined;
            api = undefined;
            if (old) {
                await old.stop().catch(() => undefined);
            }
            state.status = undefined;
            await startClient(context);
        }),
        state.onDidChange((change) => {
            if (change.kind === "status") {
                updateStatusBar();
                tree.refreshSoon();
            } else if (change.kind === "directives") {
                lenses.changed();
            } else if (change.kind === "epoch") {
                tree.refresh();
            } else if (change.kind === "recovered" && state.recovered) {
                // the server finished or rolled back what a crash interrupted: say what, once
                output.appendLine(`turnback: ${state.recovered.message}`);
                void vscode.window.showWarningMessage(`turnback: ${state.recovered.message}`);
                tree.refresh();
            }
        }),
        // A capture changes no field of turnback/status, so no notification follows a save: refresh
        // the view ourselves (the server has the didSave before the refresh's session/log request).
        vscode.workspace.onDidSaveTextDocument((doc) => {
            if (doc.uri.scheme === "file") {
                tree.refreshSoon();
            }
        }),
        vscode.workspace.onDidChangeConfiguration(async (e) => {
            if (e.affectsConfiguration("turnback")) {
                const choice = await vscode.window.showInformationMessage(
                    "turnback settings changed; restart the server to apply them?", "Restart");
                if (choice === "Restart") {
                    await vscode.commands.executeCommand(Commands.restartServer);
                }
            }
        }),
    );
    await startClient(context);
}

export async function deactivate(): Promise<void> {
    if (client) {
        await client.stop().catch(() => undefined);
    }
}
