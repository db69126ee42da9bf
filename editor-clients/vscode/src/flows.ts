// The rewind and redo conversations (prepare → confirm → commit, with a stale commit re-shown), written
// against a tiny UI interface so the tests can answer the confirmation programmatically. No `vscode`.

import { errorCode, errorMessage } from "./protocol";
import type { Boundary, Candidate, CommitResult, RedoCommitResult, RedoGroup, RedoPlan, TurnbackApi } from "./protocol";
import { renderCandidate, renderRedoPlan, redoUnavailableMessage } from "./render";
import type { Confirmation } from "./render";

export interface FlowUi {
    /** Show the modal; resolve true to commit. */
    confirm(c: Confirmation): Promise<boolean>;
    info?(message: string): void;
    warn?(message: string): void;
}

export interface FlowOutcome {
    status: "committed" | "cancelled" | "rolled-back" | "unavailable" | "stale" | "error";
    message: string;
    /** Every confirmation shown, in order (a stale commit adds one). */
    shown: Confirmation[];
    result?: CommitResult | RedoCommitResult;
}

const MAX_STALE_ROUNDS = 5;

function recoveryNote(result: { recovery?: unknown[] }): string {
    const n = result.recovery?.length ?? 0;
    return n ? ` ${n} recovery record(s) keep what could not be put back.` : "";
}

export async function rewindFlow(api: TurnbackApi, boundary: Boundary, ui: FlowUi, opts: { root?: string } = {}): Promise<FlowOutcome> {
    const shown: Confirmation[] = [];
    let candidate: Candidate = await api.rewindPrepare(boundary);
    let stale = false;
    for (let round = 0; round < MAX_STALE_ROUNDS; round++) {
        const conf = renderCandidate({ ...candidate, boundary: candidate.boundary ?? boundary }, { root: opts.root, stale });
        shown.push(conf);
        if (!(await ui.confirm(conf))) {
            return { status: "cancelled", message: "Rewind cancelled.", shown };
        }
        let result: CommitResult;
        try {
            result = await api.rewindCommit(boundary, candidate.planHash);
        } catch (err) {
            if (errorCode(err) === "stale-plan") {
                candidate = await api.rewindPrepare(boundary);
                stale = true;
                continue;
            }
            throw err;
        }
        if (result.status === "committed") {
            return {
                status: "committed", shown, result,
                message: `Rewound: kept ${candidate.keep.turnCount} turn(s), discarded ${candidate.discard.turnCount}.` + recoveryNote(result),
            };
        }
        if (result.status === "stale") {
            candidate = result.candidate ?? (await api.rewindPrepare(boundary));
            stale = true;
            continue;
        }
        return {
            status: "rolled-back", shown, result,
            message: `The rewind was rolled back${result.reason ? `: ${result.reason}` : ""}.` + recoveryNote(result),
        };
    }
    return { status: "stale", shown, message: "The session kept changing; rewind abandoned." };
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
        if (!(await ui.confirm(conf))) {
            return { status: "cancelled", message: "Redo cancelled.", shown };
        }
        let result: RedoCommitResult;
        try {
            result = await api.redoCommit(group.headSeq, plan.planHash);
        } catch (err) {
            if (errorCode(err) === "stale-plan") {
                plan = await api.redoPrepare(group.headSeq);
                stale = true;
                continue;
            }
            throw err;
        }
        if (result.status === "committed") {
            return { status: "committed", shown, result, message: `Redone: head ${group.headSeq} is back (${group.turnCount} turn(s)).` + recoveryNote(result) };
        }
        if (result.status === "stale") {
            plan = result.plan ?? (await api.redoPrepare(group.headSeq));
            stale = true;
            continue;
        }
        return { status: "rolled-back", shown, result, message: `The redo was rolled back${result.reason ? `: ${result.reason}` : ""}.` + recoveryNote(result) };
    }
    return { status: "stale", shown, message: "The session kept changing; redo abandoned." };
}

/** A user-facing sentence for a failed request. */
export function failureMessage(what: string, err: unknown): string {
    const code = errorCode(err);
    return `turnback: ${what} failed: ${errorMessage(err)}${code ? ` [${code}]` : ""}`;
}
