// Presentation: contract values → the texts the extension shows (confirmation dialogs, quick picks,
// status bar, CodeLens titles, tree labels). Pure functions, no `vscode` import.

import type {
    Boundary,
    Candidate,
    Directive,
    FilePlan,
    Gap,
    RedoGroup,
    RedoPlan,
    RewindMode,
    Status,
    StepWords,
} from "./protocol";

import { describeBoundary, displayPath, firstLine, gapLine, plural, quote, userEditWords } from "./text";

export * from "./text";
export * from "./picks";
export * from "./tree";

/** The seven buckets by their people's names (docs/effects.md, "In words"), in the order shown:
 *  for an older server only; a current one says them in `effectWords` (tests/test_words.py). */
export const EFFECT_LABELS: [string, string][] = [
    ["restored", "Put back by this rewind"],
    ["droppedBeforeCrossing", "Held back and never sent: dropped"],
    ["crossedUncompensated", "Already left this machine; nothing undoes them"],
    ["crossedCompensated", "Left this machine; a later step makes up for them (not re-run)"],
    ["wouldCrossOnRewind", "Not undone: undoing them would itself leave this machine"],
    ["unrestored", "Changed this machine in a way the rewind cannot put back"],
    ["provablyEmpty", "Changed nothing"],
];

/** What keeping the user's edits does to one file (its `merge`), in words. */
export function keepWords(f: FilePlan): string {
    const m = f.merge;
    if (!m) {
        return "left as it is now";
    }
    const turns = m.alsoChangedBy ?? [];
    const by = `${turns.length === 1 ? "turn" : "turns"} ${turns.join(", ")}`;
    switch (m.result) {
        case "yours":
            return "stays as you left it";
        case "merged":
            return `your edit is carried onto the restored file (${by} changed it too)`;
        case "conflict":
            return `a conflict with ${by}: left as it is now (or with conflict markers)`;
        case "binary":
            return "not a text file: kept whole, as it is now";
        default:
            return `kept as it is now (${m.detail ?? "it cannot be merged"})`;
    }
}

function fileLine(f: FilePlan, root?: string): string {
    const p = displayPath(f, root);
    const action = f.action === "restore" ? (f.from === "absent" || f.from == null ? "recreate" : "restore")
        : f.action === "kept" ? "keep" : f.action;
    const ext = f.externalChange ? "  ⚠ changed outside turnback since the last capture: that edit will be overwritten" : "";
    const mine = f.userEdit && !f.externalChange ? `  ✎ your edit (${userEditWords(f.userEditBy)})` : "";
    const pushed = f.pushed ? `  ⇡ committed and pushed to ${f.pushed}: this change has left the machine` : "";
    return `  ${action.padEnd(9)}${p}${ext}${mine}${pushed}`;
}

/** The files of a plan whose change is the user's own (made by no discarded turn). */
export function userEditFiles(files: FilePlan[]): FilePlan[] {
    return files.filter((f) => f.userEdit && f.action !== "unchanged");
}

/** The button that commits and keeps the user's own edits (merged onto the restored files). */
export const KEEP_MY_EDITS = {
    rewind: "Rewind, Keep My Edits", redo: "Redo, Keep My Edits", fork: "Fork Here, Keep My Edits",
    restore: "Restore, Keep My Edits",
} as const;

/** The button that keeps the user's edits and writes conflict markers where they conflict. */
export const KEEP_WITH_MARKERS = "Keep My Edits, Mark Conflicts";

const VERB = { rewind: "Rewind", redo: "Redo", fork: "Fork Here", restore: "Restore" } as const;

export function hasConflicts(files: FilePlan[]): boolean {
    return userEditFiles(files).some((f) => f.merge?.result === "conflict");
}

export function userEditSection(files: FilePlan[], operation: keyof typeof KEEP_MY_EDITS, root?: string): string[] {
    const mine = userEditFiles(files);
    if (!mine.length) {
        return [];
    }
    const verb = VERB[operation];
    const out = ["", `Your own edits, made by no discarded turn (${mine.length}): ${mine.map((f) => displayPath(f, root)).join(", ")}.`];
    if (mine.some((f) => f.merge)) {
        out.push(`“${verb}” undoes them too; “${KEEP_MY_EDITS[operation]}” keeps them:`);
        for (const f of mine) {
            out.push(`  ${displayPath(f, root)}: ${keepWords(f)}`);
        }
        if (hasConflicts(files)) {
            out.push(`“${KEEP_WITH_MARKERS}” writes the conflicting ${mine.filter((f) => f.merge?.result === "conflict").length === 1 ? "file" : "files"} with conflict markers where the changes meet.`);
        }
    } else {
        out.push(`“${verb}” undoes them too; “${KEEP_MY_EDITS[operation]}” leaves ${mine.length === 1 ? "that file" : "those files"} as ${mine.length === 1 ? "it is" : "they are"} now.`);
    }
    return out;
}

/**
 * The buckets that hold a step, by their people's names, each step by what it did (`steps`, the
 * candidate's steps in words; an older server's candidate has ids only), then any bucket this
 * client does not know.
 */
export function effectLines(effects: Partial<Record<string, string[]>> | undefined, steps?: StepWords[],
    words?: Partial<Record<string, string>>): string[] {
    const e = effects ?? {};
    const what = new Map((steps ?? []).map((x) => [x.id, x]));
    const name = (id: string) => {
        const x = what.get(id);
        return x ? `${firstLine(x.what, 90)}${x.turn ? ` (turn ${x.turn})` : ""}` : `step ${id}`;
    };
    const out: string[] = [];
    const buckets = [...EFFECT_LABELS, ...Object.keys(e).filter((k) => !EFFECT_LABELS.some(([x]) => x === k)).map((k) => [k, k] as [string, string])];
    for (const [key, label] of buckets) {
        const ids = e[key] ?? [];
        if (ids.length) {
            out.push(`  ${words?.[key] ?? label}:`);
            for (const id of ids) {
                out.push(`    ${name(id)}`);
            }
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

/** The buttons that show a rewind in another mode. */
export const MODE_BUTTONS = {
    files: "Files Only…", conversation: "Conversation Only…", all: "Files and Conversation…",
} as const;

export function modeOfButton(label: string | undefined): RewindMode | undefined {
    for (const [mode, text] of Object.entries(MODE_BUTTONS)) {
        if (text === label) {
            return mode as RewindMode;
        }
    }
    return undefined;
}

function modeTitle(c: Candidate, where: string, keepN: number, discardN: number): string {
    if (c.operation === "restore") {
        const paths = (c.files ?? []).filter((f) => f.action !== "unchanged").map((f) => f.path ?? displayPath(f));
        return `Restore ${paths.length ? paths.join(", ") : "the files"} ${restoreWhere(c.boundary)}? The conversation stays.`;
    }
    if (c.mode === "files") {
        return `Rewind the files only ${where}: every turn stays?`;
    }
    if (c.mode === "conversation") {
        return `Rewind the conversation only ${where}: discard ${plural(discardN, "turn")}, every file stays?`;
    }
    return `Rewind${where ? " " + where : ""}: keep ${plural(keepN, "turn")}, discard ${plural(discardN, "turn")}?`;
}

export function restoreWhere(b: Boundary | undefined): string {
    if (!b) {
        return "";
    }
    return b.kind === "afterResponse" ? `to how it was after turn ${b.turn}` : `to how it was before turn ${b.turn}`;
}

/** Candidate → the confirmation (`showWarningMessage(title, {modal, detail}, action, …)`).
 *  `names` names directives by their request (id → request). */
export function renderCandidate(c: Candidate, opts: { root?: string; stale?: boolean; names?: Record<string, string> } = {}): Confirmation {
    const root = opts.root;
    const discardN = c.discard?.turnCount ?? 0;
    const keepN = c.keep?.turnCount ?? 0;
    const where = describeBoundary(c.boundary);
    const restore = c.operation === "restore";
    const title = (opts.stale ? "The session changed; here is the fresh plan. " : "") + modeTitle(c, where, keepN, discardN);
    const lines: string[] = [];
    if (restore || c.mode === "files") {
        lines.push(`The conversation: every turn stays (${plural(keepN, "turn")}).`);
    } else {
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
    }
    if (c.mode === "conversation") {
        lines.push("", `Files: every file stays as it is now (${plural((c.files ?? []).length, "file")} the discarded turns changed are kept).`);
    } else {
        lines.push("");
        lines.push(...fileSection(c.files ?? [], root));
        lines.push(...userEditSection(c.files ?? [], restore ? "restore" : "rewind", root));
    }
    lines.push("");
    lines.push(...gapSection(c.gaps ?? [], root));
    const effects = effectLines(c.effects, c.steps, c.effectWords);
    lines.push("");
    lines.push(effects.length ? (c.mode === "files" ? "What the later turns' steps did (they stay; their files go back):" : "What the discarded steps did:")
        : "Effects: no step to account for.");
    lines.push(...effects);
    if (c.directives?.length) {
        lines.push("");
        lines.push("Directives:");
        for (const d of c.directives) {
            const name = opts.names?.[d.id];
            lines.push(`  ${name ? quote(name) : `directive ${d.id}`}: ${plural(d.attemptsDiscarded, "attempt")} discarded, then ${d.stateAfter}`);
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
    const files = c.files ?? [];
    const edits = c.mode !== "conversation" && userEditFiles(files).length > 0;
    const alternative = edits ? KEEP_MY_EDITS[restore ? "restore" : "rewind"] : undefined;
    const more: string[] = [];
    if (edits && hasConflicts(files)) {
        more.push(KEEP_WITH_MARKERS);
    }
    if (!restore) {
        more.push(...(["files", "conversation", "all"] as const).filter((m) => m !== (c.mode ?? "all")).map((m) => MODE_BUTTONS[m]));
    }
    return { title, detail: lines.join("\n"), action: restore ? "Restore" : "Rewind", ...(alternative ? { alternative } : {}),
        ...(more.length ? { more } : {}) };
}

/** Redo plan → the modal confirmation. */
export function renderRedoPlan(p: RedoPlan, group?: RedoGroup, opts: { root?: string; stale?: boolean } = {}): Confirmation {
    const title = (opts.stale ? "The session changed; here is the fresh plan. " : "") +
        `Redo: bring back ${plural(p.turnCount, "turn")}?`;
    const lines: string[] = [];
    if (group?.lastPrompt) {
        lines.push(`Brings back: ${plural(group.turnCount, "turn")}, the last one ${quote(group.lastPrompt)}.`);
        lines.push("");
    }
    lines.push(...fileSection(p.files ?? [], opts.root));
    lines.push(...userEditSection(p.files ?? [], "redo", opts.root));
    lines.push("");
    lines.push(...gapSection(p.gaps ?? [], opts.root));
    // Not the server's summary ("Would bring back head 3: 3 turn(s), last prompt …"): its head number
    // is the command line's (`redo --head`), and the rest says again what the lines above say.
    lines.push("", "Directive records stay as they are now; no step is run again.");
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
        tip.push("Clearing out old history in the background…");
    }
    if (status.recovery > 0) {
        tip.push(`${plural(status.recovery, "recovery record")} waiting: a rewind or redo could not put everything back. Click to review.`);
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
    chooseServer: "turnback.chooseServer",
    installHooks: "turnback.installHooks",
    showRecovery: "turnback.showRecovery",
    forkAtResponse: "turnback.forkAtResponse",
    restoreFile: "turnback.restoreFile",
    showDiff: "turnback.showDiff",
    showTurnDiff: "turnback.showTurnDiff",
    settleTurn: "turnback.settleTurn",
    cancelTurn: "turnback.cancelTurn",
    beginTurn: "turnback.beginTurn",
    newDirective: "turnback.newDirective",
    beginAttempt: "turnback.beginAttempt",
    openSession: "turnback.openSession",
    showLiveSession: "turnback.showLiveSession",
    refreshDirectives: "turnback.refreshDirectives",
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
        tooltip: `Directive ${quote(d.request, 200)}`,
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
    if (d.state !== "running") {
        lenses.push({
            title: "$(play) Begin attempt",
            tooltip: `Begin a directive turn for ${quote(d.request)}: your agent's hooks join it`,
            command: Commands.beginAttempt,
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

