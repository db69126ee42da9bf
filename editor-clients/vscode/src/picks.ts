// Quick picks: the boundaries, the Redo groups, the gaps, a directive's attempts, where a restore can
// go. Pure functions, no `vscode` import.

import type { Boundary, Directive, LogTurn, RedoList, SessionLog, Status } from "./protocol";
import { displayPath, firstLine, formatTime, gapReasonText, plural, quote } from "./text";

export interface BoundaryPick {
    label: string;
    description?: string;
    detail?: string;
    turn: number;
    boundary: Boundary;
}

export function newestFirst(log: SessionLog): LogTurn[] {
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

/** Redo groups, as the server lists them (newest first), each by what it brings back: the turns,
 *  the files, the time. */
export function redoPicks(list: RedoList): RedoPick[] {
    return (list.groups ?? []).map((g) => {
        const shared = g.sharedTurns;
        const what = typeof shared === "number" && g.turnCount > shared
            ? (g.turnCount === shared + 1 ? `Turn ${g.turnCount} back` : `Turns ${shared + 1}–${g.turnCount} back`)
            : g.turnCount === 0 ? "The empty session" : `The session as it was after turn ${g.turnCount}`;
        const paths = g.changes?.paths ?? [];
        const more = (g.changes?.files ?? paths.length) - paths.length;
        return {
            label: `$(redo) ${what}: ${firstLine(g.lastPrompt) || "(empty session)"}`,
            description: g.changes ? (paths.length ? `${paths.join(", ")}${more > 0 ? ` and ${more} more` : ""}` : "no file changes") : undefined,
            detail: [formatTime(g.created) ? `saved ${formatTime(g.created)}` : "", `${plural(g.turnCount, "turn")} in all`,
                g.ancestor ? "earlier on this line" : "",
                g.frozenParent ? "a state of the frozen session this one was forked from" : "",
                g.keptBefore ? "what a rewind, Redo or fork overwrote: your uncaptured edits" : "",
            ].filter(Boolean).join(" · "),
            headSeq: g.headSeq,
        };
    });
}

export interface RestorePick {
    label: string;
    description?: string;
    boundary: Boundary;
}

/** Where "Restore to Turn…" can take a file: each turn that changed it (every turn, for a folder),
 *  newest first, as it was after that turn and before it. */
export function restorePicks(log: SessionLog, uri: string, folder = false): RestorePick[] {
    const out: RestorePick[] = [];
    for (const t of newestFirst(log)) {
        if (!folder && !(t.files ?? []).some((f) => f.uri === uri)) {
            continue;
        }
        out.push({ label: `$(history) As it was after turn ${t.turn}`, description: quote(t.prompt), boundary: { kind: "afterResponse", turn: t.turn } });
        out.push({ label: `$(discard) As it was before turn ${t.turn}`, description: quote(t.prompt), boundary: { kind: "beforePrompt", turn: t.turn } });
    }
    return out;
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
    return "Nothing to redo: no earlier saved state of this session differs from the current one.";
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

export function directiveAttemptPicks(d: Directive): BoundaryPick[] {
    return [...(d.attempts ?? [])].sort((a, b) => b.turn - a.turn).map((a) => ({
        label: `$(debug-step-back) Turn ${a.turn}${a.answer ? `: ${firstLine(a.answer)}` : ""}`,
        description: a.feedback ? `feedback: ${firstLine(a.feedback, 40)}` : undefined,
        detail: `discards this attempt at ${quote(d.request)} and every later turn`,
        turn: a.turn,
        boundary: { kind: "beforeDirectiveAttempt", directiveId: d.id, turn: a.turn },
    }));
}

