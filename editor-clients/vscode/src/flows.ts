// The rewind and redo conversations (prepare → confirm → commit, with a stale commit re-shown), written
// against a tiny UI interface so the tests can answer the confirmation programmatically. No `vscode`.

import { errorCode, errorMessage } from "./protocol";
import type { Boundary, Candidate, CommitOptions, CommitResult, RedoCommitResult, RedoGroup, RedoPlan, RewindMode, TurnbackApi } from "./protocol";
import { displayPath, KEEP_WITH_MARKERS, modeOfButton, plural, quote, renderCandidate, renderRedoPlan, redoUnavailableMessage } from "./render";
import type { Confirmation } from "./render";
import { gapLine } from "./text";

export interface FlowUi {
    /**
     * Show the modal. Resolve true (or the label of `action`) to commit, the label of `alternative`
     * to commit that other way, false or undefined to cancel.
     */
    confirm(c: Confirmation): Promise<boolean | string | undefined>;
    /**
     * Run a commit while showing its `$/progress` (the extension: a notification); `work` gets the
     * token to send. Without it the commit simply runs.
     */
    during?<T>(title: string, work: (workDoneToken?: string) => Promise<T>): Promise<T>;
    info?(message: string): void;
    warn?(message: string): void;
}

export interface FlowOutcome {
    status: "committed" | "cancelled" | "rolled-back" | "unavailable" | "stale" | "error" | "nothing-to-do";
    message: string;
    /** Every confirmation shown, in order (a stale commit adds one). */
    shown: Confirmation[];
    result?: CommitResult | RedoCommitResult;
    /** The commit left the user's own edits as they were. */
    keptUserEdits?: boolean;
    /** The command that resumes the agent at the new point (`claude --resume …`), shown whole. */
    resumeCommand?: string;
}

const MAX_STALE_ROUNDS = 5;

/** What the person chose in a confirmation: commit, commit keeping their edits (with conflict
 *  markers), show the plan in another mode, or nothing. */
export type Choice = "commit" | "keep-user-edits" | "keep-with-markers" | "mode" | "cancel";

export function choiceOf(c: Confirmation, answer: boolean | string | undefined): Choice {
    if (answer === true || answer === c.action) {
        return "commit";
    }
    if (c.alternative !== undefined && answer === c.alternative) {
        return "keep-user-edits";
    }
    if (typeof answer === "string" && (c.more ?? []).includes(answer)) {
        if (answer === KEEP_WITH_MARKERS) {
            return "keep-with-markers";
        }
        if (modeOfButton(answer)) {
            return "mode";
        }
    }
    return "cancel";
}

/** What keeping the user's edits did, from a commit result, in words ("" when nothing). */
export function keptWords(result: { merged?: string[]; kept?: string[]; conflicts?: string[]; conflictMarkers?: string[] }, root?: string): string {
    const names = (uris: string[] | undefined) => (uris ?? []).map((u) => displayPath({ uri: u }, root)).join(", ");
    const conflicts = new Set(result.conflicts ?? []);
    const kept = (result.kept ?? []).filter((u) => !conflicts.has(u));
    const parts = [
        result.merged?.length ? `your edits merged onto ${names(result.merged)}` : "",
        result.conflictMarkers?.length ? `conflict markers written into ${names(result.conflictMarkers)}` : "",
        conflicts.size ? `${names([...conflicts])} left as ${conflicts.size === 1 ? "it is" : "they are"} (a conflict: resolve it by hand)` : "",
        kept.length ? `your edits to ${names(kept)} left as they were` : "",
    ].filter(Boolean);
    return parts.length ? ` ${parts.join("; ")}.` : " Your own edits were kept.";
}

/** Where a flow learns what the editor knows: the root, the unsaved documents. */
export interface FlowContext {
    root?: string;
    /** The file URIs the editor holds unsaved changes of (`dirty`: the server refuses to write them). */
    dirty?: () => string[];
}

/** Directive id → its request, to name the directives of a plan by their text. */
async function directiveNames(api: TurnbackApi, c: Candidate): Promise<Record<string, string>> {
    if (!c.directives?.length) {
        return {};
    }
    try {
        const { directives } = await api.directiveList();
        return Object.fromEntries(directives.map((d) => [d.id, d.request]));
    } catch {
        return {};
    }
}

function recoveryNote(result: { recovery?: unknown[] }): string {
    const n = result.recovery?.length ?? 0;
    return n ? ` ${n} recovery record(s) keep what could not be put back: see Turnback: Recovery….` : "";
}

/** After a committed rewind of a Claude Code session: what the message says of the agent. A command
 *  to resume it is not put in the sentence: it is offered whole beside it, with Copy and Run
 *  (`FlowOutcome.resumeCommand`, shown by offer.ts); without one, the server's note says why. */
export function agentResumeNote(result: { agentResume?: { command?: string | null; note?: string } }): string {
    const resume = result.agentResume;
    if (!resume) {
        return "";
    }
    if (resume.command) {
        return " Resume Claude Code at this point:";
    }
    return resume.note ? ` ${resume.note}` : "";
}

export function resumeOf(result: { agentResume?: { command?: string | null } }): { resumeCommand?: string } {
    const command = result.agentResume?.command;
    return command ? { resumeCommand: command } : {};
}

/** What a Redo brought back, in words (no head numbers): the turns and the last prompt. */
export function redoneWhat(group: { turnCount: number; lastPrompt?: string | null }): string {
    if (group.turnCount === 0) {
        return "the session is back as it was before its first turn";
    }
    return `the session is back with ${plural(group.turnCount, "turn")}` +
        (group.lastPrompt ? `, the last one ${quote(group.lastPrompt)}` : "");
}

/** A rolled-back commit in words: the server's own sentence when it sent one. */
export function rolledBackMessage(operation: "rewind" | "redo" | "fork", result: { message?: string; reason?: string; recovery?: unknown[] }): string {
    const n = result.recovery?.length ?? 0;
    const pointer = n ? " See Turnback: Recovery…." : "";
    if (result.message) {
        return result.message + pointer;
    }
    const why = result.reason ? ` (${result.reason.replace(/\.$/, "")})` : "";
    return n
        ? `The ${operation} was rolled back${why}, but ${n === 1 ? "a recovery record keeps" : `${n} recovery records keep`} what could not be put back.${pointer}`
        : `The ${operation} was rolled back${why}: every file is as it was and the session did not change.`;
}

export const NOTHING_TO_REWIND = "Nothing to rewind: the workspace and the session are already at that point.";
export const NOTHING_TO_REDO = "Nothing to redo: the workspace and the session are already in that state.";

async function commitWith<T>(ui: FlowUi, title: string, work: (opts: CommitOptions) => Promise<T>, keep: boolean): Promise<T> {
    const base: CommitOptions = keep ? { keepUserEdits: true } : {};
    if (!ui.during) {
        return work(base);
    }
    return ui.during(title, (workDoneToken) => work(workDoneToken ? { ...base, workDoneToken } : base));
}

export async function rewindFlow(api: TurnbackApi, boundary: Boundary, ui: FlowUi, opts: FlowContext & { mode?: RewindMode } = {}): Promise<FlowOutcome> {
    const shown: Confirmation[] = [];
    let mode: RewindMode = opts.mode ?? "all";
    const dirty = () => opts.dirty?.() ?? [];
    const prepare = () => api.rewindPrepare(boundary, { mode, dirty: dirty() });
    let candidate: Candidate = await prepare();
    let stale = false;
    for (let round = 0; round < MAX_STALE_ROUNDS + 4; round++) {
        if (candidate.noop) {
            return { status: "nothing-to-do", message: mode === "files" ? NOTHING_TO_RESTORE : NOTHING_TO_REWIND, shown };
        }
        const conf = renderCandidate({ ...candidate, boundary: candidate.boundary ?? boundary },
            { root: opts.root, stale, names: await directiveNames(api, candidate) });
        shown.push(conf);
        const answer = await ui.confirm(conf);
        const choice = choiceOf(conf, answer);
        if (choice === "cancel") {
            return { status: "cancelled", message: "Rewind cancelled.", shown };
        }
        if (choice === "mode") {  // the same boundary, shown for the files only or the conversation only
            mode = modeOfButton(answer as string) ?? "all";
            candidate = await prepare();
            stale = false;
            continue;
        }
        const keep = choice === "keep-user-edits" || choice === "keep-with-markers";
        const extras = commitExtras(choice, dirty(), mode);
        let result: CommitResult;
        try {
            result = await commitWith(ui, "turnback: rewinding", (o) => api.rewindCommit(boundary, candidate.planHash, { ...o, ...extras }), keep);
        } catch (err) {
            if (errorCode(err) === "stale-plan") {
                candidate = await prepare();
                stale = true;
                continue;
            }
            throw err;
        }
        if (result.status === "committed") {
            const what = mode === "files" ? `Rewound the files only: every turn stays`
                : mode === "conversation" ? `Rewound the conversation only: discarded ${candidate.discard.turnCount} turn(s), every file stays`
                    : `Rewound: kept ${candidate.keep.turnCount} turn(s), discarded ${candidate.discard.turnCount}`;
            return {
                status: "committed", shown, result, keptUserEdits: keep,
                message: what + "." + (keep ? keptWords(result, opts.root) : "") + recoveryNote(result) + agentResumeNote(result),
                ...resumeOf(result),
            };
        }
        if (result.status === "nothing-to-do") {
            return { status: "nothing-to-do", shown, result, message: NOTHING_TO_REWIND };
        }
        if (result.status === "stale") {
            candidate = result.candidate ?? (await prepare());
            stale = true;
            continue;
        }
        return { status: "rolled-back", shown, result, message: rolledBackMessage("rewind", result) };
    }
    return { status: "stale", shown, message: "The session kept changing; rewind abandoned." };
}

/** What a commit sends beyond the plan: only what is set (an older server sees what it knows). */
function commitExtras(choice: Choice, dirty: string[], mode: RewindMode = "all"): CommitOptions {
    return {
        ...(mode !== "all" ? { mode } : {}),
        ...(dirty.length ? { dirty } : {}),
        ...(choice === "keep-with-markers" ? { conflictMarkers: true } : {}),
    };
}

export const NOTHING_TO_RESTORE = "Nothing to restore: every file already is as it was there.";

/** Why a restore changes nothing: every file already is as it was, or gaps stand in the way (a
 *  folder where the file was, a file where its folder was: docs/rewind.md, "Restore"). Then the
 *  server's summary names them in its words; an older server's candidate, its gaps in ours. */
export function nothingRestored(candidate: Candidate | undefined, root?: string): string {
    const gaps = candidate?.gaps ?? [];
    if (!gaps.length) {
        return NOTHING_TO_RESTORE;
    }
    if (candidate?.summary?.startsWith("Nothing restored")) {
        return candidate.summary;
    }
    return `Nothing restored: ${plural(gaps.length, "path")} cannot be put back (` +
        gaps.map((g) => gapLine(g, root)).join("; ") + "). Every turn and the conversation stay.";
}

/** "Restore to Turn…": prepare → confirm → commit a restore of `paths` (the conversation stays). */
export async function restoreFlow(api: TurnbackApi, paths: string[], boundary: Boundary, ui: FlowUi, opts: FlowContext = {}): Promise<FlowOutcome> {
    const shown: Confirmation[] = [];
    const dirty = () => opts.dirty?.() ?? [];
    let candidate: Candidate = await api.restorePrepare(paths, boundary, { dirty: dirty() });
    let stale = false;
    for (let round = 0; round < MAX_STALE_ROUNDS; round++) {
        if (candidate.noop) {
            return { status: "nothing-to-do", message: nothingRestored(candidate, opts.root), shown };
        }
        const conf = renderCandidate({ ...candidate, operation: "restore", boundary: candidate.boundary ?? boundary },
            { root: opts.root, stale });
        shown.push(conf);
        const choice = choiceOf(conf, await ui.confirm(conf));
        if (choice === "cancel" || choice === "mode") {
            return { status: "cancelled", message: "Restore cancelled.", shown };
        }
        const keep = choice === "keep-user-edits" || choice === "keep-with-markers";
        const extras = commitExtras(choice, dirty());
        const result = await commitWith(ui, "turnback: restoring",
            (o) => api.restoreCommit(paths, boundary, candidate.planHash, { ...o, ...extras }), keep);
        if (result.status === "committed") {
            const names = (result.restored ?? []).map((u) => displayPath({ uri: u }, opts.root));
            return {
                status: "committed", shown, result, keptUserEdits: keep,
                message: `Restored ${names.length ? names.join(", ") : "nothing"}; the conversation did not change (Redo undoes it).` +
                    (keep ? keptWords(result, opts.root) : "") + recoveryNote(result),
            };
        }
        if (result.status === "nothing-to-do") {
            return { status: "nothing-to-do", shown, result, message: nothingRestored(result.candidate, opts.root) };
        }
        if (result.status === "stale") {
            candidate = result.candidate ?? (await api.restorePrepare(paths, boundary, { dirty: dirty() }));
            stale = true;
            continue;
        }
        return { status: "rolled-back", shown, result, message: rolledBackMessage("rewind", result).replace("rewind", "restore") };
    }
    return { status: "stale", shown, message: "The session kept changing; restore abandoned." };
}

export async function redoFlow(
    api: TurnbackApi,
    pick: (groups: RedoGroup[]) => Promise<RedoGroup | undefined>,
    ui: FlowUi,
    opts: { root?: string } = {},
): Promise<FlowOutcome> {
    const shown: Confirmation[] = [];
    const list = await api.redoList();
    const unavailable = redoUnavailableMessage(list);
    if (unavailable) {
        return { status: "unavailable", message: unavailable, shown };
    }
    const group = await pick(list.groups);
    if (!group) {
        return { status: "cancelled", message: "Redo cancelled.", shown };
    }
    let plan: RedoPlan = await api.redoPrepare(group.headSeq);
    let stale = false;
    for (let round = 0; round < MAX_STALE_ROUNDS; round++) {
        const conf = renderRedoPlan(plan, group, { root: opts.root, stale });
        shown.push(conf);
        const choice = choiceOf(conf, await ui.confirm(conf));
        if (choice === "cancel") {
            return { status: "cancelled", message: "Redo cancelled.", shown };
        }
        const keep = choice === "keep-user-edits";
        let result: RedoCommitResult;
        try {
            result = await commitWith(ui, "turnback: redoing", (o) => api.redoCommit(group.headSeq, plan.planHash, o), keep);
        } catch (err) {
            if (errorCode(err) === "stale-plan") {
                plan = await api.redoPrepare(group.headSeq);
                stale = true;
                continue;
            }
            throw err;
        }
        if (result.status === "committed") {
            return {
                status: "committed", shown, result, keptUserEdits: keep,
                message: `Redone: ${redoneWhat(group)}.` +
                    (keep ? keptWords(result, opts.root) : "") + recoveryNote(result) + agentResumeNote(result),
                ...resumeOf(result),
            };
        }
        if (result.status === "nothing-to-do") {
            return { status: "nothing-to-do", shown, result, message: NOTHING_TO_REDO };
        }
        if (result.status === "stale") {
            plan = result.plan ?? (await api.redoPrepare(group.headSeq));
            stale = true;
            continue;
        }
        return { status: "rolled-back", shown, result, message: rolledBackMessage("redo", result) };
    }
    return { status: "stale", shown, message: "The session kept changing; redo abandoned." };
}

/** A user-facing sentence for a failed request. */
export function failureMessage(what: string, err: unknown): string {
    const code = errorCode(err);
    return `turnback: ${what} failed: ${errorMessage(err)}${code ? ` [${code}]` : ""}`;
}
