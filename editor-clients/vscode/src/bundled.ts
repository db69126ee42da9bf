// The server this extension brings (issue 41). A platform .vsix made by tools/build-dist carries
// turnback and its libraries in bundled/libs (common/ plus one cpXY/ per CPython version, for the
// compiled xxhash, zstandard, psutil, cbor2) and bundled/tool/probe.py. When no installed turnback
// is found (an installed one always wins: setup.ts), the server runs as `<python> -m turnback serve`
// with PYTHONPATH=libs/cpXY:libs/common, <python> being the Python extension's interpreter, else
// python3 on PATH. When none fits, "Install into a private environment" makes a venv under the
// extension's global storage and installs the bundled wheel into it. No `vscode` import: the
// plain-Node tests drive all of it (src/test/bundled.test.ts); bundledui.ts is the VS Code side.

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import { findExecutable } from "./config";

export const SUPPORTED = "CPython 3.10 to 3.13";

export interface Probe {
    executable: string;
    version: string;
    implementation: string;
    machine: string;
    system: string;
    tag: string;
    bundled: string[];
    ok: boolean;
    reason?: "version" | "import";
    error?: string;
}

/** Where an interpreter came from, in the words a message uses. */
export interface Candidate {
    python: string;
    from: string;
}

export interface Launch {
    command: string;
    args: string[];
    env: NodeJS.ProcessEnv;
    /** For the output channel: which interpreter, and why this one. */
    note: string;
    /** `<global storage>/bin/turnback` once written (bundledui.ts): the terminal's turnback. */
    shim?: string;
}

export type Outcome =
    | { kind: "launch"; launch: Launch; probe?: Probe }
    | { kind: "no-python"; tried: string[] }
    | { kind: "unfit"; probes: { candidate: Candidate; probe?: Probe; error?: string }[] }
    | { kind: "wrong-platform"; built: string; here: string };

/** The .vsix's own record of what it carries (bundled/target.json), or undefined outside a release. */
export function bundledTarget(extensionPath: string): { target: string; pythons: string[]; version: string } | undefined {
    try {
        return JSON.parse(fs.readFileSync(path.join(extensionPath, "bundled", "target.json"), "utf8"));
    } catch {
        return undefined;
    }
}

/** This machine in VS Code's target words (linux-x64, darwin-arm64, ...). */
export function hostTarget(platform = process.platform, arch = process.arch): string {
    return `${platform}-${arch}`;
}

export function runProbe(python: string, extensionPath: string, timeoutMs = 15000): Promise<Probe> {
    const probe = path.join(extensionPath, "bundled", "tool", "probe.py");
    return new Promise((resolve, reject) => {
        // -I: the user's PYTHONPATH and user site do not decide what imports
        execFile(python, ["-I", probe], { timeout: timeoutMs, encoding: "utf8" }, (err, stdout, stderr) => {
            const line = (stdout ?? "").trim().split("\n").pop() ?? "";
            try {
                resolve(JSON.parse(line) as Probe);
            } catch {
                reject(new Error(`${python} could not run the probe: ${(stderr || String(err ?? "no output")).trim().split("\n").pop()}`));
            }
        });
    });
}

export function libsPath(extensionPath: string, tag: string): string {
    const libs = path.join(extensionPath, "bundled", "libs");
    return [path.join(libs, tag), path.join(libs, "common")].join(path.delimiter);
}

/** The server command for an interpreter the probe accepted. PYTHONPATH, not sys.path: the
 *  server's own children (`python -m turnback.collect.child`, hooks) inherit it. */
export function bundledLaunch(probe: Probe, extensionPath: string, from: string, env: NodeJS.ProcessEnv = process.env): Launch {
    return {
        command: probe.executable,
        args: ["-m", "turnback", "serve"],
        env: { ...env, PYTHONPATH: libsPath(extensionPath, probe.tag), PYTHONNOUSERSITE: "1" },
        note: `turnback: using the server bundled with the extension, run by ${probe.executable} ` +
            `(Python ${probe.version}, ${from})`,
    };
}

// -----------------------------------------------------------------------------------------------
// The private environment

export function privateVenv(storagePath: string): string {
    return path.join(storagePath, "server-venv");
}

const COMPLETE = ".turnback-complete";

/** The private environment's `turnback`, when a finished install of `version` is there (after an
 *  update of the extension, an older one is not used: the button installs the new one). */
export function privateProgram(storagePath: string, version?: string): string | undefined {
    const venv = privateVenv(storagePath);
    const program = path.join(venv, "bin", "turnback");
    let installed: string;
    try {
        installed = fs.readFileSync(path.join(venv, COMPLETE), "utf8").trim();
    } catch {
        return undefined;
    }
    if (version && installed !== `turnback ${version}`) {
        return undefined;
    }
    return findExecutable(program) ? program : undefined;
}

/** Decide how to run the server: the first interpreter that fits the bundle, else the private
 *  environment, else why not. `candidates` come in order of preference. */
export async function chooseServer(extensionPath: string, candidates: Candidate[], storagePath: string | undefined,
    env: NodeJS.ProcessEnv = process.env): Promise<Outcome> {
    const target = bundledTarget(extensionPath);
    const here = hostTarget();
    if (target && target.target !== here) {
        return { kind: "wrong-platform", built: target.target, here };
    }
    const probes: { candidate: Candidate; probe?: Probe; error?: string }[] = [];
    for (const candidate of candidates) {
        try {
            const probe = await runProbe(candidate.python, extensionPath);
            if (probe.ok) {
                return { kind: "launch", launch: bundledLaunch(probe, extensionPath, candidate.from, env), probe };
            }
            probes.push({ candidate, probe });
        } catch (err) {
            probes.push({ candidate, error: err instanceof Error ? err.message : String(err) });
        }
    }
    const program = storagePath ? privateProgram(storagePath, target?.version) : undefined;
    if (program) {
        return { kind: "launch", launch: { command: program, args: ["serve"], env: { ...env },
            note: `turnback: using the server in the extension's private environment (${program})` } };
    }
    if (candidates.length === 0) {
        return { kind: "no-python", tried: ["the Python extension's interpreter", "python3 on PATH"] };
    }
    return { kind: "unfit", probes };
}

/** The one message for an outcome that does not launch. */
export function outcomeMessage(outcome: Outcome): string {
    switch (outcome.kind) {
        case "launch":
            return outcome.launch.note;
        case "wrong-platform":
            return `turnback: this copy of the extension was built for ${outcome.built}, and this machine is ` +
                `${outcome.here}. ${outcome.here.startsWith("linux-") ? `Install turnback-${outcome.here}-*.vsix instead, or` : "The turnback server runs on Linux only; on this machine,"} ` +
                `install the server yourself (pip install turnback) and set turnback.server.command.`;
        case "no-python":
            return `turnback: the server bundled with this extension needs Python (${SUPPORTED}), and none was found ` +
                `(looked at ${outcome.tried.join(" and ")}). Install Python 3 (for example sudo apt install python3), ` +
                `then Restart Server.`;
        case "unfit": {
            const why = outcome.probes.map(({ candidate, probe, error }) => {
                if (!probe) {
                    return `${candidate.python} (${candidate.from}) did not run: ${error}`;
                }
                if (probe.reason === "import") {
                    return `${probe.executable} (Python ${probe.version}, ${candidate.from}) cannot load the bundled ` +
                        `libraries: ${probe.error}`;
                }
                return `${probe.executable} is ${probe.implementation === "cpython" ? "" : `${probe.implementation} `}` +
                    `Python ${probe.version} (${candidate.from})`;
            });
            return `turnback: the server bundled with this extension runs on ${SUPPORTED}, and ${why.join("; ")}. ` +
                `Install into a private environment (a virtual environment of the extension's own, with turnback ` +
                `and its libraries for your Python), or select a Python ${SUPPORTED.replace("CPython ", "")} interpreter.`;
        }
    }
}

// -----------------------------------------------------------------------------------------------
// Installing into the private environment

export interface InstallResult {
    ok: boolean;
    program?: string;
    message: string;
    log: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number; out: string }> {
    return new Promise((resolve) => {
        execFile(command, args, { env, timeout: timeoutMs, encoding: "utf8", maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
            const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : 1) : 0;
            resolve({ code, out: `${stdout ?? ""}${stderr ?? ""}${err && code === 1 && !stderr ? String(err) : ""}` });
        });
    });
}

/** The Python for a private environment: 3.10 or newer, from the candidates or PATH. */
export async function privatePython(candidates: Candidate[], extensionPath: string,
    env: NodeJS.ProcessEnv = process.env): Promise<{ python: string; version: string } | undefined> {
    const names = ["python3.13", "python3.12", "python3.11", "python3.10", "python3"];
    const pythons = [...candidates.map((c) => c.python), ...names.map((n) => findExecutable(n, env)).filter((p): p is string => !!p)];
    for (const python of [...new Set(pythons)]) {
        try {
            const probe = await runProbe(python, extensionPath);
            const [major, minor] = probe.version.split(".").map(Number);
            if (probe.implementation === "cpython" && (major > 3 || (major === 3 && minor >= 10))) {
                return { python, version: probe.version };
            }
        } catch {
            // not this one
        }
    }
    return undefined;
}

/** Make the private environment and install the bundled wheel into it (its dependencies from the
 *  package registry). Nothing half-made stays: a failure removes the environment. */
export async function installPrivate(extensionPath: string, storagePath: string, python: string,
    env: NodeJS.ProcessEnv = process.env, timeoutMs = 600_000): Promise<InstallResult> {
    const venv = privateVenv(storagePath);
    let log = "";
    const fail = (message: string): InstallResult => {
        fs.rmSync(venv, { recursive: true, force: true });
        return { ok: false, message, log };
    };
    try {
        fs.mkdirSync(storagePath, { recursive: true });
        fs.rmSync(venv, { recursive: true, force: true });  // an unfinished one (no marker) is not kept
    } catch (err) {
        return { ok: false, message: `turnback: cannot write the extension's storage folder ${storagePath}: ` +
            `${err instanceof Error ? err.message : String(err)}. Make it writable, then try again.`, log };
    }
    const made = await run(python, ["-m", "venv", venv], env, timeoutMs);
    log += made.out;
    if (made.code !== 0) {
        return fail(/ensurepip|venv/.test(made.out)
            ? `turnback: ${python} cannot make a virtual environment (its venv module is missing: for example ` +
              `sudo apt install python3-venv), then try again.`
            : `turnback: making the private environment with ${python} failed: ${lastLine(made.out)}`);
    }
    const wheels = path.join(extensionPath, "bundled", "wheels");
    const wheel = fs.readdirSync(wheels).find((f) => /^turnback-.*\.whl$/.test(f));
    if (!wheel) {
        return fail(`turnback: this extension carries no turnback wheel (${wheels}); reinstall the extension.`);
    }
    const vpython = path.join(venv, "bin", "python");
    const pip = await run(vpython, ["-m", "pip", "install", "--disable-pip-version-check", "--find-links", wheels,
        path.join(wheels, wheel)], env, timeoutMs);
    log += pip.out;
    if (pip.code !== 0) {
        const offline = /Could not find a version|No matching distribution|Failed to establish|Temporary failure|Network is unreachable|Max retries/.test(pip.out);
        return fail(offline
            ? `turnback: installing into the private environment needs the package registry (turnback's libraries ` +
              `for this Python are not in the extension), and it could not be reached. Connect to the network and ` +
              `try again, or select a Python ${SUPPORTED.replace("CPython ", "")} interpreter, which runs the bundled ` +
              `server offline.`
            : `turnback: installing into the private environment failed: ${lastLine(pip.out)}`);
    }
    const program = path.join(venv, "bin", "turnback");
    const check = await run(program, ["--version"], env, 60_000);
    log += check.out;
    if (check.code !== 0) {
        return fail(`turnback: the private environment's server does not run: ${lastLine(check.out)}`);
    }
    fs.writeFileSync(path.join(venv, COMPLETE), `${check.out.trim()}\n`);
    return { ok: true, program, message: `turnback: installed ${check.out.trim()} into ${venv}`, log };
}

function lastLine(text: string): string {
    return text.trim().split("\n").filter((l) => l.trim()).pop() ?? "(no output)";
}

// -----------------------------------------------------------------------------------------------
// `turnback` for the integrated terminal and the agents' hooks

/** A `turnback` command that runs what the extension runs. Its own file name is `turnback`, so a
 *  `turnback hooks install AGENT` typed in VS Code's terminal writes this file's absolute path into
 *  the agent's settings (hooks/install.py), which stays right across extension updates: each start
 *  rewrites it. */
export function shimText(launch: Launch): string {
    const pythonPath = launch.env.PYTHONPATH;
    if (launch.args[0] !== "-m" || !pythonPath) {  // the private environment's own turnback
        return `#!/bin/sh\n# Written by the turnback VS Code extension: its private environment's server.\n` +
            `exec ${shellQuote(launch.command)} "$@"\n`;
    }
    const libs = JSON.stringify(pythonPath.split(path.delimiter));
    return `#!${launch.command}\n` +
        `# Written by the turnback VS Code extension at each start: the server bundled with it, run by this Python.\n` +
        `import os, sys\nLIBS = ${libs}\n` +
        `os.environ["PYTHONPATH"] = os.pathsep.join(LIBS)\nsys.path[0:0] = LIBS\n` +
        `from turnback.cli.fast import main\nsys.exit(main())\n`;
}

function shellQuote(word: string): string {
    return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Write `<storage>/bin/turnback` when it changed (write then rename: never half a file). Returns
 *  its folder, or undefined when the storage cannot be written (then there is no terminal command). */
export function writeShim(storagePath: string, launch: Launch): string | undefined {
    const bin = path.join(storagePath, "bin");
    const file = path.join(bin, "turnback");
    const text = shimText(launch);
    try {
        if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === text) {
            return bin;
        }
        fs.mkdirSync(bin, { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, text, { mode: 0o755 });
        fs.renameSync(tmp, file);
        return bin;
    } catch {
        return undefined;
    }
}
