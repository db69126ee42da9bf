// The Turnback Session view's rows: turns (newest first), their files, your own edits between turns.
// Pure functions, no `vscode` import.

import type { DiffChange, SessionLog, TurnFile } from "./protocol";
import { displayPath, firstLine, gapLine, plural } from "./text";
import { newestFirst } from "./picks";

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
    /** A file row: the diff it opens. */
    diff?: DiffTarget;
    /** A session row: the session it opens (read only unless it is the live one). */
    sessionId?: string;
    /** A directive row (or one of its attempts). */
    directiveId?: string;
}

/** What the Session view opens for a file row: that change's diff (a turn's, or your own edit's). */
export interface DiffTarget {
    source: "turn" | "user";
    /** The turn that made it; for "user", the turn it came after. */
    turn: number;
    uri: string;
    /** Another session of the store (a frozen parent), read only. */
    sessionId?: string;
}

const FILE_WORDS: Record<string, string> = {
    created: "created", deleted: "deleted", modified: "changed", mode: "permission bits changed",
    transient: "created and removed in this turn", "unknown-before": "changed (never seen before)", gap: "not captured",
};

/** A folder key of the captured state: its path (and URI) ends with `/` (docs/protocol.md). */
export function isFolderKey(f: { uri?: string | null; path?: string | null }): boolean {
    return (f.path ?? f.uri ?? "").endsWith("/");
}

function fileStatus(f: TurnFile): string {
    if (f.before === "absent" && f.after === "absent") {
        return "transient";
    }
    if (f.before === "unknown") {
        return "unknown-before";
    }
    if (f.before === "absent" || f.before == null) {
        return "created";
    }
    if (f.after === "absent" || f.after == null) {
        return "deleted";
    }
    return f.before === f.after ? "mode" : "modified";
}

export function fileWords(status: string): string {
    return FILE_WORDS[status] ?? status;
}

const BY_WORDS: Record<string, string> = {
    save: "saved in the editor", watch: "changed on disk", sweep: "changed on disk", hook: "captured between turns",
    restore: "put back by a restore", kept: "kept by a conversation-only rewind",
};

/** A session log step in words: the command of a shell step, the summary of the others. */
export function stepWords(s: { kind: string; summary?: string }): string {
    const summary = (s.summary ?? "").replace(/\s*\[scope [a-z]+: .*\]\s*$/, "").trim();
    if (s.kind === "shell") {
        const m = /^[A-Za-z_][\w.-]*: (.+)$/s.exec(summary);
        const command = m ? m[1] : summary;
        return command ? `ran “${firstLine(command, 80)}”` : "ran a shell command (not recorded)";
    }
    return summary || s.kind;
}

export interface SessionTreeOptions {
    /** The user's own changes between turns (`turnback/diff` changes of source "user"). */
    edits?: DiffChange[];
    /** Another session of the store, shown read only. */
    sessionId?: string;
}

/** Turns (newest first) with their files as children, your own edits between turns after the turn
 *  they followed; a running turn can be settled or cancelled from its row. */
export function sessionTree(log: SessionLog, root?: string, opts: SessionTreeOptions = {}): TreeNode[] {
    const edits = opts.edits ?? [];
    const sid = opts.sessionId;
    const out: TreeNode[] = [];
    for (const t of newestFirst(log)) {
        const mine = edits.filter((c) => c.afterTurn === t.turn);
        if (mine.length) {
            out.push(userEditsNode(t.turn, mine, root, sid));
        }
        const running = t.state === "running";
        const steps = t.stepList ?? [];
        // A folder the turn made or removed is a key of its own (`pkg/`), not a file: counted apart,
        // with no row (it has no text to diff; the files in it say what changed).
        const files = (t.files ?? []).filter((f) => !isFolderKey(f));
        const folders = (t.files ?? []).length - files.length;
        const description = [running ? "running: settle or cancel it here" : t.state !== "settled" ? t.state : "",
            t.gaps?.length ? `⚠ ${plural(t.gaps.length, "gap")}` : "", files.length ? plural(files.length, "file") : "",
            folders ? plural(folders, "folder") : ""]
            .filter(Boolean).join(" · ");
        out.push({
            id: `${sid ?? ""}turn:${t.turn}`,
            label: `Turn ${t.turn}: ${firstLine(t.prompt, 60) || "(empty prompt)"}`,
            description,
            // the whole row in words first: the sidebar cuts a long prompt (issue 40)
            tooltip: [`Turn ${t.turn}: ${(t.prompt ?? "").trim() || "(empty prompt)"}`, ...(description ? [description] : []),
                `Answer: ${firstLine(t.response, 200) || "(none)"}`,
                steps.length ? `Steps:\n${steps.map((x) => `• ${stepWords(x)}`).join("\n")}` : plural(t.steps ?? 0, "step"),
                ...(t.gaps ?? []).map((g) => "⚠ " + gapLine(g, root))].join("\n"),
            contextValue: sid ? "turnback.turn.readonly" : running ? "turnback.turn.running"
                : t.kind === "directive" ? "turnback.turn.directive" : "turnback.turn",
            turn: t.turn,
            children: files.map((f) => {
                const status = fileStatus(f);
                return {
                    id: `${sid ?? ""}turn:${t.turn}:${f.uri}`,
                    label: displayPath(f, root),
                    description: fileWords(status),
                    tooltip: `${displayPath(f, root)}: ${fileWords(status)} by turn ${t.turn}. Click for the diff (before turn ${t.turn} ↔ after turn ${t.turn}).`,
                    contextValue: "turnback.file",
                    turn: t.turn,
                    uri: f.uri,
                    diff: { source: "turn" as const, turn: t.turn, uri: f.uri, ...(sid ? { sessionId: sid } : {}) },
                };
            }),
        });
    }
    return out;
}

function userEditsNode(after: number, changes: DiffChange[], root: string | undefined, sid: string | undefined): TreeNode {
    return {
        id: `${sid ?? ""}mine:${after}`,
        label: changes.every((c) => c.by === "restore") ? `Restored after turn ${after}`
            : changes.some((c) => c.by === "restore" || c.by === "kept") ? `Changes between turns, after turn ${after}`
                : `Your edits after turn ${after}`,
        description: `${plural(changes.length, "file")}, made by no turn`,
        tooltip: `${plural(changes.length, "file")} changed after turn ${after}, by no turn: ${changes.map((c) => displayPath(c, root)).join(", ")}.\n` +
            "Changes you (or another program) made between turns. A rewind past them lists them as your edits; " +
            "“Keep My Edits” carries them onto the restored files.",
        contextValue: "turnback.useredits",
        turn: after,
        children: changes.map((c) => ({
            id: `${sid ?? ""}mine:${after}:${c.uri}`,
            label: displayPath(c, root),
            description: `${fileWords(c.status)} (${BY_WORDS[c.by ?? ""] ?? "made by no turn"})`,
            tooltip: `${displayPath(c, root)}: ${fileWords(c.status)} (${BY_WORDS[c.by ?? ""] ?? "made by no turn"}) after turn ${after}. ` +
                `Click for the diff (as turn ${after} left it ↔ this change).`,
            contextValue: "turnback.file.user",
            turn: after,
            uri: c.uri,
            diff: { source: "user" as const, turn: after, uri: c.uri, ...(sid ? { sessionId: sid } : {}) },
        })),
    };
}

/** A row's tooltip holds the row's whole text (issue 40: the sidebar cuts long labels at its default
 *  width, and in an 800-pixel window): its own tooltip, with the label and description first when
 *  it does not already say them. */
export function wholeRowTooltip(node: { label: string; description?: string; tooltip?: string }): string {
    const label = node.label.replace(/^[\s↳●]+/, "").trim();
    const description = (node.description ?? "").trim();
    const tip = node.tooltip ?? "";
    if (tip.includes(label) && tip.includes(description)) {
        return tip;
    }
    return [`${label}${description ? ` — ${description}` : ""}`, tip].filter(Boolean).join("\n");
}

/** The view before the first turn says what to do (VS Code draws it as the view's welcome text). */
export const NO_TURN_YET = "No turn yet: turns appear here as your agent works (its hooks tell turnback), " +
    "or begin one by hand with Turnback: Begin a Turn.";
