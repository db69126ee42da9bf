// Settings → how to start the server and what to pass as initializationOptions. No `vscode` here.

import * as fs from "node:fs";
import * as path from "node:path";
import type { InitializationOptions } from "./protocol";

/** The `turnback.*` settings, read by the extension from the workspace configuration. */
export interface Settings {
    serverCommand?: string[] | null;
    serverPython?: string | null;
    storeKind?: "heads" | "pid" | null;
    storePath?: string | null;
    maxFileBytes?: number | null;
    sweep?: boolean | null;
    graceHeads?: number | null;
}

export interface ServerCommand {
    command: string;
    args: string[];
}

export const DEFAULT_COMMAND = ["turnback", "serve"];

export const NOT_INSTALLED =
    "turnback is not installed: pip install turnback, or set turnback.server.command";

/** `turnback.server.python` wins (`<python> -m turnback serve`), then `turnback.server.command`. */
export function serverCommand(settings: Settings): ServerCommand {
    const python = settings.serverPython?.trim();
    if (python) {
        return { command: python, args: ["-m", "turnback", "serve"] };
    }
    const cmd = (settings.serverCommand ?? []).filter((part) => typeof part === "string" && part.length > 0);
    const line = cmd.length > 0 ? cmd : DEFAULT_COMMAND;
    return { command: line[0], args: line.slice(1) };
}

/** Only the options that are set; the server supplies the defaults of the rest. */
export function initializationOptions(settings: Settings): InitializationOptions {
    const out: InitializationOptions = {};
    const store: NonNullable<InitializationOptions["store"]> = {};
    if (settings.storeKind) {
        store.kind = settings.storeKind;
    }
    if (settings.storePath && settings.storePath.trim()) {
        store.path = settings.storePath.trim();
    }
    if (Object.keys(store).length) {
        out.store = store;
    }
    const capture: NonNullable<InitializationOptions["capture"]> = {};
    if (typeof settings.maxFileBytes === "number") {
        capture.maxFileBytes = settings.maxFileBytes;
    }
    if (typeof settings.sweep === "boolean") {
        capture.sweep = settings.sweep;
    }
    if (Object.keys(capture).length) {
        out.capture = capture;
    }
    if (typeof settings.graceHeads === "number") {
        out.collect = { graceHeads: settings.graceHeads };
    }
    return out;
}

/**
 * Where `command` would be found, or undefined. A command with a path separator is checked as
 * given (relative to `cwd`); a bare name is looked up on PATH (with PATHEXT on Windows).
 */
export function findExecutable(command: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string | undefined {
    const isWin = process.platform === "win32";
    const exts = isWin ? (env.PATHEXT ?? ".EXE;.CMD;.BAT;.COM").split(";").concat([""]) : [""];
    const check = (candidate: string): string | undefined => {
        for (const ext of exts) {
            const full = candidate + ext;
            try {
                const st = fs.statSync(full);
                if (st.isFile()) {
                    if (!isWin) {
                        fs.accessSync(full, fs.constants.X_OK);
                    }
                    return full;
                }
            } catch {
                // not here
            }
        }
        return undefined;
    };
    if (command.includes("/") || (isWin && command.includes("\\"))) {
        return check(path.resolve(cwd, command));
    }
    for (const dir of (env.PATH ?? "").split(path.delimiter)) {
        if (!dir) {
            continue;
        }
        const found = check(path.join(dir, command));
        if (found) {
            return found;
        }
    }
    return undefined;
}

/** True when a start failure means the program is missing (spawn ENOENT, in any of its shapes). */
export function isNotInstalled(err: unknown): boolean {
    const code = (err as { code?: unknown } | undefined)?.code;
    if (code === "ENOENT") {
        return true;
    }
    const text = err instanceof Error ? err.message : String(err);
    return /\bENOENT\b/.test(text);
}

/** The message for a start failure: the install hint when the program is missing. */
export function startFailureMessage(err: unknown, cmd: ServerCommand): string {
    if (isNotInstalled(err)) {
        return `${NOT_INSTALLED} (tried: ${[cmd.command, ...cmd.args].join(" ")})`;
    }
    const text = err instanceof Error ? err.message : String(err);
    return `turnback server failed to start (${[cmd.command, ...cmd.args].join(" ")}): ${text}`;
}

/** Split a command line from an environment variable (whitespace; single or double quotes). */
export function splitCommandLine(line: string): string[] {
    const out: string[] = [];
    const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
    let m: RegExpExecArray | null;
    while ((m = re.exec(line)) !== null) {
        out.push(m[1] ?? m[2] ?? m[3]);
    }
    return out;
}
