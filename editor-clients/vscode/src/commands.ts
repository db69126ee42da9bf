// The extension's commands, wired to VS Code: rewind (in every mode), restore, redo, fork, the
// diffs, the running turn, directives, recovery, gaps. The conversations themselves (prepare,
// confirm, commit, stale plans) live in flows.ts, fork.ts and recovery.ts, tested in plain Node.

import * as vscode from "vscode";

import { beganMessage, beginAttemptParams, directiveName, newDirectiveParams } from "./directives";
import { failureMessage, redoFlow, restoreFlow, rewindFlow } from "./flows";
import type { FlowOutcome } from "./flows";
import { forkFlow } from "./fork";
import { diffTitle, imageUriParts, noDiffReason, sidesOf } from "./images";
import type { Boundary, Directive, RedoGroup, TurnbackApi } from "./protocol";
import { offerCommand } from "./offer";
import { recoveryFlow } from "./recovery";
import { HOOK_AGENTS, hooksInstallLine } from "./shellcommand";
import {
    Commands,
    directiveAttemptPicks,
    firstLine,
    gapPicks,
    promptPicks,
    redoPicks,
    responsePicks,
    restorePicks,
} from "./render";
import type { BoundaryPick, DiffTarget } from "./render";
import { log, rt } from "./runtime";
import { dirtyUris, flowUi, workspaceRoot } from "./views";

export function requireApi() {
    if (!rt.api || !rt.client || !rt.client.isRunning()) {
        void vscode.window.showWarningMessage("turnback is not running in this workspace.", "Show Output")
            .then((choice) => choice && rt.output.show());
        return undefined;
    }
    return rt.api;
}

export async function report(outcome: FlowOutcome): Promise<void> {
    log(`turnback: ${outcome.message}`);
    if (outcome.status === "committed" && outcome.resumeCommand) {
        void offerCommand(outcome.message, outcome.resumeCommand, { terminalName: "Claude Code" });
    } else if (outcome.status === "committed") {
        void vscode.window.showInformationMessage(outcome.message);
    } else if (outcome.status === "rolled-back" || outcome.status === "stale") {
        const buttons = outcome.result?.recovery?.length ? ["Show Recovery", "Show Output"] : ["Show Output"];
        void vscode.window.showErrorMessage(outcome.message, ...buttons).then((choice) => {
            if (choice === "Show Recovery") {
                void vscode.commands.executeCommand(Commands.showRecovery);
            } else if (choice) {
                rt.output.show();
            }
        });
    } else if (outcome.status === "unavailable" || outcome.status === "nothing-to-do") {
        void vscode.window.showInformationMessage(outcome.message);
    }
    rt.views.refresh();
}

function context() {
    return { root: workspaceRoot(), dirty: dirtyUris };
}

async function runRewind(a: TurnbackApi, boundary: Boundary): Promise<void> {
    try {
        await report(await rewindFlow(a, boundary, flowUi(), context()));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("rewind", err));
    }
}

function turnOf(arg: unknown): number | undefined {
    const t = (arg as { turn?: unknown } | undefined)?.turn;
    return typeof t === "number" ? t : typeof arg === "number" ? arg : undefined;
}

async function pickBoundary(a: TurnbackApi, kind: "response" | "prompt", title?: string): Promise<Boundary | undefined> {
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

async function rewindAtResponse(a: TurnbackApi, arg?: unknown): Promise<void> {
    const turn = turnOf(arg);
    const boundary = turn !== undefined ? { kind: "afterResponse" as const, turn } : await pickBoundary(a, "response");
    if (boundary) {
        await runRewind(a, boundary);
    }
}

async function rewindToPrompt(a: TurnbackApi, arg?: unknown): Promise<void> {
    const turn = turnOf(arg);
    const boundary = turn !== undefined ? { kind: "beforePrompt" as const, turn } : await pickBoundary(a, "prompt");
    if (boundary) {
        await runRewind(a, boundary);
    }
}

async function pickDirective(withAttempts = true, title = "Rewind before an implementation: which directive?"): Promise<Directive | undefined> {
    const editor = vscode.window.activeTextEditor;
    let candidates = editor ? rt.state.directivesFor(editor.document.uri.toString()) : [];
    if (editor && candidates.length > 1) {
        // The one nearest the cursor first.
        const line = editor.selection.active.line;
        candidates = [...candidates].sort((x, y) => Math.abs(x.anchor.line - line) - Math.abs(y.anchor.line - line));
    }
    if (!candidates.length) {
        candidates = rt.state.allDirectives();
    }
    if (withAttempts) {
        candidates = candidates.filter((d) => d.attempts?.length);
    }
    if (!candidates.length) {
        void vscode.window.showInformationMessage(withAttempts ? "turnback: no directive has an attempt to rewind."
            : "turnback: no directive yet (Turnback: New Directive… on a line of a file).");
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
    })), { title });
    return picked?.d;
}

async function directiveOf(a: TurnbackApi, arg: unknown): Promise<Directive | undefined> {
    const id = (arg as { directiveId?: string } | undefined)?.directiveId;
    if (!id) {
        return undefined;
    }
    return rt.state.findDirective(id) ?? (await a.directiveList().catch(() => undefined))?.directives.find((x) => x.id === id);
}

async function rewindBeforeDirective(a: TurnbackApi, arg?: unknown): Promise<void> {
    const given = arg as { directiveId?: string; turn?: number } | undefined;
    const d = (await directiveOf(a, arg)) ?? await pickDirective();
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
        await runRewind(a, { kind: "beforeDirectiveAttempt", directiveId: d.id, turn });
    }
}

async function redo(a: TurnbackApi): Promise<void> {
    const pick = async (groups: RedoGroup[]): Promise<RedoGroup | undefined> => {
        const items = redoPicks({ available: true, groups });
        const picked = await vscode.window.showQuickPick(items, { title: "Redo: bring back what?", matchOnDescription: true, matchOnDetail: true });
        return picked ? groups.find((g) => g.headSeq === picked.headSeq) : undefined;
    };
    try {
        await report(await redoFlow(a, pick, flowUi(), { root: workspaceRoot() }));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("redo", err));
    }
}

/** "Restore to Turn…" on a file (explorer, editor title): the turns that changed it, then the plan. */
async function restoreFile(a: TurnbackApi, arg?: unknown): Promise<void> {
    const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== "file") {
        void vscode.window.showInformationMessage("turnback: open a file of the workspace (or right-click one) to restore it.");
        return;
    }
    const folder = await vscode.workspace.fs.stat(uri).then((st) => st.type === vscode.FileType.Directory, () => false);
    const name = vscode.workspace.asRelativePath(uri, false);
    try {
        const picks = restorePicks(await a.sessionLog(), uri.toString(), folder);
        if (!picks.length) {
            void vscode.window.showInformationMessage(`turnback: no turn changed ${name}: there is nothing to restore it to.`);
            return;
        }
        const picked = await vscode.window.showQuickPick(picks, { title: `Restore ${name} to…`, matchOnDescription: true });
        if (!picked) {
            return;
        }
        await report(await restoreFlow(a, [uri.toString()], picked.boundary, flowUi(), context()));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("restore", err));
    }
}

async function forkAtResponse(a: TurnbackApi, arg?: unknown): Promise<void> {
    let turn = turnOf(arg);
    if (turn === undefined) {
        const boundary = await pickBoundary(a, "response", "Fork at this response (the branch keeps it)");
        turn = boundary?.turn;
    }
    if (turn === undefined) {
        return;
    }
    const root = workspaceRoot();
    try {
        const outcome = await forkFlow(a, turn, {
            confirm: (c) => flowUi().confirm(c),
            worktreePath: () => Promise.resolve(vscode.window.showInputBox({
                title: "Fork into a worktree: the branch's folder",
                prompt: "A new folder (a git worktree when this is a git repository); this folder stays as it is.",
                value: root ? `${root}-fork-${turn}` : "",
                validateInput: (v) => (v.trim() ? undefined : "A folder path, please."),
            })).then((v) => v?.trim() || undefined),
        }, { root });
        log(`turnback: ${outcome.message}`);
        if (outcome.status === "forked") {
            const worktree = outcome.result?.branch?.worktree;
            const extra = worktree ? ["Open Worktree"] : [];
            const choice = outcome.resumeCommand
                ? await offerCommand(outcome.message, outcome.resumeCommand, { terminalName: "Claude Code", extra })
                : await vscode.window.showInformationMessage(outcome.message, ...extra);
            if (choice === "Open Worktree" && worktree) {
                await vscode.commands.executeCommand("vscode.openFolder", vscode.Uri.file(worktree), { forceNewWindow: true });
            }
        } else if (outcome.status === "refused" || outcome.status === "rolled-back" || outcome.status === "stale") {
            void vscode.window.showErrorMessage(outcome.message, "Show Output").then((choice) => choice && rt.output.show());
        }
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("fork", err));
    }
    rt.views.refresh();
}

/** The diff of one change from the session view, in VS Code's diff editor (read-only images). */
async function showDiff(a: TurnbackApi, target?: DiffTarget): Promise<void> {
    if (!target) {
        return;
    }
    try {
        const params = target.source === "user" ? { since: Math.max(1, target.turn) } : { turn: target.turn };
        const result = await a.diff({ ...params, uri: target.uri, text: false, ...(target.sessionId ? { sessionId: target.sessionId } : {}) });
        const change = result.changes.find((c) => c.source === target.source && (target.source === "turn" || c.afterTurn === target.turn));
        if (!change) {
            void vscode.window.showInformationMessage("turnback: that change is no longer in the session.");
            return;
        }
        const why = noDiffReason(change);
        if (why) {
            void vscode.window.showInformationMessage(`turnback: ${why}`);
            return;
        }
        const [left, right] = sidesOf(change, target.sessionId).map((ref) => vscode.Uri.from(imageUriParts(ref)));
        await vscode.commands.executeCommand("vscode.diff", left, right, diffTitle(change), { preview: true });
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("showing the diff", err));
    }
}

/** Every file of one turn, in VS Code's multi-file diff editor. */
async function showTurnDiff(a: TurnbackApi, arg?: unknown): Promise<void> {
    const turn = turnOf(arg) ?? (await pickBoundary(a, "response", "Show what which turn changed?"))?.turn;
    if (turn === undefined) {
        return;
    }
    try {
        const result = await a.diff({ turn, text: false, ...(rt.viewing ? { sessionId: rt.viewing } : {}) });
        const resources = result.changes.filter((c) => !noDiffReason(c)).map((c) => {
            const [left, right] = sidesOf(c, rt.viewing).map((ref) => vscode.Uri.from(imageUriParts(ref)));
            return [vscode.Uri.parse(c.uri), left, right];
        });
        if (!resources.length) {
            void vscode.window.showInformationMessage(`turnback: turn ${turn} changed no file turnback could capture.`);
            return;
        }
        await vscode.commands.executeCommand("vscode.changes", `What turn ${turn} changed`, resources);
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("showing the turn's diff", err));
    }
}

async function runningTurn(a: TurnbackApi, arg?: unknown): Promise<number | undefined> {
    const given = turnOf(arg);
    if (given !== undefined) {
        return given;
    }
    const running = (await a.sessionLog()).turns.find((t) => t.state === "running");
    if (!running) {
        void vscode.window.showInformationMessage("turnback: no turn is running.");
    }
    return running?.turn;
}

async function endTurn(a: TurnbackApi, status: "settled" | "cancelled", arg?: unknown): Promise<void> {
    const turn = await runningTurn(a, arg);
    if (turn === undefined) {
        return;
    }
    try {
        await a.turnSettle({ turn, status });
        void vscode.window.showInformationMessage(`turnback: turn ${turn} ${status === "settled" ? "settled" : "cancelled"}.`);
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage(status === "settled" ? "settling the turn" : "cancelling the turn", err));
    }
    rt.views.refresh();
}

async function beginTurn(a: TurnbackApi): Promise<void> {
    const prompt = await vscode.window.showInputBox({ title: "Begin a turn by hand", prompt: "The prompt (turns normally come from your agent's hooks)" });
    if (!prompt) {
        return;
    }
    try {
        const { turn } = await a.turnBegin({ kind: "chat", prompt });
        void vscode.window.showInformationMessage(`turnback: turn ${turn} began; edit and save, then settle it from the session view.`);
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("beginning a turn", err));
    }
    rt.views.refresh();
}

async function newDirective(a: TurnbackApi): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.scheme !== "file") {
        void vscode.window.showInformationMessage("turnback: put the cursor on a line of a file first: the directive is anchored there.");
        return;
    }
    const request = await vscode.window.showInputBox({
        title: "New directive on this line", prompt: "What should the agent do here? (an attempt begins with Turnback: Begin Attempt)",
        validateInput: (v) => (v.trim() ? undefined : "A request, please."),
    });
    if (!request) {
        return;
    }
    try {
        const d = await a.directiveUpsert(newDirectiveParams(editor.document.uri.toString(), editor.selection.active.line, request));
        void vscode.window.showInformationMessage(`turnback: directive ${directiveName(d)} on line ${d.anchor.line + 1}.`,
            "Begin Attempt").then((choice) => choice && vscode.commands.executeCommand(Commands.beginAttempt, { directiveId: d.id }));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("adding the directive", err));
    }
}

async function beginAttempt(a: TurnbackApi, arg?: unknown): Promise<void> {
    const d = (await directiveOf(a, arg)) ?? await pickDirective(false, "Begin an attempt at which directive?");
    if (!d) {
        return;
    }
    try {
        const { turn } = await a.turnBegin(beginAttemptParams(d));
        void vscode.window.showInformationMessage(beganMessage(d, turn));
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("beginning the attempt", err));
    }
    rt.views.refresh();
}

async function editDirectiveRequest(a: TurnbackApi, arg?: unknown): Promise<void> {
    const d = await directiveOf(a, arg);
    if (!d) {
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

async function showRecovery(a: TurnbackApi): Promise<void> {
    try {
        const outcome = await recoveryFlow(a, {
            pick: (items) => Promise.resolve(vscode.window.showQuickPick(items, {
                title: "turnback: recovery records, what a rewind or redo could not put back",
                matchOnDescription: true,
                matchOnDetail: true,
            })),
            confirm: (c) => flowUi().confirm(c),
        }, { root: workspaceRoot() });
        log(`turnback: ${outcome.message}`);
        if (outcome.status === "failed") {
            void vscode.window.showErrorMessage(outcome.message, "Show Output").then((choice) => choice && rt.output.show());
        } else if (outcome.status !== "cancelled") {
            void vscode.window.showInformationMessage(outcome.message);
        }
    } catch (err) {
        void vscode.window.showErrorMessage(failureMessage("recovery", err));
    }
    await vscode.commands.executeCommand(Commands.refreshSession);
}

async function showGaps(): Promise<void> {
    const items = gapPicks(rt.state.status, workspaceRoot());
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

function openSession(sessionId?: string): void {
    if (!sessionId) {
        return;
    }
    void rt.api?.sessionInfo().then((info) => {
        rt.viewing = info.sessionId === sessionId ? undefined : sessionId;
        void vscode.commands.executeCommand("setContext", "turnback.viewingOther", rt.viewing !== undefined);
        rt.views.refresh();
    });
}

function showLiveSession(): void {
    rt.viewing = undefined;
    void vscode.commands.executeCommand("setContext", "turnback.viewingOther", false);
    rt.views.refresh();
}

/** Every command but the server's own (start, restart, output), which extension.ts registers. */
/** "Install Agent Hooks…" (the welcome's button): which agent, then its install command with the
 *  server's own program, whole, to copy or run in a terminal of this folder. */
async function installHooks(agent?: string): Promise<void> {
    const server = rt.server;
    if (!server) {
        void vscode.window.showWarningMessage("turnback: the server is not running, so its program is not known yet.", "Show Output")
            .then((choice) => choice && rt.output.show());
        return;
    }
    const id = typeof agent === "string" ? agent : (await vscode.window.showQuickPick(
        HOOK_AGENTS.map((a) => ({ label: a.name, description: a.id, id: a.id })),
        { title: "turnback: install the hooks of which agent, in this folder?" }))?.id;
    if (!id) {
        return;
    }
    const name = HOOK_AGENTS.find((a) => a.id === id)?.name ?? id;
    await offerCommand(`Run this once in this folder: ${name}'s hooks then tell turnback each prompt and file write.`,
        hooksInstallLine(server, id));
    rt.views.refreshSoon();
}

/** A command that needs the server: it gets the api, once the one guard below has let it run. */
type ApiCommand = (a: TurnbackApi, ...args: any[]) => Promise<unknown> | void;

/** The one guard of every command that needs the server: while it is not running, the command
 *  says so (with the output a click away) and does nothing. */
function withApi(fn: ApiCommand): (...args: any[]) => unknown {
    return (...args: any[]) => {
        const a = requireApi();
        return a ? fn(a, ...args) : undefined;
    };
}

export function registerCommands(): vscode.Disposable[] {
    const table: [string, (...args: any[]) => unknown][] = [
        [Commands.rewindAtResponse, withApi(rewindAtResponse)],
        [Commands.rewindToPrompt, withApi(rewindToPrompt)],
        [Commands.rewindBeforeDirective, withApi(rewindBeforeDirective)],
        [Commands.redo, withApi(redo)],
        [Commands.restoreFile, withApi(restoreFile)],
        [Commands.showGaps, showGaps],
        [Commands.showRecovery, withApi(showRecovery)],
        [Commands.forkAtResponse, withApi(forkAtResponse)],
        [Commands.editDirectiveRequest, withApi(editDirectiveRequest)],
        [Commands.showDiff, withApi(showDiff)],
        [Commands.showTurnDiff, withApi(showTurnDiff)],
        [Commands.settleTurn, withApi((a, arg?: unknown) => endTurn(a, "settled", arg))],
        [Commands.cancelTurn, withApi((a, arg?: unknown) => endTurn(a, "cancelled", arg))],
        [Commands.beginTurn, withApi(beginTurn)],
        [Commands.newDirective, withApi(newDirective)],
        [Commands.beginAttempt, withApi(beginAttempt)],
        [Commands.openSession, openSession],  // quiet while the server is not running
        [Commands.showLiveSession, showLiveSession],
        [Commands.installHooks, installHooks],
    ];
    return table.map(([id, fn]) => vscode.commands.registerCommand(id, fn));
}
