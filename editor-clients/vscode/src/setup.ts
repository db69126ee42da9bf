// Finding the server the way the user's terminal would (issue 26 §7). VS Code's extension host does
// not always have the PATH of the user's shell: code-server started before `export PATH=…`, a
// desktop launched from a menu. So a bare `turnback` is looked up, in order, on the extension
// host's PATH, on the PATH of the user's login shell (`$SHELL -ilc`, what a new terminal gets), in
// the workspace's own virtual environment (`.venv/bin`, `venv/bin`: the install the docs describe),
// and in `~/.local/bin` (pip --user, pipx). When none has it, the message says exactly which setting
// to set and what to put there. No `vscode` import.

import { execFileSync } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";

import { findExecutable } from "./config";
import type { ServerCommand } from "./config";

export type FoundBy = "as-given" | "path" | "login-shell" | "workspace-venv" | "user-local";

export interface Resolved {
    command: string;
    args: string[];
    foundBy: FoundBy;
}

export interface Lookup {
    /** The command and where it was looked for, when it was not found. */
    tried: string[];
}

export interface ResolveOptions {
    env?: NodeJS.ProcessEnv;
    root?: string;
    home?: string;
    /** The login shell's answer for a program name (injectable for tests); default: ask $SHELL. */
    loginShell?: (program: string) => string | undefined;
}

const MARK = "__turnback_found__";

/** Where the user's login shell finds `program` (what a new terminal would run), or undefined. */
export function loginShellWhich(program: string, env: NodeJS.ProcessEnv = process.env, timeoutMs = 4000): string | undefined {
    const shell = env.SHELL || "/bin/sh";
    if (process.platform === "win32" || !/^[\w.+-]+$/.test(program)) {
        return undefined;
    }
    try {
        const out = execFileSync(shell, ["-ilc", `printf '\\n${MARK}%s\\n' "$(command -v ${program})"`],
            { env: { ...env, TERM: "dumb" }, timeout: timeoutMs, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
        const line = out.split("\n").reverse().find((l) => l.startsWith(MARK));
        const found = line?.slice(MARK.length).trim();
        return found && path.isAbsolute(found) ? found : undefined;
    } catch {
        return undefined;  // no such shell, a slow rc file, an interactive prompt: not found this way
    }
}

/** The server's command with its program resolved, or where it was looked for. */
export function resolveServer(cmd: ServerCommand, opts: ResolveOptions = {}): Resolved | Lookup {
    const env = opts.env ?? process.env;
    const root = opts.root ?? process.cwd();
    const home = opts.home ?? os.homedir();
    const tried: string[] = [];
    const program = cmd.command;
    if (program.includes("/") || program.includes("\\")) {
        const found = findExecutable(program, env, root);
        tried.push(path.resolve(root, program));
        return found ? { command: found, args: cmd.args, foundBy: "as-given" } : { tried };
    }
    const onPath = findExecutable(program, env, root);
    tried.push("VS Code's PATH");
    if (onPath) {
        return { command: onPath, args: cmd.args, foundBy: "path" };
    }
    const shell = (opts.loginShell ?? ((p) => loginShellWhich(p, env)))(program);
    tried.push(`the PATH of your login shell (${env.SHELL || "/bin/sh"})`);
    if (shell) {
        return { command: shell, args: cmd.args, foundBy: "login-shell" };
    }
    for (const venv of [".venv", "venv"]) {
        const candidate = path.join(root, venv, "bin", program);
        tried.push(candidate);
        const found = findExecutable(candidate, env, root);
        if (found) {
            return { command: found, args: cmd.args, foundBy: "workspace-venv" };
        }
    }
    const local = path.join(home, ".local", "bin", program);
    tried.push(local);
    const found = findExecutable(local, env, root);
    return found ? { command: found, args: cmd.args, foundBy: "user-local" } : { tried };
}

export function isResolved(r: Resolved | Lookup): r is Resolved {
    return (r as Resolved).command !== undefined;
}

/** What to tell the user when the server is nowhere (a notification with two buttons, "Choose
 *  Executable…" and "Open Setting"): what is missing and where it was looked for, in two sentences. */
export function notFoundMessage(cmd: ServerCommand, tried: string[]): string {
    return `turnback: the server program “${cmd.command}” was not found. Looked in: ${tried.join(", ")}.`;
}

/** The longer word, for the output channel and the status bar's tooltip: how to install it, and
 *  what the setting holds. */
export function notFoundHelp(root?: string, env: NodeJS.ProcessEnv = process.env): string {
    const example = root ? path.join(root, ".venv", "bin", "turnback") : "/path/to/.venv/bin/turnback";
    return `Install it (python3 -m venv .venv && .venv/bin/pip install turnback, or pip install -e . in its repository), ` +
        `then choose its program with “Choose Executable…”, or set turnback.server.command to its full path, ` +
        `for example ["${example}", "serve"]. VS Code's PATH: ${env.PATH ?? ""}`;
}

/** The setting a chosen program goes into: a Python interpreter runs `-m turnback serve`
 *  (turnback.server.python), anything else is the server's program (turnback.server.command). */
export function settingForProgram(program: string): { key: "server.python" | "server.command"; value: string | string[] } {
    return /^python[0-9.]*(\.exe)?$/i.test(path.basename(program))
        ? { key: "server.python", value: program }
        : { key: "server.command", value: [program, "serve"] };
}

/** A line for the output channel: how the program was found. */
export function foundNote(r: Resolved): string {
    const how: Record<FoundBy, string> = {
        "as-given": "as given in turnback.server.command",
        path: "on VS Code's PATH",
        "login-shell": "on your login shell's PATH (VS Code's own PATH does not have it)",
        "workspace-venv": "in the workspace's virtual environment",
        "user-local": "in ~/.local/bin",
    };
    return `turnback: using ${r.command} (found ${how[r.foundBy]})`;
}
