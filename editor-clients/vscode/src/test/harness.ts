// Spawns the REAL `turnback serve` and talks to it with vscode-jsonrpc, the way VS Code's language
// client does: initialize with VS Code-like capabilities, initialized, then requests and notifications.

import { execFileSync, spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import type { MessageConnection } from "vscode-jsonrpc/node";

import { findExecutable, splitCommandLine } from "../config";
import { TurnbackApi } from "../protocol";
import type { InitializationOptions } from "../protocol";
import { SessionState } from "../state";

export function serverCommandLine(): string[] {
    const line = process.env.TURNBACK_SERVER?.trim();
    return line ? splitCommandLine(line) : ["turnback", "serve"];
}

/** VS Code 1.8x's client capabilities, trimmed to what matters to turnback. */
export const VSCODE_CAPABILITIES = {
    general: { positionEncodings: ["utf-16"], markdown: { parser: "marked", version: "1.1.0" } },
    workspace: {
        applyEdit: true,
        workspaceFolders: true,
        configuration: true,
        didChangeConfiguration: { dynamicRegistration: true },
        didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true },
        executeCommand: { dynamicRegistration: true },
        codeLens: { refreshSupport: true },
    },
    textDocument: {
        synchronization: { dynamicRegistration: true, willSave: true, willSaveWaitUntil: true, didSave: true },
        codeLens: { dynamicRegistration: true },
    },
    window: {
        workDoneProgress: true,
        showMessage: { messageActionItem: { additionalPropertiesSupport: true } },
        showDocument: { support: true },
    },
};

export interface Notification {
    method: string;
    params: any;
    at: number;
}

export class Session {
    readonly api: TurnbackApi;
    readonly state = new SessionState();
    readonly notifications: Notification[] = [];
    readonly serverRequests: { method: string; params: any }[] = [];
    stderr = "";
    exited: number | null | undefined;
    initializeResult: any;

    constructor(readonly root: string, readonly proc: ChildProcessWithoutNullStreams, readonly conn: MessageConnection) {
        this.api = new TurnbackApi(conn);
    }

    uri(rel: string): string {
        return pathToFileURL(path.join(this.root, rel)).href;
    }

    file(rel: string): string {
        return path.join(this.root, rel);
    }

    write(rel: string, text: string | Buffer): void {
        fs.mkdirSync(path.dirname(this.file(rel)), { recursive: true });
        fs.writeFileSync(this.file(rel), text);
    }

    read(rel: string): string | undefined {
        try {
            return fs.readFileSync(this.file(rel), "utf8");
        } catch {
            return undefined;
        }
    }

    /** What VS Code sends when a document opens. */
    async didOpen(rel: string, languageId = "plaintext"): Promise<void> {
        await this.conn.sendNotification("textDocument/didOpen", {
            textDocument: { uri: this.uri(rel), languageId, version: 1, text: this.read(rel) ?? "" },
        });
    }

    /** Write through "the editor": the file on disk, then didSave with the text (includeText). */
    async save(rel: string, text: string): Promise<void> {
        this.write(rel, text);
        await this.conn.sendNotification("textDocument/didSave", { textDocument: { uri: this.uri(rel) }, text });
    }

    /** Resolve with the first notification (from index `since`) that matches. */
    async waitFor(method: string, pred: (params: any) => boolean = () => true, opts: { since?: number; timeoutMs?: number } = {}): Promise<any> {
        const deadline = Date.now() + (opts.timeoutMs ?? 10000);
        let i = opts.since ?? 0;
        for (;;) {
            for (; i < this.notifications.length; i++) {
                const n = this.notifications[i];
                if (n.method === method && pred(n.params)) {
                    return n.params;
                }
            }
            if (Date.now() > deadline) {
                throw new Error(`no ${method} notification matched within ${opts.timeoutMs ?? 10000} ms; got: ` +
                    JSON.stringify(this.notifications.slice(opts.since ?? 0).map((n) => [n.method, n.params]), null, 1).slice(0, 3000) +
                    `\nserver stderr:\n${this.stderr.slice(-3000)}`);
            }
            await new Promise((r) => setTimeout(r, 20));
        }
    }

    /** A round trip, so every notification the server sent before answering has arrived. */
    async sync(): Promise<void> {
        await this.api.sessionInfo();
    }

    async close(): Promise<void> {
        if (this.exited === undefined) {
            try {
                await withTimeout(this.conn.sendRequest("shutdown"), 5000);
                await this.conn.sendNotification("exit");
            } catch {
                // fall through to kill
            }
            await new Promise<void>((resolve) => {
                if (this.exited !== undefined) {
                    return resolve();
                }
                const t = setTimeout(() => {
                    this.proc.kill("SIGKILL");
                    resolve();
                }, 5000);
                this.proc.once("exit", () => {
                    clearTimeout(t);
                    resolve();
                });
            });
        }
        this.conn.dispose();
    }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
        p.then((v) => {
            clearTimeout(t);
            resolve(v);
        }, (e) => {
            clearTimeout(t);
            reject(e);
        });
    });
}

export function tempWorkspace(prefix = "turnback-vscode-"): string {
    return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

/** Start the real server in `root` and run the LSP handshake. */
export async function startSession(root: string, initializationOptions: InitializationOptions = {}): Promise<Session> {
    const [cmd, ...args] = serverCommandLine();
    const proc = spawn(cmd, args, { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
    const spawnError = new Promise<never>((_, reject) => proc.once("error", reject));
    const conn = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
    const session = new Session(root, proc, conn);
    proc.stderr.on("data", (d: Buffer) => {
        session.stderr += d.toString();
    });
    proc.once("exit", (code) => {
        session.exited = code;
    });
    // vscode-jsonrpc calls the star handler only for methods without their own handler, so one star
    // handler records every notification and hands it on to what SessionState.attach registered.
    const handlers = new Map<string, (params: any) => void>();
    session.state.attach({ onNotification: (method, handler) => handlers.set(method, handler) });
    conn.onNotification((method: string, params: any) => {
        session.notifications.push({ method, params, at: Date.now() });
        handlers.get(method)?.(params);
    });
    conn.onRequest((method: string, params: any) => {
        session.serverRequests.push({ method, params });
        if (method === "workspace/configuration") {
            return (params?.items ?? []).map(() => null);
        }
        return null;
    });
    conn.listen();
    const rootUri = pathToFileURL(root).href;
    session.initializeResult = await Promise.race([
        spawnError,
        withTimeout(conn.sendRequest("initialize", {
            processId: process.pid,
            clientInfo: { name: "Visual Studio Code", version: "1.82.0" },
            locale: "en",
            rootPath: root,
            rootUri,
            capabilities: VSCODE_CAPABILITIES,
            initializationOptions,
            trace: "off",
            workspaceFolders: [{ uri: rootUri, name: path.basename(root) }],
        }), 20000),
    ]).catch((err) => {
        throw new Error(`initialize failed (${[cmd, ...args].join(" ")}): ${String(err?.message ?? err)}\nstderr:\n${session.stderr}`);
    });
    await conn.sendNotification("initialized", {});
    return session;
}

/** The Python that runs the server: `<python> -m turnback` as given, else the console script's shebang. */
export function serverPython(): string {
    const [cmd, ...args] = serverCommandLine();
    if (args[0] === "-m") {
        return cmd;
    }
    const exe = cmd.includes("/") ? cmd : findExecutable(cmd);
    if (!exe) {
        throw new Error(`cannot find ${cmd} on PATH`);
    }
    const first = fs.readFileSync(exe, "utf8").split("\n")[0];
    if (!first.startsWith("#!")) {
        throw new Error(`${exe} has no #! line naming its Python`);
    }
    return first.slice(2).trim().split(/\s+/)[0];
}

/** Leave a pending recovery record in `root`'s store (fixtures/plant_recovery.py); returns its id. */
export function plantRecovery(root: string, rel: string, backupText: string, reason?: string): string {
    const script = path.resolve(__dirname, "..", "..", "..", "fixtures", "plant_recovery.py");
    const out = execFileSync(serverPython(), [script, root, rel, backupText, ...(reason ? [reason] : [])], { encoding: "utf8" });
    return out.trim();
}
