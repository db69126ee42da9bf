// Settings → command line and initializationOptions; the "not installed" message. No server needed.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";

import { findExecutable, initializationOptions, isNotInstalled, NOT_INSTALLED, serverCommand, splitCommandLine, startFailureMessage } from "../config";
import { agentResumeNote, resumeOf } from "../flows";
import { wholeRowTooltip } from "../tree";
import { gapLine } from "../text";
import { dialogDetail, effectLines, gapReasonText, mentionsPath, redoPicks, renderStatus } from "../render";
import { SessionState, uriKey } from "../state";

test("server command: default, explicit command, python interpreter wins", () => {
    assert.deepEqual(serverCommand({}), { command: "turnback", args: ["serve"] });
    assert.deepEqual(serverCommand({ serverCommand: ["/opt/tb/bin/turnback", "serve", "--log", "debug"] }),
        { command: "/opt/tb/bin/turnback", args: ["serve", "--log", "debug"] });
    assert.deepEqual(serverCommand({ serverCommand: [] }), { command: "turnback", args: ["serve"] });
    assert.deepEqual(serverCommand({ serverCommand: ["x"], serverPython: " /usr/bin/python3 " }),
        { command: "/usr/bin/python3", args: ["-m", "turnback", "serve"] });
    assert.deepEqual(serverCommand({ serverPython: "" }), { command: "turnback", args: ["serve"] });
});

test("initializationOptions carry only what is set, in the contract's shape", () => {
    assert.deepEqual(initializationOptions({}), {});
    assert.deepEqual(initializationOptions({
        storeKind: "pid", storePath: "/tmp/store", maxFileBytes: 1024, sweep: false, graceHeads: 3,
    }), { store: { kind: "pid", path: "/tmp/store" }, capture: { maxFileBytes: 1024, sweep: false }, collect: { graceHeads: 3 } });
    assert.deepEqual(initializationOptions({ storeKind: "heads", storePath: null, maxFileBytes: 16777216, sweep: true, graceHeads: 8 }),
        { store: { kind: "heads" }, capture: { maxFileBytes: 16777216, sweep: true }, collect: { graceHeads: 8 } });
});

test("a missing program gives the install hint (real spawn ENOENT)", async () => {
    const cmd = { command: "turnback-definitely-not-installed", args: ["serve"] };
    assert.equal(findExecutable(cmd.command), undefined);
    const err = await new Promise<unknown>((resolve) => {
        const p = spawn(cmd.command, cmd.args);
        p.once("error", resolve);
    });
    assert.ok(isNotInstalled(err));
    // vscode-languageclient rejects with a string that embeds the spawn error.
    assert.ok(isNotInstalled(`Launching server using command ${cmd.command} failed. Error: spawn ${cmd.command} ENOENT`));
    const msg = startFailureMessage(err, cmd);
    assert.ok(msg.startsWith(NOT_INSTALLED), msg);
    assert.match(msg, /pip install turnback, or set turnback\.server\.command/);
    assert.ok(!isNotInstalled(new Error("exited with code 2")));
    assert.match(startFailureMessage(new Error("exited with code 2"), cmd), /failed to start/);
});

test("findExecutable finds node on PATH", () => {
    assert.ok(findExecutable("node"));
    assert.ok(findExecutable(process.execPath));
});

test("TURNBACK_SERVER command lines split like a shell would for simple cases", () => {
    assert.deepEqual(splitCommandLine("turnback serve"), ["turnback", "serve"]);
    assert.deepEqual(splitCommandLine(" '/a b/python' -m turnback  serve "), ["/a b/python", "-m", "turnback", "serve"]);
});

test("uri keys match across encodings", () => {
    assert.equal(uriKey("file:///c%3A/x/a%20b.txt"), uriKey("file:///C:/x/a b.txt"));
    assert.equal(uriKey("file:///tmp/a.txt"), "file:///tmp/a.txt");
});

test("status bar before the first notification", () => {
    const v = renderStatus(undefined);
    assert.equal(v.warning, false);
    assert.match(v.text, /turnback/);
});

test("mentionsPath finds a file line of the confirmation, not a prefix or a prompt", () => {
    const detail = "Keeps: turn 1, ending with turn 1 “edit src/app.py”.\n\nFiles (1 restored):\n  restore  src/app.py  ⚠ changed\n  delete   src/app.py.bak\n";
    assert.ok(mentionsPath(detail, "src/app.py"));
    assert.ok(mentionsPath(detail, "src/app.py.bak"));
    assert.ok(!mentionsPath(detail, "app.py"));
    assert.ok(!mentionsPath(detail, "src/app"));
    assert.ok(!mentionsPath(detail, "src/util.py"));
});

test("every gap reason the server sends has words", () => {
    for (const reason of ["unknown-before-image", "too-large", "unreadable", "outside-workspace", "symlink",
        "step-scope-unknown", "git-head-and-index", "not-a-file", "not-in-head", "git-internal",
        "not-a-folder", "not-a-directory", "folder-not-empty", "submodule-uninitialised"]) {
        assert.notEqual(gapReasonText(reason), reason, reason);
    }
});

test("the dialog's detail keeps its indented lines visible as bullets", () => {
    const detail = "Files (2):\n  restore  src/app.py\n  delete   b.txt\n    nested\nNot indented";
    assert.equal(dialogDetail(detail),
        "Files (2):\n• restore  src/app.py\n• delete   b.txt\n◦ nested\nNot indented");
});

test("a committed rewind of a Claude Code session names the command that resumes it", () => {
    const command = "claude --resume 3f1c --resume-session-at a4";
    // the command is offered whole beside the sentence (Copy, Run in Terminal), not cut inside it
    assert.equal(agentResumeNote({ agentResume: { command } }), " Resume Claude Code at this point:");
    assert.deepEqual(resumeOf({ agentResume: { command } }), { resumeCommand: command });
    assert.deepEqual(resumeOf({ agentResume: { command: null } }), {});
    assert.equal(agentResumeNote({}), "");
    assert.ok(agentResumeNote({ agentResume: { command: null, note: "no turn survives" } }).includes("no turn survives"));
});

test("turnback/recovered is kept and announced once (what the server's open rolled back)", () => {
    const handlers = new Map<string, (p: any) => void>();
    const state = new SessionState();
    state.attach({ onNotification: (method: string, h: (p: any) => void) => handlers.set(method, h) });
    const seen: string[] = [];
    state.onDidChange((c) => seen.push(c.kind));
    const params = {
        transactions: [{ id: "59cb", operation: "rewind", action: "rolled-back", files: 120, failed: [],
                         message: "An interrupted rewind (59cb) was rolled back" }],
        forks: [], message: "An interrupted rewind (59cb) was rolled back",
    };
    handlers.get("turnback/recovered")!(params);
    assert.deepEqual(seen, ["recovered"]);
    assert.equal(state.recovered?.transactions[0].action, "rolled-back");
});

test("a Redo pick says when it is a frozen parent's state or what a transaction overwrote", () => {
    const [parent, own] = redoPicks({
        available: true, groups: [
            { headSeq: 4, turnCount: 3, forkPoint: "f", created: 0, lastPrompt: "rename", sharedTurns: 2,
              frozenParent: true, keptBefore: true, sessionId: "p" },
            { headSeq: 2, turnCount: 2, forkPoint: "g", created: 0, lastPrompt: "readme", frozenParent: false },
        ],
    });
    assert.match(parent.label, /Turn 3 back: rename/);
    assert.match(parent.detail!, / · a state of the frozen session this one was forked from · what a rewind, Redo or fork overwrote: your uncaptured edits$/);
    assert.doesNotMatch(own.detail!, /frozen|overwrote/);
});

test("a row's tooltip holds its whole text, label and description first when it does not say them (issue 40)", () => {
    assert.equal(wholeRowTooltip({ label: "Sessions (2)", description: "this one: “x”", tooltip: "Every session." }),
        "Sessions (2) — this one: “x”\nEvery session.");
    assert.equal(wholeRowTooltip({ label: "  ↳ ● New branch from turn 2", description: "1 turn", tooltip: "New branch from turn 2: 1 turn" }),
        "New branch from turn 2: 1 turn");
    assert.equal(wholeRowTooltip({ label: "a.py", description: "changed" }), "a.py — changed");
});

test("a gap's line says its sentence once (issue 40)", () => {
    assert.equal(gapLine({ uri: null, turn: null, reason: "git-head-and-index", detail: "a rewind does not restore Git HEAD or the index" }),
        "(session) — git-head-and-index: a rewind does not restore Git HEAD or the index");
    assert.equal(gapLine({ uri: "file:///w/.git/index", turn: null, reason: "git-internal",
        detail: "inside a .git folder (or a worktree's .git file): Git's own data is never captured" }, "/w"),
    ".git/index — git-internal: inside a .git folder (or a worktree's .git file): Git's own data is never captured");
    assert.equal(gapLine({ uri: "file:///w/a.py", turn: 2, reason: "too-large", detail: "20 MiB, over the 16 MiB limit" }, "/w"),
        "a.py — too-large, too large to capture (turn 2): 20 MiB, over the 16 MiB limit");
});

test("the server's words come first; ours only for an older server (issue 44)", () => {
    assert.equal(gapLine({ uri: "file:///w/a.py", turn: 2, reason: "too-large", words: "the server's own sentence" }, "/w"),
        "a.py — too-large, the server's own sentence (turn 2)");
    const effects = { restored: ["s1"], provablyEmpty: [] };
    assert.deepEqual(effectLines(effects, [], { restored: "Put back, as the server says" }),
        ["  Put back, as the server says:", "    step s1"]);
    assert.deepEqual(effectLines(effects, []), ["  Put back by this rewind:", "    step s1"]);
});
