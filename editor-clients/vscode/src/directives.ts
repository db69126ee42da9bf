// The directive panel (issue 26 §5): every directive of the session with its state, its file and line,
// its attempts and their answers, and what can be done with it; and the requests behind "New
// Directive…" and "Begin Attempt". A directive is named by its request, never by its id. The agent's
// hooks join an attempt begun here (the server's side). No `vscode` import.

import type { Directive, DirectiveUpsertParams, TurnBeginParams } from "./protocol";
import { displayPath, firstLine, plural, quote } from "./text";
import type { TreeNode } from "./tree";

const STATE_WORDS: Record<string, string> = {
    draft: "draft: no request yet", ready: "ready for an attempt", running: "an attempt is running",
    answered: "answered", applied: "applied", detached: "detached: its line changed or vanished",
};

export function directiveName(d: Pick<Directive, "request">, max = 60): string {
    return quote(d.request, max);
}

/** The panel's rows: each directive (newest file order kept), its attempts newest first. */
export function directiveNodes(directives: Directive[], root?: string): TreeNode[] {
    return directives.map((d) => ({
        id: `directive:${d.id}`,
        label: firstLine(d.request, 70) || "(no request yet)",
        description: [STATE_WORDS[d.state] ?? d.state, d.attempts?.length ? plural(d.attempts.length, "attempt") : "",
            `${displayPath({ uri: d.uri }, root)}:${(d.anchor?.line ?? 0) + 1}`].filter(Boolean).join(" · "),
        tooltip: `${d.request}\n\n${STATE_WORDS[d.state] ?? d.state}`,
        contextValue: d.state === "running" ? "turnback.directive.running" : "turnback.directive",
        uri: d.uri,
        directiveId: d.id,
        expanded: d.attempts?.length ? true : undefined,
        children: [...(d.attempts ?? [])].sort((a, b) => b.turn - a.turn).map((a) => ({
            id: `directive:${d.id}:${a.turn}`,
            label: `Attempt in turn ${a.turn}`,
            description: a.answer ? firstLine(a.answer, 70) : a.patch ? "a patch" : "no answer yet",
            tooltip: [a.answer ? `Answer: ${a.answer}` : "", a.feedback ? `Feedback: ${a.feedback}` : "",
                a.patch ? `Patch:\n${a.patch}` : ""].filter(Boolean).join("\n\n") || "No answer yet",
            contextValue: "turnback.directive.attempt",
            turn: a.turn,
            directiveId: d.id,
        })),
    }));
}

/** "New Directive…": a directive anchored on the cursor's line of a file. */
export function newDirectiveParams(uri: string, line: number, request: string): DirectiveUpsertParams {
    return { uri, anchor: { line, character: 0 }, request: request.trim() };
}

/** "Begin Attempt": a directive turn whose prompt is the request; the agent's hooks join it. */
export function beginAttemptParams(d: Directive): TurnBeginParams {
    return { kind: "directive", prompt: d.request, directiveId: d.id };
}

export function beganMessage(d: Directive, turn: number): string {
    return `Turn ${turn} began: an attempt at ${directiveName(d)}. Ask your agent now; its hooks join this turn. ` +
        "Settle it from the session view when the agent is done (or cancel it).";
}
