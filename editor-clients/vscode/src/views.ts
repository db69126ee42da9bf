// The extension's views, wired to VS Code: the session view (turns, their files, your own edits, the
// sessions), the directive panel, the directive CodeLenses, the read-only `turnback-image:` documents
// the diff editor shows, and the confirmation (a modal, or for a long plan a short modal beside a
// scrollable preview). What they show is built by the modules without `vscode`.

import * as crypto from "node:crypto";
import * as vscode from "vscode";

import { directiveNodes } from "./directives";
import { lineageNode, sessionNames } from "./fork";
import type { FlowUi } from "./flows";
import { failureMessage } from "./flows";
import { IMAGE_SCHEME, imageText, parseImageQuery } from "./images";
import { isLong, planHtml, READ_WHOLE_PLAN, shortConfirmation } from "./preview";
import type { DiffChange, SessionSummary } from "./protocol";
import { Commands, dialogDetail, directiveLenses, firstLine, mentionsPath, sessionTree } from "./render";
import { wholeRowTooltip } from "./tree";
import type { Confirmation, TreeNode } from "./render";
import { log, rt } from "./runtime";

export function workspaceRoot(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

const TREE_ICONS: Record<string, string> = {
    "turnback.turn.directive": "wand",
    "turnback.turn.running": "loading~spin",
    "turnback.lineage": "type-hierarchy",
    "turnback.session": "git-branch",
    "turnback.session.frozen": "lock",
    "turnback.useredits": "person",
    "turnback.viewing": "arrow-left",
    "turnback.directive": "comment-discussion",
    "turnback.directive.running": "loading~spin",
    "turnback.directive.attempt": "debug-step-back",
};

function toItem(node: TreeNode): vscode.TreeItem {
    const item = new vscode.TreeItem(node.label, !node.children?.length ? vscode.TreeItemCollapsibleState.None
        : node.expanded ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = wholeRowTooltip(node);
    item.contextValue = node.contextValue;
    if (node.diff) {
        item.resourceUri = vscode.Uri.parse(node.diff.uri);
        item.command = { command: Commands.showDiff, title: "Show the diff", arguments: [node.diff] };
    } else if (node.sessionId) {
        item.iconPath = new vscode.ThemeIcon(TREE_ICONS[node.contextValue] ?? "git-branch");
        item.command = { command: Commands.openSession, title: "Open the session", arguments: [node.sessionId] };
    } else if (node.contextValue === "turnback.viewing") {
        item.iconPath = new vscode.ThemeIcon("arrow-left");
        item.command = { command: Commands.showLiveSession, title: "Back to this session" };
    } else if (node.contextValue.startsWith("turnback.directive") && node.uri && node.turn === undefined) {
        item.iconPath = new vscode.ThemeIcon(TREE_ICONS[node.contextValue] ?? "comment-discussion");
        item.command = { command: "vscode.open", title: "Open", arguments: [vscode.Uri.parse(node.uri)] };
    } else {
        item.iconPath = new vscode.ThemeIcon(TREE_ICONS[node.contextValue] ?? "comment-discussion");
    }
    return item;
}

/** Every session's name: its first prompt (a worktree fork's session lives in another folder). */
async function namesOf(sessions: SessionSummary[]): Promise<Record<string, string>> {
    const api = rt.api;
    const prompts: Record<string, string[]> = {};
    if (!api) {
        return {};
    }
    await Promise.all(sessions.map(async (s) => {
        try {
            prompts[s.sessionId] = ((await api.sessionLog(s.current ? undefined : s.sessionId)).turns ?? []).map((t) => t.prompt);
        } catch {
            // another folder's session: named by its id
        }
    }));
    return sessionNames(sessions, prompts);
}

export class SessionTreeProvider implements vscode.TreeDataProvider<TreeNode> {
    private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
    readonly onDidChangeTreeData = this.emitter.event;
    private timer: NodeJS.Timeout | undefined;

    refresh(): void {
        this.emitter.fire(undefined);
    }

    private shown: string | undefined;

    /** Coalesce bursts of status notifications and file events, and redraw only when what the view
     *  shows changed: a redraw under the pointer swallows a click on a row's button. */
    refreshSoon(): void {
        if (this.timer) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => void this.refreshIfChanged(), 400);
    }

    private async refreshIfChanged(): Promise<void> {
        const api = rt.api;
        if (!api || this.shown === undefined) {
            this.refresh();
            return;
        }
        try {
            const now = await this.signature();
            if (now !== this.shown) {
                this.refresh();
            }
        } catch {
            this.refresh();
        }
    }

    /** What the view shows, as text: the log, your edits, the sessions. */
    private async signature(): Promise<string> {
        const api = rt.api!;
        const sid = rt.viewing;
        const [log, edits, sessions] = await Promise.all([
            api.sessionLog(sid),
            api.diff({ since: 1, text: false, ...(sid ? { sessionId: sid } : {}) }).then((d) => d.changes.filter((c) => c.source === "user"), () => []),
            api.sessionList().then((r) => r.sessions ?? [], () => []),
        ]);
        return JSON.stringify([sid, log, edits, sessions]);
    }

    getTreeItem(node: TreeNode): vscode.TreeItem {
        return toItem(node);
    }

    async getChildren(node?: TreeNode): Promise<TreeNode[]> {
        if (node) {
            return node.children ?? [];
        }
        const api = rt.api;
        if (!api || !rt.client?.isRunning()) {
            return [];
        }
        const root = workspaceRoot();
        const sid = rt.viewing;
        try {
            const log = await api.sessionLog(sid);
            const edits: DiffChange[] = log.turns?.length
                ? (await api.diff({ since: 1, text: false, ...(sid ? { sessionId: sid } : {}) }).catch(() => undefined))
                    ?.changes.filter((c) => c.source === "user") ?? []
                : [];
            const turns = sessionTree(log, root, { edits, ...(sid ? { sessionId: sid } : {}) });
            const sessions = await api.sessionList().then((r) => r.sessions ?? [], () => [] as SessionSummary[]);
            this.shown = JSON.stringify([sid, log, edits, sessions]);
            const lineage = lineageNode(sessions, sessions.length > 1 ? await namesOf(sessions) : {});
            const banner: TreeNode[] = sid ? [{
                id: "viewing", label: `Reading ${log.turns?.[0] ? `“${firstLine(log.turns[0].prompt, 50)}”` : "another session"}`,
                description: `${log.frozen ? "frozen" : "not the live session"}, read only · click to go back`,
                tooltip: `Reading ${log.turns?.[0] ? `“${(log.turns[0].prompt ?? "").trim()}”` : "another session"}: ` +
                    `${log.frozen ? "frozen" : "not the live session"}, read only. Click to go back to this window's session.`,
                contextValue: "turnback.viewing",
            }] : [];
            return [...banner, ...(lineage ? [lineage] : []), ...turns];
        } catch (err) {
            log(failureMessage("reading the session log", err));
            if (sid) {
                rt.viewing = undefined;
            }
            return [];
        }
    }
}

export class DirectiveTreeProvider implements vscode.TreeDataProvider<TreeNode> {
    private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
    readonly onDidChangeTreeData = this.emitter.event;

    refresh(): void {
        this.emitter.fire(undefined);
    }

    getTreeItem(node: TreeNode): vscode.TreeItem {
        return toItem(node);
    }

    getChildren(node?: TreeNode): TreeNode[] {
        return node ? node.children ?? [] : directiveNodes(rt.state.allDirectives(), workspaceRoot());
    }
}

export class DirectiveLensProvider implements vscode.CodeLensProvider {
    private readonly emitter = new vscode.EventEmitter<void>();
    readonly onDidChangeCodeLenses = this.emitter.event;

    changed(): void {
        this.emitter.fire();
    }

    provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
        const out: vscode.CodeLens[] = [];
        for (const d of rt.state.directivesFor(doc.uri.toString())) {
            const line = Math.max(0, Math.min(d.anchor.line, doc.lineCount - 1));
            const range = new vscode.Range(line, 0, line, 0);
            for (const spec of directiveLenses(d)) {
                out.push(new vscode.CodeLens(range, {
                    title: spec.title,
                    tooltip: spec.tooltip,
                    command: spec.command ?? "",
                    arguments: spec.arguments,
                }));
            }
        }
        return out;
    }
}

/** The bytes of one image, as a read-only document (`turnback-image:/app.py?image=…&label=…`). */
export class ImageContentProvider implements vscode.TextDocumentContentProvider {
    async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
        const ref = parseImageQuery(uri.path, uri.query);
        if (!ref.image || !rt.api) {
            return imageText(undefined, ref);
        }
        try {
            return imageText(await rt.api.imageRead({ image: ref.image, ...(ref.sessionId ? { sessionId: ref.sessionId } : {}) }), ref);
        } catch (err) {
            return `(turnback could not read ${ref.path} ${ref.label}: ${failureMessage("reading the image", err)})\n`;
        }
    }
}

export const IMAGES = IMAGE_SCHEME;

/** The whole plan, beside a short modal: a webview that scrolls, with the same buttons. */
function openPreview(c: Confirmation): { panel: vscode.WebviewPanel; choice: Promise<string | undefined> } {
    const panel = vscode.window.createWebviewPanel("turnback.plan", `Turnback: the plan (${c.action})`,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, { enableScripts: true, retainContextWhenHidden: true });
    panel.webview.html = planHtml(c, { csp: panel.webview.cspSource, nonce: crypto.randomBytes(16).toString("hex") });
    const choice = new Promise<string | undefined>((resolve) => {
        panel.webview.onDidReceiveMessage((m: { choice?: string; size?: { width: number; height: number; small: boolean } }) => {
            if (m.size) {
                log(`turnback: the plan preview is ${m.size.width}×${m.size.height}${m.size.small ? ": too small to show the plan" : ""}`);
            }
            if (m.choice) {
                resolve(m.choice === "Cancel" ? undefined : m.choice);
                panel.dispose();
            }
        });
        panel.onDidDispose(() => resolve(undefined));
    });
    return { panel, choice };
}

async function modal(c: Confirmation, detail: string): Promise<string | undefined> {
    const buttons = [c.action, ...(c.alternative ? [c.alternative] : []), ...(c.more ?? [])];
    return vscode.window.showWarningMessage(c.title, { modal: true, detail: dialogDetail(detail) }, ...buttons);
}

/** The confirmation: one modal when the plan is short; else a short modal beside the whole plan. */
export async function confirmInWindow(c: Confirmation): Promise<string | undefined> {
    log(`${c.title}\n${c.detail}\n`);
    // Unsaved editors over files the plan touches would end in a conflict: say so in the dialog.
    const dirty = vscode.workspace.textDocuments
        .filter((d) => d.isDirty && d.uri.scheme === "file")
        .map((d) => vscode.workspace.asRelativePath(d.uri, false))
        .filter((rel) => mentionsPath(c.detail, rel));
    const warned = dirty.length
        ? { ...c, detail: `${c.detail}\n\n⚠ Unsaved changes in the editor: ${dirty.join(", ")}. Save or revert them first, or the editor will show a conflict.` }
        : c;
    if (!isLong(warned)) {
        return modal(warned, warned.detail);
    }
    const { panel, choice } = openPreview(warned);
    const short = shortConfirmation(warned);
    const answer = await modal(short, short.detail);
    if (answer === READ_WHOLE_PLAN) {
        panel.reveal(vscode.ViewColumn.Beside, false);
        return choice;
    }
    panel.dispose();
    return answer;
}

/** The unsaved documents of the workspace, as file URIs (`dirty`: the server refuses to write them). */
export function dirtyUris(): string[] {
    return vscode.workspace.textDocuments.filter((d) => d.isDirty && d.uri.scheme === "file").map((d) => d.uri.toString());
}

export function flowUi(): FlowUi {
    return {
        confirm: confirmInWindow,
        during<T>(title: string, work: (workDoneToken?: string) => Promise<T>): Promise<T> {
            const c = rt.client;
            if (!c) {
                return work(undefined);
            }
            // The server reports $/progress on a token the request carries; show it as a notification.
            const token = `turnback-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
            return Promise.resolve(vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, async (progress) => {
                const { WorkDoneProgress } = await import("vscode-languageclient/node");
                const listening = c.onProgress(WorkDoneProgress.type, token, (p) => {
                    if (p.kind !== "end" && p.message) {
                        progress.report({ message: p.message });
                    }
                });
                try {
                    return await work(token);
                } finally {
                    listening.dispose();
                }
            }));
        },
    };
}
