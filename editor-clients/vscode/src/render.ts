// Presentation: contract values → the texts the extension shows (confirmation dialogs, quick picks,
// status bar, CodeLens titles, tree labels). Pure functions, no `vscode` import.

import type {
    Boundary,
    Candidate,
    Directive,
    FilePlan,
    Gap,
    LogTurn,
    RedoGroup,
    RedoList,
    RedoPlan,
    SessionLog,
    Status,
    TurnFile,
} from "./protocol";

// ---------------------------------------------------------------------------------------------
// Small helpers

export function plural(n: number, one: string, many = one + "s"): string {
    return `${n} ${n === 1 ? one : many}`;
}

/** The first line of `text`, trimmed and cut to `max` characters with an ellipsis. */
export function firstLine(text: string | null | undefined, max = 80): string {
    const line = (text ?? "").split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? "";
    return line.length > max ? line.slice(0, max - 1) + "…" : line;
}

export function quote(text: string | null | undefined, max = 60): string {
    return `“${firstLine(text, max)}”`;
}

/** A workspace-relative path for a file URI (uses `path` when the server sent it). */
export function displayPath(item: { uri?: string | null; path?: string | null }, root?: string): string {
    if (item.path) {
        return item.path;
    }
    const uri = item.uri ?? "";
    if (!uri) {
        return "(no file)";
    }
    let p = uri;
    if (uri.startsWith("file://")) {
        try {
            p = decodeURIComponent(new URL(uri).pathname);
        } catch {
            p = uri.slice("file://".length);
        }
        if (/^\/[A-Za-z]:/.test(p)) {
            p = p.slice(1);
        }
    }
    if (root) {
        const r = root.replace(/[\\/]+$/, "");
        const norm = p.replace(/\\/g, "/");
        const rn = r.replace(/\\/g, "/");
        if (norm.toLowerCase().startsWith(rn.toLowerCase() + "/")) {
            return norm.slice(rn.length + 1);
        }
    }
    return p;
}

const GAP_REASONS: Record<string, string> = {
    "unknown-before-image": "its state before the turn was never captured",
    "too-large": "too large to capture",
    unreadable: "could not be read",
    "outside-workspace": "outside the workspace",
    symlink: "a symbolic link (not followed)",
    "step-scope-unknown": "a step did not say what it touched",
    "git-head-and-index": "git HEAD and index are not restored",
    "not-a-file": "not a regular file",
    "not-in-head": "its image is missing from the saved state",
    "git-internal": "inside a .git folder (git's own files are never restored)",
    "not-a-folder": "something other than a folder is where a folder was",
    "folder-not-empty": "a folder that holds uncaptured files: it stays, with them",
    "submodule-uninitialised": "a submodule left uninitialised (the parent never checked it out)",
};

export function gapReasonText(reason: string): string {
    return GAP_REASONS[reason] ?? reason;
}

/** One line per gap: `path — reason (turn N): detail`. */
export function gapLine(gap: Gap, root?: string): string {
    const where = gap.uri || gap.path ? displayPath(gap, root) : "(session)";
    const turn = typeof gap.turn === "number" ? ` (turn ${gap.turn})` : "";
    const detail = gap.detail ? `: ${gap.detail}` : "";
    return `${where} — ${gap.reason}, ${gapReasonText(gap.reason)}${turn}${detail}`;
}

// ---------------------------------------------------------------------------------------------
// Confirmation

export const EFFECT_LABELS: [string, string][] = [
    ["restored", "Undone by their inverse"],
    ["droppedBeforeCrossing", "Held, dropped before they left this machine"],
    ["crossedUncompensated", "Already left this machine and stay done"],
    ["crossedCompensated", "Already left this machine, compensated later"],
    ["wouldCrossOnRewind", "Would leave this machine if undone (not run)"],
    ["unrestored", "Not undone (no inverse)"],
    ["provablyEmpty", "Had no effect"],
];

export function describeBoundary(b: Boundary | undefined): string {
    if (!b) {
        return "";
    }
    switch (b.kind) {
        case "afterResponse":
            return `at the response of turn ${b.turn}`;
        case "beforePrompt":
            return `to before prompt ${b.turn}`;
        case "beforeDirectiveAttempt":
            return `to before the attempt of turn ${b.turn} at directive ${b.directiveId}`;
    }
}

function fileLine(f: FilePlan, root?: string): string {
    const p = displayPath(f, root);
    const action = f.action === "restore" ? (f.from === "absent" || f.from == null ? "recreate" : "restore") : f.action;
    const ext = f.externalChange ? "  ⚠ changed outside turnback since the last capture: that edit will be overwritten" : "";
    const mine = f.userEdit && !f.externalChange ? `  ✎ your edit (${userEditWords(f.userEditBy)})` : "";
    return `  ${action.padEnd(9)}${p}${ext}${mine}`;
}

const USER_EDIT_WORDS: Record<string, string> = {
    "editor-save": "saved in the editor",
    "disk-change": "changed on disk",
    "capture-request": "captured between turns",
    uncaptured: "changed on disk, not captured yet",
};

export function userEditWords(by: string | undefined): string {
    return (by && USER_EDIT_WORDS[by]) || "not made by a discarded turn";
}

/** The files of a plan whose change is the user's own (made by no discarded turn). */
export function userEditFiles(files: FilePlan[]): FilePlan[] {
    return files.filter((f) => f.userEdit && f.action !== "unchanged");
}

/** The button that commits but leaves the user's own edits as they are now. */
export const KEEP_MY_EDITS = {
    rewind: "Rewind, Keep My Edits", redo: "Redo, Keep My Edits", fork: "Fork Here, Keep My Edits",
} as const;

const VERB = { rewind: "Rewind", redo: "Redo", fork: "Fork Here" } as const;

export function userEditSection(files: FilePlan[], operation: keyof typeof KEEP_MY_EDITS, root?: string): string[] {
    const mine = userEditFiles(files);
    if (!mine.length) {
        return [];
    }
    const verb = VERB[operation];
    return ["", `Your own edits, made by no discarded turn (${mine.length}): ${mine.map((f) => displayPath(f, root)).join(", ")}.`,
        `“${verb}” undoes them too; “${KEEP_MY_EDITS[operation]}” leaves ${mine.length === 1 ? "that file" : "those files"} as ${mine.length === 1 ? "it is" : "they are"} now.`];
}

/** One line per non-empty bucket of the seven, then any bucket this client does not know. */
export function effectLines(effects: Partial<Record<string, string[]>> | undefined): string[] {
    const e = effects ?? {};
    const out: string[] = [];
    for (const [key, label] of EFFECT_LABELS) {
        const ids = e[key] ?? [];
        if (ids.length) {
            out.push(`  ${label}: ${ids.join(", ")}`);
        }
    }
    for (const key of Object.keys(e)) {
        if (!EFFECT_LABELS.some(([k]) => k === key) && (e[key] ?? []).length) {
            out.push(`  ${key}: ${(e[key] ?? []).join(", ")}`);
        }
    }
    return out;
}

export function fileSection(files: FilePlan[], root?: string): string[] {
    const moving = files.filter((f) => f.action !== "unchanged");
    const out: string[] = [];
    if (moving.length === 0) {
        out.push("Files: none change.");
    } else {
        const restore = moving.filter((f) => f.action === "restore").length;
        const del = moving.filter((f) => f.action === "delete").length;
        const parts = [];
        if (restore) {
            parts.push(`${restore} restored`);
        }
        if (del) {
            parts.push(`${del} deleted`);
        }
        const other = moving.length - restore - del;
        if (other) {
            parts.push(`${other} other`);
        }
        out.push(`Files (${parts.join(", ")}):`);
        for (const f of moving) {
            out.push(fileLine(f, root));
        }
    }
    const external = files.filter((f) => f.externalChange);
    if (external.length) {
        out.push(`⚠ ${plural(external.length, "file")} changed outside turnback; the rewind overwrites ${external.length === 1 ? "that change" : "those changes"}.`);
    }
    return out;
}

export function gapSection(gaps: Gap[], root?: string): string[] {
    if (!gaps.length) {
        return ["Gaps: none, everything in range was captured."];
    }
    return [`Gaps, what cannot be put back (${gaps.length}):`, ...gaps.map((g) => "  " + gapLine(g, root))];
}

export interface Confirmation {
    /** The modal message (one line). */
    title: string;
    /** The modal `detail`: both sides of the boundary, files, gaps, effects. */
    detail: string;
    /** The button that commits. */
    action: string;
    /** A second way to commit (for example keeping the user's own edits), when there is one. */
    alternative?: string;
    /** Further ways to commit, after the alternative (a fork kept in place with the user's edits). */
    more?: string[];
}

/** Candidate → the modal confirmation (`showWarningMessage(title, {modal, detail}, action)`). */
export function renderCandidate(c: Candidate, opts: { root?: string; stale?: boolean } = {}): Confirmation {
    const root = opts.root;
    const discardN = c.discard?.turnCount ?? 0;
    const keepN = c.keep?.turnCount ?? 0;
    const where = describeBoundary(c.boundary);
    const title = (opts.stale ? "The session changed; here is the fresh plan. " : "") +
        `Rewind${where ? " " + where : ""}: keep ${plural(keepN, "turn")}, discard ${plural(discardN, "turn")}?`;
    const lines: string[] = [];
    if (keepN > 0 && c.keep.last) {
        lines.push(`Keeps: ${keepN === 1 ? "turn 1" : `turns 1–${keepN}`}, ending with turn ${c.keep.last.turn} ${quote(c.keep.last.prompt)}.`);
    } else {
        lines.push("Keeps: nothing, the session starts empty.");
    }
    if (discardN > 0 && c.discard.first) {
        lines.push(`Discards: ${plural(discardN, "turn")} from turn ${c.discard.first.turn} ${quote(c.discard.first.prompt)} on, with their answers.`);
    } else {
        lines.push("Discards: no turn.");
    }
    lines.push("");
    lines.push(...fileSection(c.files ?? [], root));
    lines.push(...userEditSection(c.files ?? [], "rewind", root));
    lines.push("");
    lines.push(...gapSection(c.gaps ?? [], root));
    const effects = effectLines(c.effects);
    lines.push("");
    lines.push(effects.length ? "Effects of the discarded steps:" : "Effects: no step to account for.");
    lines.push(...effects);
    if (c.directives?.length) {
        lines.push("");
        lines.push("Directives:");
        for (const d of c.directives) {
            lines.push(`  ${d.id}: ${plural(d.attemptsDiscarded, "attempt")} discarded, then ${d.stateAfter}`);
        }
    }
    const wf = c.workflowCleared;
    if (wf && wf.tasks + wf.goals + wf.agents + wf.handoffs > 0) {
        const parts = ([["tasks", "task"], ["goals", "goal"], ["agents", "agent"], ["handoffs", "handoff"]] as const)
            .filter(([k]) => wf[k] > 0)
            .map(([k, one]) => plural(wf[k], one));
        lines.push("");
        lines.push(`Workflow cleared: ${parts.join(", ")}.`);
    }
    if (c.summary) {
        lines.push("");
        lines.push(c.summary);
    }
    const alternative = userEditFiles(c.files ?? []).length ? KEEP_MY_EDITS.rewind : undefined;
    return { title, detail: lines.join("\n"), action: "Rewind", ...(alternative ? { alternative } : {}) };
}

/** Redo plan → the modal confirmation. */
export function renderRedoPlan(p: RedoPlan, group?: RedoGroup, opts: { root?: string; stale?: boolean } = {}): Confirmation {
    const head = p.headSeq ?? group?.headSeq;
    const title = (opts.stale ? "The session changed; here is the fresh plan. " : "") +
        `Redo: bring back ${plural(p.turnCount, "turn")}${head != null ? ` (head ${head})` : ""}?`;
    const lines: string[] = [];
    if (group?.lastPrompt) {
        lines.push(`Brings back: ${plural(group.turnCount, "turn")}, the last one ${quote(group.lastPrompt)}.`);
        lines.push("");
    }
    lines.push(...fileSection(p.files ?? [], opts.root));
    lines.push(...userEditSection(p.files ?? [], "redo", opts.root));
    lines.push("");
    lines.push(...gapSection(p.gaps ?? [], opts.root));
    if (p.summary) {
        lines.push("");
        lines.push(p.summary);
    }
    const alternative = userEditFiles(p.files ?? []).length ? KEEP_MY_EDITS.redo : undefined;
    return { title, detail: lines.join("\n"), action: "Redo", ...(alternative ? { alternative } : {}) };
}

/** True when the confirmation detail lists the workspace-relative path `rel` as a file line. */
export function mentionsPath(detail: string, rel: string): boolean {
    const escaped = rel.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return new RegExp(`^  \\S+\\s+${escaped}(\\s|$)`, "m").test(detail);
}

/**
 * The detail as the modal dialog shows it. The dialog collapses leading spaces, so the indented
 * lines (files, gaps, effects) lost their shape there; they start with a bullet instead (a deeper
 * indent with a hollow one). The output channel keeps the plain text.
 */
export function dialogDetail(detail: string): string {
    return detail.replace(/^( {2,})(?=\S)/gm, (spaces) => (spaces.length >= 4 ? "◦ " : "• "));
}

/** Plain text of a confirmation (for logs, docs and the output channel). */
export function confirmationText(c: Confirmation): string {
    const alt = [c.alternative, ...(c.more ?? [])].filter(Boolean).map((b) => `  [ ${b} ]`).join("");
    return `${c.title}\n\n${c.detail}\n\n[ ${c.action} ]${alt}  [ Cancel ]`;
}

// ---------------------------------------------------------------------------------------------
// Quick picks

export interface BoundaryPick {
    label: string;
    description?: string;
    detail?: string;
    turn: number;
    boundary: Boundary;
}

function newestFirst(log: SessionLog): LogTurn[] {
    return [...(log.turns ?? [])].sort((a, b) => b.turn - a.turn);
}

/** Responses, newest first; picking one keeps that turn and its answer. */
export function responsePicks(log: SessionLog): BoundaryPick[] {
    return newestFirst(log).map((t) => ({
        label: `$(comment) Turn ${t.turn}: ${firstLine(t.response) || "(no answer)"}`,
        description: `${t.state}${t.files?.length ? ` · ${plural(t.files.length, "file")}` : ""}`,
        detail: `after ${quote(t.prompt)}`,
        turn: t.turn,
        boundary: { kind: "afterResponse", turn: t.turn },
    }));
}

/** Prompts, newest first; picking one discards that prompt and everything after it. */
export function promptPicks(log: SessionLog): BoundaryPick[] {
    return newestFirst(log).map((t) => ({
        label: `$(account) Turn ${t.turn}: ${firstLine(t.prompt) || "(empty prompt)"}`,
        description: `${t.kind === "directive" ? "directive · " : ""}${t.state}`,
        detail: t.turn === 1 ? "discards the whole session" : `discards turns ${t.turn}–${Math.max(...log.turns.map((x) => x.turn))}`,
        turn: t.turn,
        boundary: { kind: "beforePrompt", turn: t.turn },
    }));
}

export interface RedoPick {
    label: string;
    description?: string;
    detail?: string;
    headSeq: number;
}

export function formatTime(epochSeconds: number | undefined): string {
    if (!epochSeconds) {
        return "";
    }
    const d = new Date(epochSeconds * 1000);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Redo groups, as the server lists them (newest first). */
export function redoPicks(list: RedoList): RedoPick[] {
    return (list.groups ?? []).map((g) => ({
        label: `$(redo) ${plural(g.turnCount, "turn")}: ${firstLine(g.lastPrompt) || "(empty session)"}`,
        description: `head ${g.headSeq}`,
        detail: formatTime(g.created) ? `published ${formatTime(g.created)}` : undefined,
        headSeq: g.headSeq,
    }));
}

/** Why Redo is not offered (plain file stores), or undefined when it is. */
export function redoUnavailableMessage(list: RedoList): string | undefined {
    if (list.available && list.groups?.length) {
        return undefined;
    }
    if (!list.available) {
        return `Redo is not available${list.reason ? `: ${list.reason}` : ""}. ` +
            "It needs the heads store (set turnback.store.kind to \"heads\").";
    }
    return "Nothing to redo: no earlier head of this session differs from the current one.";
}

export interface GapPick {
    label: string;
    description?: string;
    detail?: string;
    uri: string | null;
}

export function gapPicks(status: Status | undefined, root?: string): GapPick[] {
    return (status?.gaps ?? []).map((g) => ({
        label: `$(warning) ${g.uri || g.path ? displayPath(g, root) : "(session)"}`,
        description: g.reason + (typeof g.turn === "number" ? ` · turn ${g.turn}` : ""),
        detail: g.detail ? `${gapReasonText(g.reason)}: ${g.detail}` : gapReasonText(g.reason),
        uri: g.uri ?? null,
    }));
}

// ---------------------------------------------------------------------------------------------
// Status bar

export interface StatusBarView {
    text: string;
    tooltip: string;
    /** Use the warning background. */
    warning: boolean;
    /** What a click opens: pending recovery records come first, they are what needs the user. */
    opens: "gaps" | "recovery";
}

export function renderStatus(status: Status | undefined, opts: { root?: string; maxTooltipGaps?: number } = {}): StatusBarView {
    if (!status) {
        return { text: "$(history) turnback", tooltip: "turnback: starting…", warning: false, opens: "gaps" };
    }
    const n = status.liveGaps ?? status.gaps?.length ?? 0;
    const extras: string[] = [];
    if (status.ownership === "observer") {
        extras.push("$(eye)");
    }
    if (status.collecting) {
        extras.push("$(sync~spin)");
    }
    if (status.recovery > 0) {
        extras.push(`$(alert) ${status.recovery}`);
    }
    const main = n > 0 ? `$(warning) turnback: ${plural(n, "gap")}` : "$(history) turnback";
    const text = [main, ...extras].join(" ");
    const tip: string[] = [];
    if (n > 0) {
        tip.push(`turnback cannot put back ${n === 1 ? "one thing" : `${n} things`} if you rewind now:`);
        const max = opts.maxTooltipGaps ?? 20;
        for (const g of (status.gaps ?? []).slice(0, max)) {
            tip.push("• " + gapLine(g, opts.root));
        }
        if ((status.gaps ?? []).length > max) {
            tip.push(`…and ${status.gaps.length - max} more`);
        }
        if (!(status.recovery > 0)) {
            tip.push("Click to show the gaps.");
        }
    } else {
        tip.push("turnback: every change is captured, no gap.");
    }
    if (status.ownership === "observer") {
        tip.push("Observer: another process owns this session's store; rewind and capture are off here.");
    }
    if (status.collecting) {
        tip.push("Collecting old heads…");
    }
    if (status.recovery > 0) {
        tip.push(`${plural(status.recovery, "recovery record")} waiting: a rewind or redo could not put everything back. Click to review.`);
    }
    if (status.headSeq != null) {
        tip.push(`Head ${status.headSeq}.`);
    }
    const recovery = status.recovery > 0;
    return { text, tooltip: tip.join("\n"), warning: n > 0 || recovery, opens: recovery ? "recovery" : "gaps" };
}

// ---------------------------------------------------------------------------------------------
// Directive CodeLenses

export interface LensSpec {
    title: string;
    tooltip?: string;
    /** A command id the extension registers, with its arguments; undefined for a label only. */
    command?: string;
    arguments?: unknown[];
}

const STATE_ICON: Record<string, string> = {
    draft: "$(edit)",
    ready: "$(circle-outline)",
    running: "$(loading~spin)",
    answered: "$(comment-discussion)",
    applied: "$(check)",
    detached: "$(debug-disconnect)",
};

export const Commands = {
    rewindAtResponse: "turnback.rewindAtResponse",
    rewindToPrompt: "turnback.rewindToPrompt",
    rewindBeforeDirective: "turnback.rewindBeforeDirective",
    redo: "turnback.redo",
    showGaps: "turnback.showGaps",
    editDirectiveRequest: "turnback.editDirectiveRequest",
    refreshSession: "turnback.refreshSession",
    showOutput: "turnback.showOutput",
    restartServer: "turnback.restartServer",
    showRecovery: "turnback.showRecovery",
    forkAtResponse: "turnback.forkAtResponse",
} as const;

/** The lenses shown above one directive's anchor: its state, then its actions. */
export function directiveLenses(d: Directive): LensSpec[] {
    const attempts = [...(d.attempts ?? [])].sort((a, b) => b.turn - a.turn);
    const subs = d.subdirectives ?? [];
    const consumed = subs.filter((s) => s.consumed).length;
    const bits = [`${STATE_ICON[d.state] ?? ""} turnback: ${d.state}`.trim()];
    if (attempts.length) {
        bits.push(plural(attempts.length, "attempt"));
    }
    if (subs.length) {
        bits.push(`${consumed}/${subs.length} subdirectives consumed`);
    }
    if (d.anchor && d.anchor.attached === false) {
        bits.push("anchor lost");
    }
    const lenses: LensSpec[] = [{
        title: bits.join(" · "),
        tooltip: `Directive ${d.id}: ${firstLine(d.request, 200)}`,
    }];
    for (const a of attempts.slice(0, 3)) {
        lenses.push({
            title: `$(debug-step-back) Rewind before attempt (turn ${a.turn})`,
            tooltip: `Discard the attempt made in turn ${a.turn} and every later turn` +
                (a.answer ? `; its answer was ${quote(a.answer)}` : ""),
            command: Commands.rewindBeforeDirective,
            arguments: [{ directiveId: d.id, turn: a.turn }],
        });
    }
    if (attempts.length > 3) {
        lenses.push({
            title: `…${attempts.length - 3} earlier`,
            command: Commands.rewindBeforeDirective,
            arguments: [{ directiveId: d.id }],
        });
    }
    lenses.push({
        title: "$(edit) Edit request",
        tooltip: firstLine(d.request, 200),
        command: Commands.editDirectiveRequest,
        arguments: [{ directiveId: d.id }],
    });
    return lenses;
}

export function directiveAttemptPicks(d: Directive): BoundaryPick[] {
    return [...(d.attempts ?? [])].sort((a, b) => b.turn - a.turn).map((a) => ({
        label: `$(debug-step-back) Turn ${a.turn}${a.answer ? `: ${firstLine(a.answer)}` : ""}`,
        description: a.feedback ? `feedback: ${firstLine(a.feedback, 40)}` : undefined,
        detail: `discards this attempt at ${quote(d.request)} and every later turn`,
        turn: a.turn,
        boundary: { kind: "beforeDirectiveAttempt", directiveId: d.id, turn: a.turn },
    }));
}

// ---------------------------------------------------------------------------------------------
// Session tree

export interface TreeNode {
    id: string;
    label: string;
    description?: string;
    tooltip?: string;
    contextValue: string;
    turn?: number;
    uri?: string;
    children?: TreeNode[];
    /** Show the children at once. */
    expanded?: boolean;
}

function fileDescription(f: TurnFile): string {
    if (f.before === "absent" || f.before == null) {
        return "created";
    }
    if (f.after === "absent" || f.after == null) {
        return "deleted";
    }
    return "modified";
}

/** Turns (newest first) with their files as children. */
export function sessionTree(log: SessionLog, root?: string): TreeNode[] {
    return newestFirst(log).map((t) => ({
        id: `turn:${t.turn}`,
        label: `Turn ${t.turn}: ${firstLine(t.prompt, 60) || "(empty prompt)"}`,
        description: [t.state !== "settled" ? t.state : "", t.gaps?.length ? `⚠ ${plural(t.gaps.length, "gap")}` : "",
            t.files?.length ? plural(t.files.length, "file") : ""].filter(Boolean).join(" · "),
        tooltip: [`Prompt: ${firstLine(t.prompt, 200)}`, `Answer: ${firstLine(t.response, 200) || "(none)"}`,
            `${plural(t.steps ?? 0, "step")}`, ...(t.gaps ?? []).map((g) => "⚠ " + gapLine(g, root))].join("\n"),
        contextValue: t.kind === "directive" ? "turnback.turn.directive" : "turnback.turn",
        turn: t.turn,
        children: (t.files ?? []).map((f) => ({
            id: `turn:${t.turn}:${f.uri}`,
            label: displayPath(f, root),
            description: fileDescription(f),
            tooltip: `${f.checkpoint}\nbefore ${f.before ?? "?"}\nafter ${f.after ?? "?"}`,
            contextValue: "turnback.file",
            turn: t.turn,
            uri: f.uri,
        })),
    }));
}
