// Turnback's images as read-only documents: the `turnback-image:` URIs the session view opens in VS
// Code's diff editor, and what they carry (the image handle, the side's words, the session). The
// document provider in the extension reads them with `turnback/image/read`. No `vscode` import.

import type { DiffChange, DiffSide, ImageRead } from "./protocol";

export const IMAGE_SCHEME = "turnback-image";

export interface ImageRef {
    /** The workspace-relative path (the document's name: its language comes from it). */
    path: string;
    /** The handle for `turnback/image/read`; none for a side turnback has no bytes of. */
    image?: string;
    /** The side in words: "before turn 3", "your edit after turn 3, saved in the editor". */
    label: string;
    sessionId?: string;
}

/** The parts of a `turnback-image:` URI: its path and its query (for `vscode.Uri.from`). */
export function imageUriParts(ref: ImageRef): { scheme: string; path: string; query: string } {
    const q = new URLSearchParams();
    if (ref.image) {
        q.set("image", ref.image);
    }
    q.set("label", ref.label);
    if (ref.sessionId) {
        q.set("session", ref.sessionId);
    }
    return { scheme: IMAGE_SCHEME, path: "/" + ref.path.replace(/^\/+/, ""), query: q.toString() };
}

export function parseImageQuery(path: string, query: string): ImageRef {
    const q = new URLSearchParams(query);
    const image = q.get("image");
    const session = q.get("session");
    return {
        path: path.replace(/^\/+/, ""),
        ...(image ? { image } : {}),
        label: q.get("label") ?? "",
        ...(session ? { sessionId: session } : {}),
    };
}

/** The two sides of one change, as image references. */
export function sidesOf(c: DiffChange, sessionId?: string): [ImageRef, ImageRef] {
    const ref = (side: DiffSide): ImageRef => ({ path: c.path, image: side.image, label: side.label, ...(sessionId ? { sessionId } : {}) });
    return [ref(c.before), ref(c.after)];
}

/** The diff editor's title, in words: `app.py (before turn 3 ↔ after turn 3)`. */
export function diffTitle(c: DiffChange): string {
    const name = c.path.split("/").pop() ?? c.path;
    return `${name} (${c.before.label} ↔ ${c.after.label})`;
}

/** What a document of one side shows: the text, or a sentence when there is no text to show. */
export function imageText(read: ImageRead | undefined, ref: ImageRef): string {
    if (!ref.image) {
        return "";  // a side turnback never saw (or a file that did not exist): an empty side
    }
    if (!read) {
        return "";
    }
    if (read.exists === false) {
        return "";
    }
    if (typeof read.text === "string") {
        return read.text;
    }
    if (read.binary) {
        return `(${ref.path} ${ref.label} is a binary file of ${read.size ?? "?"} bytes: there is no text to compare)\n`;
    }
    if (read.tooLarge) {
        return `(${ref.path} ${ref.label} is too large to show here: ${read.size ?? "?"} bytes)\n`;
    }
    return `(${read.unknown ?? "turnback has no bytes of this side"})\n`;
}

/** Why a change opens no diff (a gap), in words, or undefined when it has one. */
export function noDiffReason(c: DiffChange): string | undefined {
    if (c.status === "gap") {
        return `${c.path} was not captured in turn ${c.turn}: ${c.gap?.reason ?? "a gap"}${c.gap?.detail ? `, ${c.gap.detail}` : ""}. There is no image to compare.`;
    }
    if (c.status === "transient") {
        return `${c.path} was created and removed inside turn ${c.turn}: there is nothing to compare.`;
    }
    return undefined;
}
