// Words shared by every view: plurals, first lines, paths, gaps, boundaries, times, who made an edit,
// the effect buckets by their people's names. Pure functions, no `vscode` import.

import type { Boundary, Gap } from "./protocol";

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
    "not-a-directory": "one of the folders on its path is a file now",
    "folder-not-empty": "a folder that holds uncaptured files: it stays, with them",
    "submodule-uninitialised": "a submodule left uninitialised (the parent never checked it out)",
};

export function gapReasonText(reason: string): string {
    return GAP_REASONS[reason] ?? reason;
}

/** One line per gap: `path — reason, in words (turn N): detail`; the words once, when the server's
 *  detail already says them (`git-internal`: "inside a .git folder …" twice before issue 40). */
export function gapLine(gap: Gap, root?: string): string {
    const where = gap.uri || gap.path ? displayPath(gap, root) : "(session)";
    const turn = typeof gap.turn === "number" ? ` (turn ${gap.turn})` : "";
    const words = gap.words ?? gapReasonText(gap.reason);  // the server's, else our own (older server)
    const detail = (gap.detail ?? "").trim();
    if (detail && sameStart(detail, words)) {
        return `${where} — ${gap.reason}${turn}: ${detail}`;
    }
    return `${where} — ${gap.reason}, ${words}${turn}${detail ? `: ${detail}` : ""}`;
}

/** True when the detail already says what the reason's words say: it starts the same, or holds
 *  every word of them that carries meaning (`git-head-and-index`: "git HEAD and index are not
 *  restored" beside "a rewind does not restore Git HEAD or the index"). */
function sameStart(detail: string, words: string): boolean {
    const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9.]+/g, " ").trim().split(" ");
    if (norm(detail).slice(0, 3).join(" ") === norm(words).slice(0, 3).join(" ")) {
        return true;
    }
    const stems = new Set(norm(detail).map((w) => w.slice(0, 5)));
    const meaningful = norm(words).filter((w) => w.length >= 3 && !STOP_WORDS.has(w));
    return meaningful.length > 0 && meaningful.every((w) => stems.has(w.slice(0, 5)));
}

const STOP_WORDS = new Set(["and", "are", "the", "its", "was", "for", "with", "from", "that", "this", "was"]);

// ---------------------------------------------------------------------------------------------
// Confirmation

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

const USER_EDIT_WORDS: Record<string, string> = {
    "editor-save": "saved in the editor",
    "disk-change": "changed on disk",
    "capture-request": "captured between turns",
    uncaptured: "changed on disk, not captured yet",
};

export function userEditWords(by: string | undefined): string {
    return (by && USER_EDIT_WORDS[by]) || "not made by a discarded turn";
}


export function formatTime(epochSeconds: number | undefined): string {
    if (!epochSeconds) {
        return "";
    }
    const d = new Date(epochSeconds * 1000);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
