// The bundled server's choices (bundled.ts), with the real probe (python/probe.py) run by real
// interpreters over a small bundle made here: stub libraries stand in for the compiled wheels, so
// each case (fits, wrong version, libraries that do not load, no Python, wrong platform, offline
// private install) is decided by the same code a release .vsix runs.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { chooseServer, hostTarget, installPrivate, outcomeMessage, privateVenv, shimText, writeShim } from "../bundled";
import { findExecutable } from "../config";

const PROBE = path.resolve(__dirname, "..", "..", "..", "python", "probe.py");
const python3 = findExecutable("python3");

function pythonTag(python: string): string {
    return execFileSync(python, ["-c", "import sys; print('cp%d%d' % sys.version_info[:2])"], { encoding: "utf8" }).trim();
}

/** An extension folder with a bundle for `tags`; `broken` makes xxhash fail to import. */
function fakeExtension(tags: string[], opts: { broken?: boolean; target?: string } = {}): string {
    const ext = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-ext-"));
    const bundled = path.join(ext, "bundled");
    fs.mkdirSync(path.join(bundled, "tool"), { recursive: true });
    fs.copyFileSync(PROBE, path.join(bundled, "tool", "probe.py"));
    fs.writeFileSync(path.join(bundled, "target.json"), JSON.stringify({ target: opts.target ?? hostTarget(), pythons: [], version: "0.0.0" }));
    for (const tag of tags) {
        const dir = path.join(bundled, "libs", tag);
        fs.mkdirSync(dir, { recursive: true });
        for (const mod of ["cbor2", "psutil", "zstandard"]) {
            fs.writeFileSync(path.join(dir, `${mod}.py`), "");
        }
        fs.writeFileSync(path.join(dir, "xxhash.py"), opts.broken ? "raise ImportError('libc.musl-x86_64.so.1: cannot open shared object file')\n" : "");
    }
    const pkg = path.join(bundled, "libs", "common", "turnback");
    fs.mkdirSync(path.join(pkg, "cli"), { recursive: true });
    fs.writeFileSync(path.join(pkg, "__init__.py"), "__version__ = '0.0.0-test'\n");
    fs.writeFileSync(path.join(pkg, "cli", "__init__.py"), "");
    fs.writeFileSync(path.join(pkg, "cli", "fast.py"),
        "import os, sys\ndef main():\n    print('fake turnback', sys.argv[0], os.environ.get('PYTHONPATH'))\n    return 0\n");
    fs.writeFileSync(path.join(pkg, "__main__.py"), "import sys\nfrom turnback.cli.fast import main\nsys.exit(main())\n");
    return ext;
}

/** An interpreter that answers the probe as a Python 3.9 would (no 3.9 is needed on the machine). */
function python39(): string {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "turnback-py39-")), "python3.9");
    fs.writeFileSync(file, `#!/bin/sh\necho '{"executable": "${file}", "version": "3.9.18", "implementation": "cpython", ` +
        `"machine": "x86_64", "system": "Linux", "tag": "cp39", "bundled": ["cp310"], "ok": false, "reason": "version"}'\n`, { mode: 0o755 });
    return file;
}

test("an interpreter the bundle has libraries for runs the bundled server, with PYTHONPATH set", { skip: !python3 }, async () => {
    const ext = fakeExtension([pythonTag(python3!)]);
    const outcome = await chooseServer(ext, [{ python: python3!, from: "python3 on PATH" }], undefined);
    assert.equal(outcome.kind, "launch");
    if (outcome.kind !== "launch") { return; }
    assert.deepEqual(outcome.launch.args, ["-m", "turnback", "serve"]);
    assert.equal(outcome.launch.env.PYTHONPATH,
        [path.join(ext, "bundled", "libs", pythonTag(python3!)), path.join(ext, "bundled", "libs", "common")].join(path.delimiter));
    assert.match(outcome.launch.note, /bundled with the extension.*python3 on PATH/);
    // the command really runs the bundle's turnback
    const out = execFileSync(outcome.launch.command, ["-m", "turnback", "--version"], { env: outcome.launch.env, encoding: "utf8" });
    assert.match(out, /^fake turnback/);
});

test("the first fitting candidate wins: a Python 3.9 from the Python extension, then python3", { skip: !python3 }, async () => {
    const ext = fakeExtension([pythonTag(python3!)]);
    const outcome = await chooseServer(ext, [{ python: python39(), from: "the Python extension's interpreter" },
        { python: python3!, from: "python3 on PATH" }], undefined);
    assert.equal(outcome.kind, "launch");
});

test("Python 3.9 alone: one message naming it, the supported versions and the private environment", async () => {
    const ext = fakeExtension(["cp310"]);
    const py = python39();
    const outcome = await chooseServer(ext, [{ python: py, from: "the Python extension's interpreter" }], undefined);
    assert.equal(outcome.kind, "unfit");
    const message = outcomeMessage(outcome);
    assert.match(message, /runs on CPython 3\.10 to 3\.13/);
    assert.ok(message.includes(`${py} is Python 3.9.18 (the Python extension's interpreter)`), message);
    assert.match(message, /Install into a private environment/);
});

test("a version the bundle lacks (a newer Python) is unfit too", { skip: !python3 }, async () => {
    const ext = fakeExtension(["cp39"]);
    const outcome = await chooseServer(ext, [{ python: python3!, from: "python3 on PATH" }], undefined);
    assert.equal(outcome.kind, "unfit");
});

test("libraries that do not load (musl, an old glibc) say why", { skip: !python3 }, async () => {
    const ext = fakeExtension([pythonTag(python3!)], { broken: true });
    const outcome = await chooseServer(ext, [{ python: python3!, from: "python3 on PATH" }], undefined);
    assert.equal(outcome.kind, "unfit");
    assert.match(outcomeMessage(outcome), /cannot load the bundled libraries: ImportError: libc\.musl/);
});

test("no Python at all: the message says what to install", async () => {
    const outcome = await chooseServer(fakeExtension(["cp312"]), [], undefined);
    assert.equal(outcome.kind, "no-python");
    assert.match(outcomeMessage(outcome), /needs Python \(CPython 3\.10 to 3\.13\), and none was found.*sudo apt install python3.*Restart Server/);
});

test("a .vsix of another platform says which one to install", async () => {
    const other = hostTarget() === "linux-arm64" ? "linux-x64" : "linux-arm64";
    const outcome = await chooseServer(fakeExtension(["cp312"], { target: other }), [], undefined);
    assert.equal(outcome.kind, "wrong-platform");
    const message = outcomeMessage(outcome);
    assert.ok(message.includes(`built for ${other}`), message);
    assert.ok(hostTarget().startsWith("linux-") ? message.includes(`turnback-${hostTarget()}-*.vsix`) : /Linux only/.test(message), message);
});

test("a finished private environment is used when no interpreter fits; an unfinished one is not", async () => {
    const ext = fakeExtension(["cp39"]);
    const storage = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-storage-"));
    const bin = path.join(privateVenv(storage), "bin");
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(bin, "turnback"), "#!/bin/sh\n", { mode: 0o755 });
    const py = python39();
    assert.equal((await chooseServer(ext, [{ python: py, from: "x" }], storage)).kind, "unfit");
    fs.writeFileSync(path.join(privateVenv(storage), ".turnback-complete"), "turnback 0.0.0-older\n");
    assert.equal((await chooseServer(ext, [{ python: py, from: "x" }], storage)).kind, "unfit");  // an older release's
    fs.writeFileSync(path.join(privateVenv(storage), ".turnback-complete"), "turnback 0.0.0\n");
    const outcome = await chooseServer(ext, [{ python: py, from: "x" }], storage);
    assert.equal(outcome.kind, "launch");
    if (outcome.kind === "launch") {
        assert.deepEqual([outcome.launch.command, ...outcome.launch.args], [path.join(bin, "turnback"), "serve"]);
    }
});

test("the terminal's `turnback` runs the bundled server and is named turnback (for hook installs)", { skip: !python3 }, async () => {
    const ext = fakeExtension([pythonTag(python3!)]);
    const outcome = await chooseServer(ext, [{ python: python3!, from: "python3 on PATH" }], undefined);
    assert.equal(outcome.kind, "launch");
    if (outcome.kind !== "launch") { return; }
    const storage = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-storage-"));
    const bin = writeShim(storage, outcome.launch);
    assert.equal(bin, path.join(storage, "bin"));
    const out = execFileSync(path.join(bin!, "turnback"), ["--version"], { env: { PATH: "/usr/bin:/bin" }, encoding: "utf8" });
    assert.ok(out.startsWith(`fake turnback ${path.join(bin!, "turnback")} ${outcome.launch.env.PYTHONPATH}`), out);
    assert.equal(writeShim(storage, outcome.launch), bin);  // unchanged: not rewritten
    assert.match(shimText({ command: "/venv/bin/turnback", args: ["serve"], env: {}, note: "" }), /exec '\/venv\/bin\/turnback' "\$@"/);
});

test("a private install that cannot reach the registry says so and leaves nothing", { skip: !python3 }, async () => {
    const ext = fakeExtension(["cp39"]);
    const wheels = path.join(ext, "bundled", "wheels");
    fs.mkdirSync(wheels);
    // a real wheel whose dependency only a registry has
    execFileSync(python3!, ["-c", `
import zipfile, sys
w = zipfile.ZipFile(sys.argv[1], "w")
w.writestr("turnback/__init__.py", "")
w.writestr("turnback-0.0.1.dist-info/METADATA", "Metadata-Version: 2.1\\nName: turnback\\nVersion: 0.0.1\\nRequires-Dist: xxhash-not-on-any-index-here>=1\\n")
w.writestr("turnback-0.0.1.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
w.writestr("turnback-0.0.1.dist-info/RECORD", "")
w.close()`, path.join(wheels, "turnback-0.0.1-py3-none-any.whl")]);
    const storage = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-storage-"));
    const env = { ...process.env, PIP_INDEX_URL: "http://127.0.0.1:9/simple", PIP_EXTRA_INDEX_URL: "", PIP_FIND_LINKS: "",
        PIP_RETRIES: "0", PIP_TIMEOUT: "2", PIP_CONFIG_FILE: "/dev/null", PIP_NO_CACHE_DIR: "1" };
    const result = await installPrivate(ext, storage, python3!, env);
    assert.equal(result.ok, false, result.log);
    assert.match(result.message, /needs the package registry.*could not be reached.*runs the bundled server offline/);
    assert.equal(fs.existsSync(privateVenv(storage)), false);
});
