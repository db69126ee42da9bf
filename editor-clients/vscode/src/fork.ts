// "Fork at This Response" (issue 14): prepare → the confirmation → confirm, re-shown when stale, in the
// same style as a rewind; and the lineage of the store's sessions for the session view. No `vscode`.

import { agentResumeNote, resumeOf, rolledBackMessage } from "./flows";
import { errorCode } from "./protocol";
import type { FilePlan, ForkConfirmResult, ForkPrepareResult, Gap, SessionSummary, TurnbackApi } from "./protocol";
import { effectLines, fileSection, gapSection, KEEP_MY_EDITS, plural, quote, userEditFiles, userEditSection } from "./render";
import type { StepWords } from "./protocol";
import type { Confirmation, TreeNode } from "./render";

export const FORK_HERE = "Fork Here";
export const FORK_WORKTREE = "Fork into a Worktree…";

export function shortId(id: string | null | undefined): string {
    return (id ?? "").slice(0, 8);
}

interface TurnSide {
    turnCount?: number;
    last?: { turn: number; prompt: string } | null;
    first?: { turn: number; prompt: string } | null;
}

/** The prepare report → the modal. */
export function renderForkPlan(p: ForkPrepareResult, opts: { root?: string; stale?: boolean } = {}): Confirmation {
    const keep = (p.keep ?? {}) as TurnSide;
    const discard = (p.discard ?? {}) as TurnSide;
    const title = (opts.stale ? "The session changed; here is the fresh plan. " : "") +
        `Fork at the response of turn ${p.turn}: continue in a new branch and freeze this session?`;
    const lines: string[] = [];
    const kept = keep.last ? ` ending with turn ${keep.last.turn} ${quote(keep.last.prompt)}` : "";
    lines.push(`Branch: a new session with ${p.turn === 1 ? "turn 1" : `turns 1–${p.turn}`}${kept}; it continues from there with a fresh journal and no inherited approvals.`);
    const tail = discard.turnCount ?? 0;
    lines.push(`This session: frozen as it is (read-only, no new turns)` +
        (tail && discard.first ? `, with its ${plural(tail, "later turn")} from turn ${discard.first.turn} ${quote(discard.first.prompt)} on.` : "."));
    const files = (p.files ?? []) as FilePlan[];
    const gaps = (p.gaps ?? []) as Gap[];
    lines.push("", "Forking here puts this folder back to the end of that turn:");
    lines.push(...fileSection(files, opts.root));
    lines.push(...userEditSection(files, "fork", opts.root));
    lines.push("", ...gapSection(gaps, opts.root));
    const effects = effectLines(p.effects, p.steps as StepWords[] | undefined, p.effectWords);
    lines.push("", effects.length ? `Effects of the steps above turn ${p.turn}:` : "Effects: no step above this turn.", ...effects);
    const dropped = (p.droppedSends ?? []) as string[];
    if (dropped.length) {
        const what = new Map(((p.steps ?? []) as StepWords[]).map((x) => [x.id, x.what]));
        lines.push("", `Held sends dropped before they leave this machine: ${dropped.map((id) => what.get(id) ?? `step ${id}`).join(", ")}.`);
    }
    const notPreserved = (p.notPreserved ?? []) as string[];
    // said once: the server's summary names them too (issue 40: the same sentence twice)
    if (notPreserved.length && !(p.summary ?? "").includes("does not preserve")) {
        lines.push("", `The branch does not preserve: ${notPreserved.join(", ")}.`);
    }
    if (p.summary) {
        lines.push("", p.summary);
    }
    lines.push("", `“${FORK_WORKTREE}” leaves this folder as it is and writes the branch into another folder.`);
    const keepMine = userEditFiles(files).length ? { more: [KEEP_MY_EDITS.fork] } : {};
    return { title, detail: lines.join("\n"), action: FORK_HERE, alternative: FORK_WORKTREE, ...keepMine };
}

export interface ForkUi {
    confirm(c: Confirmation): Promise<boolean | string | undefined>;
    /** Where the worktree goes; undefined cancels. */
    worktreePath(): Promise<string | undefined>;
}

export interface ForkOutcome {
    status: "forked" | "cancelled" | "refused" | "rolled-back" | "stale" | string;
    message: string;
    shown: Confirmation[];
    result?: ForkConfirmResult;
    /** The command that resumes the agent in the branch (`claude --resume …`), shown whole. */
    resumeCommand?: string;
}

const MAX_STALE_ROUNDS = 5;

function refusalOf(x: { refusal?: unknown; report?: unknown } | undefined): { code?: string; message?: string } | undefined {
    const r = (x?.refusal ?? (x?.report as { refusal?: unknown } | undefined)?.refusal) as { code?: string; message?: string } | undefined;
    return r ?? undefined;
}

export function refusedMessage(r: { code?: string; message?: string }): string {
    return `turnback cannot fork here: ${r.message ?? "the server refused"}${r.code ? ` [${r.code}]` : ""}`;
}

export async function forkFlow(api: TurnbackApi, turn: number, ui: ForkUi, opts: { root?: string } = {}): Promise<ForkOutcome> {
    const shown: Confirmation[] = [];
    let plan = await api.forkPrepare(turn);
    let stale = false;
    for (let round = 0; round < MAX_STALE_ROUNDS; round++) {
        const refused = refusalOf(plan);
        if (refused) {
            return { status: "refused", message: refusedMessage(refused), shown };
        }
        const conf = renderForkPlan(plan, { root: opts.root, stale });
        shown.push(conf);
        const answer = await ui.confirm(conf);
        let worktree: string | undefined;
        const keepUserEdits = answer === KEEP_MY_EDITS.fork;
        if (answer === FORK_WORKTREE) {
            worktree = await ui.worktreePath();
            if (!worktree) {
                return { status: "cancelled", message: "Fork cancelled.", shown };
            }
        } else if (!(answer === true || answer === FORK_HERE || keepUserEdits)) {
            return { status: "cancelled", message: "Fork cancelled.", shown };
        }
        let result: ForkConfirmResult;
        try {
            result = await api.forkConfirm(turn, plan.hash, worktree, keepUserEdits);
        } catch (err) {
            if (errorCode(err) === "stale-plan") {
                plan = await api.forkPrepare(turn);
                stale = true;
                continue;
            }
            throw err;
        }
        if (result.status === "forked") {
            const b = result.branch;
            const where = b?.worktree ? ` Its files are in ${b.worktree}.` : "";
            const kept = result.kept?.length ? ` Your edits left as they were: ${plural(result.kept.length, "file")}.` : "";
            return {
                status: "forked", shown, result, ...resumeOf(result),
                message: `Forked at turn ${turn}: a new branch continues from there; the session you forked is frozen, read only.` +
                    `${where}${kept}${agentResumeNote(result)}`,
            };
        }
        if (result.status === "stale") {
            const fresh = result.report as ForkPrepareResult | undefined;
            plan = fresh && typeof fresh.hash === "string" ? fresh : await api.forkPrepare(turn);
            stale = true;
            continue;
        }
        if (result.status === "refused") {
            return { status: "refused", shown, result, message: refusedMessage(refusalOf(result) ?? { message: result.message }) };
        }
        return { status: result.status, shown, result, message: rolledBackMessage("fork", result as { message?: string; reason?: string; recovery?: unknown[] }) };
    }
    return { status: "stale", shown, message: "The session kept changing; fork abandoned." };
}

// ---------------------------------------------------------------------------------------------
// Lineage

/** Each session's name, apart from the others (issue 40: after a fork both carried their common
 *  first prompt): a root session by its first prompt; a branch by the first prompt it added after
 *  the fork, or, before it has one, as the branch from that turn. `prompts` holds each session's
 *  prompts in turn order (absent: another folder's session, named by its id). Names still equal
 *  (two branches given the same prompt) get their short ids. */
export function sessionNames(sessions: SessionSummary[], prompts: Record<string, string[]>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const s of sessions) {
        const own = prompts[s.sessionId];
        if (!own) {
            continue;
        }
        const branchAt = s.parentId && s.forkTurn != null ? s.forkTurn : undefined;
        const first = own[branchAt ?? 0];
        out[s.sessionId] = first !== undefined ? quote(first, 50)
            : branchAt !== undefined ? `New branch from turn ${branchAt}` : "(no turn yet)";
    }
    const seen = new Map<string, number>();
    for (const name of Object.values(out)) {
        seen.set(name, (seen.get(name) ?? 0) + 1);
    }
    for (const [id, name] of Object.entries(out)) {
        if ((seen.get(name) ?? 0) > 1) {
            out[id] = `${name} (${shortId(id)})`;
        }
    }
    return out;
}

/** The store's sessions as one tree node (children in lineage order), or none for a single session.
 *  `names` names each session by its first prompt (id → prompt); a click opens it (read only unless
 *  it is the live one). */
export function lineageNode(sessions: SessionSummary[], names: Record<string, string> = {}): TreeNode | undefined {
    if (sessions.length < 2) {
        return undefined;
    }
    const byParent = new Map<string | null, SessionSummary[]>();
    const ids = new Set(sessions.map((s) => s.sessionId));
    for (const s of sessions) {
        const parent = s.parentId && ids.has(s.parentId) ? s.parentId : null;
        byParent.set(parent, [...(byParent.get(parent) ?? []), s]);
    }
    const children: TreeNode[] = [];
    const walk = (parent: string | null, depth: number) => {
        for (const s of byParent.get(parent) ?? []) {
            children.push(sessionNode(s, depth, names[s.sessionId]));
            walk(s.sessionId, depth + 1);
        }
    };
    walk(null, 0);
    const current = sessions.find((s) => s.current);
    return {
        id: "lineage",
        label: `Sessions (${sessions.length})`,
        description: current ? `this one: ${names[current.sessionId] ?? shortId(current.sessionId)}` : undefined,
        tooltip: `Every session of this store: forks start a branch and freeze their parent.` +
            (current ? `\nThis window works on ${names[current.sessionId] ?? current.sessionId}.` : ""),
        contextValue: "turnback.lineage",
        expanded: true,
        children,
    };
}

function sessionNode(s: SessionSummary, depth: number, name?: string): TreeNode {
    const bits = [plural(s.turnCount, "turn")];
    if (s.parentId && s.forkTurn != null) {
        bits.push(`forked at turn ${s.forkTurn}`);
    }
    if (s.frozen) {
        bits.push("frozen");
    }
    if (s.worktree) {
        bits.push(`in ${s.worktree}`);
    }
    return {
        id: `session:${s.sessionId}`,
        label: `${"  ".repeat(depth)}${depth ? "↳ " : ""}${s.current ? "● " : ""}${name ?? shortId(s.sessionId)}`,
        description: bits.join(" · "),
        tooltip: [`${name ?? "Session"}: ${bits.join(" · ")}`, `Session ${s.sessionId}${s.current ? " (the one this window works on)" : ""}`,
            s.parentId ? `Branch of ${s.parentId} at turn ${s.forkTurn}` : "A root session",
            s.frozen ? "Frozen: read-only, no new turns." : "", s.worktree ? `Worktree: ${s.worktree}` : ""].filter(Boolean).join("\n"),
        contextValue: s.frozen ? "turnback.session.frozen" : "turnback.session",
        sessionId: s.sessionId,
    };
}
