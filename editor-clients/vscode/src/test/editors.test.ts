// Issue 26 and issue 23 item 4 against the REAL `turnback serve`: the keep that merges (the issue's
// scenario ends with working code), conflict markers on request, effects and directives in words,
// the rewind modes, "Restore to Turn…", the images the diff editor shows, your own edits in the
// session view, Redo labelled by what it brings back, directives begun from the editor, the
// `turnback/rewound` notification, a long plan's short modal and preview, and finding the server.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { beginAttemptParams, directiveNodes, newDirectiveParams } from "../directives";
import { choiceOf, restoreFlow, rewindFlow } from "../flows";
import type { FlowUi } from "../flows";
import { diffTitle, imageText, imageUriParts, noDiffReason, parseImageQuery, sidesOf } from "../images";
import { buttonsOf, drawnLines, isLong, MODAL_MAX_CHARS, MODAL_MAX_LINES, MODAL_WRAP_CHARS, planHtml, READ_WHOLE_PLAN, shortConfirmation } from "../preview";
import { KEEP_MY_EDITS, KEEP_WITH_MARKERS, MODE_BUTTONS, redoPicks, renderCandidate, restorePicks, sessionTree } from "../render";
import type { Confirmation } from "../render";
import { isResolved, notFoundHelp, notFoundMessage, resolveServer, settingForProgram } from "../setup";
import { serverPython, Session, startSession, tempWorkspace } from "./harness";

const APP = "def hello():\n    return 'hello'\n\n\ndef bye():\n    return 'bye'\n";
const TEST = "import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n" +
    "from app import bye, hello\n\n\ndef test_app():\n    assert hello() == 'hello'\n    assert bye() == 'bye'\n\n\n" +
    "if __name__ == '__main__':\n    test_app()\n    print('ok')\n";
const COMMENT = "# Greetings, kept short: see the style guide.\n";
const renamed = (t: string) => t.replace(/bye/g, "farewell");

/** Answers each confirmation with the next of `answers` (then Cancel), recording what it showed. */
function answering(...answers: (string | boolean)[]): FlowUi & { shown: Confirmation[] } {
    const shown: Confirmation[] = [];
    return { shown, async confirm(c) { shown.push(c); return answers.length ? answers.shift() : undefined; } };
}

async function turn(s: Session, prompt: string, files: Record<string, string>, steps: { kind: string; scope: string; summary: string }[] = []): Promise<number> {
    const { turn: n } = await s.api.turnBegin({ kind: "chat", prompt });
    for (const [rel, text] of Object.entries(files)) {
        await s.api.turnCapture({ uris: [s.uri(rel)], phase: "before" });
        await s.save(rel, text);
    }
    for (const st of steps) {
        await s.api.turnStep({ turn: n, ...st });
    }
    await s.api.turnSettle({ turn: n, status: "settled" });
    return n;
}

/** The issue's session: turn 3 renames bye in both files; the user saves a comment between 3 and 4. */
async function issueSession(s: Session): Promise<void> {
    await turn(s, "write the app", { "src/app.py": APP, "tests/test_app.py": TEST });
    await turn(s, "add a readme", { "README.md": "# app\n" });
    await turn(s, "rename bye to farewell", { "src/app.py": renamed(APP), "tests/test_app.py": renamed(TEST) },
        [{ kind: "shell", scope: "crossing", summary: "Bash: git push origin main" }]);
    await s.save("src/app.py", COMMENT + renamed(APP));  // the user, in the editor, between turns
    await turn(s, "document it", { "README.md": "# app\n\nSays hello.\n" });
    await s.sync();
}

describe("the keep that merges, the modes, restore, diffs (issue 26, issue 23 item 4)", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace());
        await issueSession(s);
    });
    after(async () => {
        await s?.close();
    });

    test("the session view lists your own edit as yours, and each row opens a diff in words", async () => {
        const log = await s.api.sessionLog();
        const edits = (await s.api.diff({ since: 1, text: false })).changes.filter((c) => c.source === "user");
        const tree = sessionTree(log, s.root, { edits });
        const mine = tree.find((n) => n.contextValue === "turnback.useredits")!;
        assert.equal(mine.label, "Your edits after turn 3");
        assert.equal(mine.children![0].label, "src/app.py");
        assert.equal(mine.children![0].description, "changed (saved in the editor)");
        assert.deepEqual(mine.children![0].diff, { source: "user", turn: 3, uri: s.uri("src/app.py") });
        assert.deepEqual(tree.map((n) => n.label).slice(0, 3), ["Turn 4: document it", "Your edits after turn 3", "Turn 3: rename bye to farewell"]);
        // the folders turn 1 made (src/, tests/) are no files: counted apart, no row to open
        const turn1 = tree.find((n) => n.label === "Turn 1: write the app")!;
        assert.ok((log.turns[0].files ?? []).some((f) => f.uri.endsWith("/")), "the log lists the folder keys");
        assert.equal(turn1.description, "2 files · 2 folders");
        assert.deepEqual(turn1.children!.map((c) => c.label), ["src/app.py", "tests/test_app.py"]);

        const turn3 = (await s.api.diff({ turn: 3, uri: s.uri("src/app.py"), text: false })).changes[0];
        assert.equal(diffTitle(turn3), "app.py (before turn 3 ↔ after turn 3)");
        const [left, right] = sidesOf(turn3);
        const parts = imageUriParts(left);
        assert.equal(parts.scheme, "turnback-image");
        assert.deepEqual(parseImageQuery(parts.path, parts.query), left);
        assert.equal(imageText(await s.api.imageRead({ image: left.image! }), left), APP);
        assert.equal(imageText(await s.api.imageRead({ image: right.image! }), right), renamed(APP));
        const user = (await s.api.diff({ since: 3, uri: s.uri("src/app.py"), text: false })).changes.find((c) => c.source === "user")!;
        assert.equal(diffTitle(user), "app.py (as turn 3 left it ↔ your edit after turn 3, saved in the editor)");
    });

    test("the confirmation says what keeping your edit does, and the steps by what they did", async () => {
        const c = renderCandidate(await s.api.rewindPrepare({ kind: "beforePrompt", turn: 3 }), { root: s.root });
        assert.match(c.detail, /restore\s+src\/app\.py\s+✎ your edit \(saved in the editor\)/);
        assert.match(c.detail, /“Rewind, Keep My Edits” keeps them:\n  src\/app\.py: your edit is carried onto the restored file \(turn 3 changed it too\)/);
        assert.match(c.detail, /Already left this machine; nothing undoes them:\n    ran “git push origin main” \(turn 3\)/);
        assert.equal(c.alternative, KEEP_MY_EDITS.rewind);
        assert.ok(!(c.more ?? []).includes(KEEP_WITH_MARKERS), "no conflict: no markers button");
        assert.deepEqual(c.more, [MODE_BUTTONS.files, MODE_BUTTONS.conversation]);
    });

    test("the files only, then back: the mode buttons re-plan the same boundary", async () => {
        const ui = answering(MODE_BUTTONS.files, undefined as unknown as string);
        const out = await rewindFlow(s.api, { kind: "beforePrompt", turn: 3 }, ui, { root: s.root });
        assert.equal(out.status, "cancelled");
        assert.equal(ui.shown.length, 2);
        assert.equal(ui.shown[1].title, "Rewind the files only to before prompt 3: every turn stays?");
        assert.match(ui.shown[1].detail, /^The conversation: every turn stays \(4 turns\)\./);
        assert.deepEqual(ui.shown[1].more, [MODE_BUTTONS.conversation, MODE_BUTTONS.all]);
        assert.equal(choiceOf(ui.shown[1], MODE_BUTTONS.all), "mode");
    });

    test("Restore to Turn… puts one file back; the conversation stays", async () => {
        const picks = restorePicks(await s.api.sessionLog(), s.uri("tests/test_app.py"));
        assert.deepEqual(picks.map((p) => p.label), ["$(history) As it was after turn 3", "$(discard) As it was before turn 3",
            "$(history) As it was after turn 1", "$(discard) As it was before turn 1"]);
        const ui = answering("Restore");
        const out = await restoreFlow(s.api, [s.uri("tests/test_app.py")], picks[1].boundary, ui, { root: s.root });
        assert.equal(out.status, "committed", out.message);
        assert.equal(ui.shown[0].title, "Restore tests/test_app.py to how it was before turn 3? The conversation stays.");
        assert.ok(!(ui.shown[0].more ?? []).some((b) => b.includes("Only")), "a restore has no modes");
        assert.match(out.message, /^Restored tests\/test_app\.py; the conversation did not change/);
        assert.equal(s.read("tests/test_app.py"), TEST);
        assert.equal(s.read("src/app.py"), COMMENT + renamed(APP));
        assert.equal((await s.api.sessionLog()).turns.length, 4);
        const rewound = await s.waitFor("turnback/rewound", (p) => p.operation === "restore");
        assert.deepEqual(rewound.files, [s.uri("tests/test_app.py")]);
    });

    test("Rewind, Keep My Edits merges the comment onto the restored app.py: the code runs", async () => {
        const ui = answering(KEEP_MY_EDITS.rewind);
        const out = await rewindFlow(s.api, { kind: "beforePrompt", turn: 3 }, ui, { root: s.root });
        assert.equal(out.status, "committed", out.message);
        assert.match(out.message, /your edits merged onto src\/app\.py\./);
        assert.equal(s.read("src/app.py"), COMMENT + APP);
        assert.equal(s.read("tests/test_app.py"), TEST);
        const ran = execFileSync(serverPython(), [s.file("tests/test_app.py")], { encoding: "utf8" });
        assert.equal(ran.trim(), "ok");
        const rewound = await s.waitFor("turnback/rewound", (p) => p.operation === "rewind");
        assert.equal(rewound.turnCount, 2);
    });

    test("Redo is labelled by what it brings back: the turns, the files, the time", async () => {
        const picks = redoPicks(await s.api.redoList());
        const four = picks.find((p) => p.label.startsWith("$(redo) Turns 3–4 back: document it"));
        assert.ok(four, JSON.stringify(picks));
        assert.match(four.description!, /README\.md/);
        assert.match(four.detail!, /^saved \d{4}-\d\d-\d\d \d\d:\d\d · 4 turns in all$/);
    });
});

describe("a restore that gaps stand in the way of says so (issue 43's long run)", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace());
        await turn(s, "write p and d/f", { "p": "P\n", "d/f": "f\n" });
        await s.sync();
        fs.rmSync(s.file("p"));
        fs.mkdirSync(s.file("p"));  // the user's folder where the file was
        fs.rmSync(s.file("d"), { recursive: true });
        fs.writeFileSync(s.file("d"), "mine\n");  // the user's file where the folder was
    });
    after(async () => {
        await s?.close();
    });

    for (const [name, rel, reason] of [["a folder where the file was", "p", "not-a-file"],
        ["a file where its folder was", "d", "not-a-directory"]]) {
        test(`${name}: the server's summary and its gap's words, not "every file already is as it was"`, async () => {
            const boundary = { kind: "afterResponse", turn: 1 } as const;
            const plan = await s.api.restorePrepare([s.uri(rel)], boundary, {});
            const gap = plan.gaps.find((g) => g.reason === reason);
            assert.ok(plan.noop && gap?.words, JSON.stringify(plan.gaps));
            const ui = answering("Restore");
            const out = await restoreFlow(s.api, [s.uri(rel)], boundary, ui, { root: s.root });
            assert.equal(out.status, "nothing-to-do");
            assert.equal(ui.shown.length, 0, "nothing to confirm");
            assert.doesNotMatch(out.message, /already is as it was/);
            assert.equal(out.message, plan.summary);
            assert.ok(out.message.includes(gap!.words!), out.message);
        });
    }
    test("the user's folder and file stay", () => {
        assert.ok(fs.statSync(s.file("p")).isDirectory());
        assert.equal(s.read("d"), "mine\n");
    });
});

describe("conflicts, a too-large file, directives from the editor", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace(), { capture: { maxFileBytes: 64 } });
    });
    after(async () => {
        await s?.close();
    });

    test("a conflict is said, kept as it is by default, and marked only with its button", async () => {
        await turn(s, "one", { "app.py": "x = 1\ny = 1\n" });
        await turn(s, "two", { "app.py": "x = 1\ny = 2\n" });
        await s.save("app.py", "x = 1\ny = 3\n");
        await s.sync();
        const ui = answering(KEEP_WITH_MARKERS);
        const out = await rewindFlow(s.api, { kind: "afterResponse", turn: 1 }, ui, { root: s.root });
        assert.match(ui.shown[0].detail, /app\.py: a conflict with turn 2: left as it is now \(or with conflict markers\)/);
        assert.ok(ui.shown[0].more!.includes(KEEP_WITH_MARKERS));
        assert.equal(choiceOf(ui.shown[0], KEEP_WITH_MARKERS), "keep-with-markers");
        assert.equal(out.status, "committed", out.message);
        assert.match(out.message, /conflict markers written into app\.py/);
        assert.equal(s.read("app.py"), "x = 1\n<<<<<<< your edit\ny = 3\n=======\ny = 1\n>>>>>>> as restored\n");
    });

    test("a file too large to capture opens no diff: the gap says why", async () => {
        const n = await turn(s, "big", { "data.csv": "x".repeat(200) });
        const { changes } = await s.api.diff({ turn: n, text: false });
        const big = changes.find((c) => c.path === "data.csv")!;
        assert.equal(big.status, "gap");
        assert.match(noDiffReason(big)!, /^data\.csv was not captured in turn 2: too-large, 200 bytes, over the 64 bytes limit/);
    });

    test("New Directive… and Begin Attempt: a directive turn the agent's hooks join; named by its request", async () => {
        s.write("lib.py", "def add(a, b):\n    return a + b\n");
        const d = await s.api.directiveUpsert(newDirectiveParams(s.uri("lib.py"), 1, "  Clamp the sum  "));
        assert.equal(d.request, "Clamp the sum");
        const { turn: n } = await s.api.turnBegin(beginAttemptParams(d));
        const log = await s.api.sessionLog();
        assert.equal(log.turns[n - 1].kind, "directive");
        assert.equal(log.turns[n - 1].directiveId, d.id);
        const [node] = directiveNodes((await s.api.directiveList()).directives, s.root);
        assert.equal(node.label, "Clamp the sum");
        assert.match(node.description!, /^an attempt is running · 1 attempt · lib\.py:2$/);
        assert.equal(node.contextValue, "turnback.directive.running");
        await s.api.turnSettle({ turn: n, status: "cancelled" });
    });
});

describe("a long plan: a short modal beside a preview that scrolls", () => {
    test("a plan of few but long lines is long too: the modal wraps them (a fork's plan, 38 lines drawn)", () => {
        const paragraph = "Forks at turn 1: a new branch session continues from turn 1 with turns 1–1; this session is frozen: " +
            "readable, and Redo can bring back its states. The workspace is put back as it was at the end of turn 1.";
        const detail = Array.from({ length: 9 }, () => paragraph).join("\n\n");
        assert.ok(detail.split("\n").length <= MODAL_MAX_LINES && detail.length <= MODAL_MAX_CHARS, "short by count");
        assert.equal(drawnLines(paragraph), Math.ceil(paragraph.length / MODAL_WRAP_CHARS));
        assert.ok(isLong({ title: "Fork at the response of turn 1?", detail, action: "Fork Here" } as Confirmation));
    });
    test("more than the modal can hold goes to the preview, the modal keeps its buttons", () => {
        const files = Array.from({ length: 30 }, (_v, i) => ({ uri: `file:///w/f${i}.txt`, path: `f${i}.txt`, action: "restore", from: "a", to: "b" }));
        const c = renderCandidate({
            planHash: "h", keep: { turnCount: 1, last: { turn: 1, prompt: "p" } }, discard: { turnCount: 1, first: { turn: 2, prompt: "q" } },
            files, gaps: [], effects: {} as never, directives: [], summary: "S <b>", boundary: { kind: "afterResponse", turn: 1 },
        }, { root: "/w" });
        assert.ok(isLong(c));
        const short = shortConfirmation(c);
        assert.ok(short.detail.split("\n").length <= 8, short.detail);
        assert.match(short.detail, /^Keeps: turn 1, ending with turn 1 “p”\.\nDiscards: 1 turn from turn 2 “q” on, with their answers\.\n\nFiles \(30 restored\) · Gaps, what cannot be put back \(0\)|Gaps: none/);
        assert.match(short.detail, /The whole plan \(\d+ lines\) is in the panel beside this dialog/);
        assert.deepEqual(short.more, [...c.more!, READ_WHOLE_PLAN]);
        const html = planHtml(c, { csp: "vscode-resource:", nonce: "n0nce" });
        assert.match(html, /S &lt;b&gt;/);
        assert.doesNotMatch(html, /S <b>/);
        for (const b of buttonsOf(c)) {
            assert.ok(html.includes(`data-choice="${b}"`), b);
        }
        assert.match(html, /This window is too small to show the plan/);
        assert.match(html, /script-src 'nonce-n0nce'/);
    });
});

describe("finding the server the way the user's terminal would", () => {
    test("PATH, then the login shell, then the workspace's .venv, then the exact setting to set", () => {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-setup-"));
        const env = { PATH: "/nonexistent", SHELL: "/bin/sh" };
        const cmd = { command: "turnback", args: ["serve"] };
        const missing = resolveServer(cmd, { env, root, home: root, loginShell: () => undefined });
        assert.ok(!isResolved(missing));
        const message = notFoundMessage(cmd, missing.tried);
        assert.equal(message, `turnback: the server program “turnback” was not found. Looked in: VS Code's PATH, ` +
            `the PATH of your login shell (/bin/sh), ${root}/.venv/bin/turnback, ${root}/venv/bin/turnback, ${root}/.local/bin/turnback.`);
        assert.match(notFoundHelp(root, env), /set turnback\.server\.command to its full path, for example \[".*\/\.venv\/bin\/turnback", "serve"\]/);
        assert.deepEqual(settingForProgram("/usr/bin/python3.11"), { key: "server.python", value: "/usr/bin/python3.11" });
        assert.deepEqual(settingForProgram("/x/.venv/bin/turnback"), { key: "server.command", value: ["/x/.venv/bin/turnback", "serve"] });
        const shell = resolveServer(cmd, { env, root, home: root, loginShell: () => "/opt/tb/bin/turnback" });
        assert.deepEqual(shell, { command: "/opt/tb/bin/turnback", args: ["serve"], foundBy: "login-shell" });
        fs.mkdirSync(path.join(root, ".venv", "bin"), { recursive: true });
        fs.writeFileSync(path.join(root, ".venv", "bin", "turnback"), "#!/bin/sh\n", { mode: 0o755 });
        const venv = resolveServer(cmd, { env, root, home: root, loginShell: () => undefined });
        assert.ok(isResolved(venv) && venv.foundBy === "workspace-venv" && venv.command === path.join(root, ".venv", "bin", "turnback"));
        fs.rmSync(root, { recursive: true, force: true });
    });

    test("the real login shell is asked: a PATH set in its profile is found", () => {
        const home = fs.mkdtempSync(path.join(os.tmpdir(), "turnback-home-"));
        fs.mkdirSync(path.join(home, "bin"));
        fs.writeFileSync(path.join(home, "bin", "turnback"), "#!/bin/sh\n", { mode: 0o755 });
        fs.writeFileSync(path.join(home, ".bashrc"), `export PATH="${path.join(home, "bin")}:$PATH"\n`);
        fs.writeFileSync(path.join(home, ".bash_profile"), ". ~/.bashrc\n");
        const found = resolveServer({ command: "turnback", args: ["serve"] },
            { env: { PATH: "/usr/bin:/bin", SHELL: "/bin/bash", HOME: home }, root: home, home });
        assert.ok(isResolved(found), JSON.stringify(found));
        assert.equal(found.command, path.join(home, "bin", "turnback"));
        assert.equal(found.foundBy, "login-shell");
        fs.rmSync(home, { recursive: true, force: true });
    });
});
