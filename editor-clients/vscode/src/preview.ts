// Confirmations that fit the window (issue 26 §3). A plan short enough is one modal dialog, as
// before. A longer one would make a dialog taller than the window (1,204 px in a 950 px window:
// title and buttons off-screen), so it is split in two: a short modal (the title, both sides of the
// boundary and a one-line account of the rest) and the whole plan in a preview panel beside it, which
// scrolls and has the same buttons in a bar that stays in view. The preview measures its own window:
// too small to show any plan, it says so and offers no button, so nothing is approved unseen.
// No `vscode` import: the extension hosts the HTML in a webview.

import type { Confirmation } from "./render";

/** More lines (or characters) than this and the plan goes to the preview. */
export const MODAL_MAX_LINES = 26;
export const MODAL_MAX_CHARS = 2200;
/** The button of the short modal that leaves it for the preview. */
export const READ_WHOLE_PLAN = "Read the Whole Plan";
/** The preview's minimum: below this the window is too small for any plan. */
export const MIN_PREVIEW = { width: 180, height: 160 };

/** About how many characters of the detail the modal draws on one line before it wraps (VS Code's
 *  dialog wraps near 80; a little less, to be safe). */
export const MODAL_WRAP_CHARS = 72;

/** The lines the modal draws for `text`: a paragraph of 330 characters is five of them, not one
 *  (a fork's plan of few, long lines measured taller than a 900 px window). */
export function drawnLines(text: string, width = MODAL_WRAP_CHARS): number {
    return text.split("\n").reduce((n, line) => n + Math.max(1, Math.ceil(line.length / width)), 0);
}

export function isLong(c: Confirmation): boolean {
    return drawnLines(c.detail) > MODAL_MAX_LINES || c.detail.length > MODAL_MAX_CHARS;
}

/** The short modal's detail: the first paragraph, the section headings with their counts, and
 *  where the rest is. */
export function shortDetail(c: Confirmation): string {
    const paragraphs = c.detail.split("\n\n");
    const head = paragraphs[0] ?? "";
    const headings = paragraphs.slice(1).map((p) => p.split("\n")[0]).filter((l) => l && !/^\s/.test(l))
        .filter((l) => /^(Files|Gaps|What |Effects|Your own edits|Directives|Workflow)/.test(l)).map((l) => l.replace(/:$/, ""));
    const lines = c.detail.split("\n").length;
    return [head, "", headings.join(" · "), "",
        `The whole plan (${lines} lines) is in the panel beside this dialog. “${READ_WHOLE_PLAN}” closes this dialog so you can scroll it; decide there with the same buttons.`]
        .join("\n").replace(/\n{3,}/g, "\n\n");
}

/** The short modal of a long plan: the same buttons, and one more that leaves it for the preview. */
export function shortConfirmation(c: Confirmation): Confirmation {
    return { ...c, detail: shortDetail(c), more: [...(c.more ?? []), READ_WHOLE_PLAN] };
}

function esc(text: string): string {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** Every button of a confirmation, in order: the action first, Cancel last. */
export function buttonsOf(c: Confirmation): string[] {
    return [c.action, ...(c.alternative ? [c.alternative] : []), ...(c.more ?? []).filter((b) => b !== READ_WHOLE_PLAN), "Cancel"];
}

/**
 * The preview's HTML: a bar with the title and the buttons that stays at the top, the whole plan
 * below it (scrolls), and a script that posts `{choice}` and hides the buttons when the window is too
 * small to show the plan. `csp` is the webview's `cspSource`, `nonce` a fresh one per panel.
 */
export function planHtml(c: Confirmation, opts: { csp: string; nonce: string }): string {
    const buttons = buttonsOf(c).map((b, i) =>
        `<button data-choice="${esc(b)}" class="${i === 0 ? "primary" : b === "Cancel" ? "cancel" : "secondary"}">${esc(b)}</button>`).join("");
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${opts.csp} 'unsafe-inline'; script-src 'nonce-${opts.nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { margin: 0; padding: 0; font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); }
#bar { position: sticky; top: 0; padding: 8px 12px; background: var(--vscode-editorWidget-background, var(--vscode-editor-background)); border-bottom: 1px solid var(--vscode-widget-border, #8884); }
#title { font-weight: 600; margin-bottom: 6px; }
#buttons button { margin: 2px 6px 2px 0; padding: 3px 10px; border: 1px solid transparent; cursor: pointer; font: inherit; }
button.primary { background: var(--vscode-button-background); color: var(--vscode-button-foreground); }
button.secondary, button.cancel { background: var(--vscode-button-secondaryBackground, #8883); color: var(--vscode-button-secondaryForeground, inherit); }
#plan { margin: 0; padding: 10px 12px 40px; white-space: pre-wrap; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
#small { display: none; padding: 12px; }
body.small #bar #buttons, body.small #plan { display: none; }
body.small #small { display: block; }
</style></head>
<body>
<div id="bar"><div id="title">${esc(c.title)}</div><div id="buttons">${buttons}</div></div>
<div id="small">This window is too small to show the plan. Make it larger (or run the same command in a terminal with the turnback command line); nothing changes until you choose.</div>
<pre id="plan">${esc(c.detail)}</pre>
<script nonce="${opts.nonce}">
const vscode = acquireVsCodeApi();
for (const b of document.querySelectorAll("button[data-choice]")) {
  b.addEventListener("click", () => vscode.postMessage({ choice: b.dataset.choice }));
}
function fit() {
  const small = window.innerWidth < ${MIN_PREVIEW.width} || window.innerHeight < ${MIN_PREVIEW.height};
  document.body.classList.toggle("small", small);
  vscode.postMessage({ size: { width: window.innerWidth, height: window.innerHeight, small } });
}
window.addEventListener("resize", fit);
fit();
</script>
</body></html>`;
}
