// Against the REAL `turnback serve` (TURNBACK_SERVER, default `turnback serve` from PATH): drive a
// session the way the extension does and check what the user would see.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { redoFlow, rewindFlow } from "../flows";
import type { FlowUi } from "../flows";
import { errorCode } from "../protocol";
import type { Candidate, Status } from "../protocol";
import {
    confirmationText,
    directiveAttemptPicks,
    directiveLenses,
    gapPicks,
    promptPicks,
    redoPicks,
    redoUnavailableMessage,
    renderCandidate,
    renderStatus,
    responsePicks,
    sessionTree,
} from "../render";
import type { Confirmation } from "../render";
import { Session, startSession, tempWorkspace } from "./harness";

const ARTIFACTS = path.resolve(__dirname, "..", "..", "..", "test-artifacts");

function artifact(name: string, text: string): void {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS, name), text.endsWith("\n") ? text : text + "\n");
}

/** A UI that answers every confirmation with `answers` in turn (then yes), recording what it showed. */
function scriptedUi(answers: boolean[] = [], onShow?: (c: Confirmation, i: number) => void | Promise<void>): FlowUi & { shown: Confirmation[] } {
    const shown: Confirmation[] = [];
    return {
        shown,
        async confirm(c) {
            shown.push(c);
            if (onShow) {
                await onShow(c, shown.length - 1);
            }
            return answers.length ? answers.shift()! : true;
        },
    };
}

/** One settled chat turn: begin, let `work` change files, respond, settle. */
async function chatTurn(s: Session, prompt: string, response: string, work: (turn: number) => Promise<void>): Promise<number> {
    const { turn } = await s.api.turnBegin({ kind: "chat", prompt });
    await work(turn);
    await s.api.turnRespond({ turn, text: response, final: true });
    await s.api.turnSettle({ turn, status: "settled" });
    return turn;
}

describe("a chat session: rewind, stale commit, redo", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace());
    });
    after(async () => {
        await s?.close();
    });

    test("initialize: the server asks for didSave with text and registers a workspace watcher", async () => {
        const sync = s.initializeResult.capabilities.textDocumentSync;
        assert.equal(sync.save.includeText, true);
        await s.sync();
        await s.waitFor("turnback/status");
        const reg = s.serverRequests.find((r) => r.method === "client/registerCapability");
        assert.ok(reg, "a client/registerCapability request");
        assert.equal(reg.params.registrations[0].method, "workspace/didChangeWatchedFiles");
        const info = await s.api.sessionInfo();
        assert.equal(info.ownership, "owner");
        assert.equal(info.storeKind, "heads");
        assert.equal(info.turnCount, 0);
    });

    test("three turns, quick picks newest first, a rewind confirmed from the rendered candidate", async () => {
        s.write("src/app.py", "print('v0')\n");
        s.write("README.md", "# demo\n");
        await s.didOpen("src/app.py", "python");
        await chatTurn(s, "Write the app", "I wrote app.py.", async (turn) => {
            await s.save("src/app.py", "print('v1')\n");
            await s.api.turnStep({ turn, kind: "file-write", scope: "host", uris: [s.uri("src/app.py")] });
        });
        await chatTurn(s, "Add a helper module", "Added util.py and used it.", async (turn) => {
            await s.save("src/util.py", "def helper():\n    return 1\n");
            await s.save("src/app.py", "from util import helper\nprint(helper())\n");
            await s.api.turnStep({ turn, kind: "file-write", scope: "host", uris: [s.uri("src/util.py"), s.uri("src/app.py")] });
        });
        await chatTurn(s, "Deploy it", "Pushed and deployed.", async (turn) => {
            await s.save("README.md", "# demo\n\nDeployed.\n");
            await s.api.turnStep({ turn, kind: "shell", summary: "git push && ./deploy.sh" });
        });

        const log = await s.api.sessionLog();
        assert.deepEqual(log.turns.map((t) => t.turn), [1, 2, 3]);

        const prompts = promptPicks(log);
        assert.deepEqual(prompts.map((p) => p.turn), [3, 2, 1], "prompts newest first");
        assert.match(prompts[0].label, /Turn 3: Deploy it/);
        assert.match(prompts[2].detail!, /whole session/);
        assert.deepEqual(prompts[1].boundary, { kind: "beforePrompt", turn: 2 });

        const responses = responsePicks(log);
        assert.deepEqual(responses.map((p) => p.turn), [3, 2, 1], "responses newest first");
        assert.match(responses[1].label, /Turn 2: Added util\.py/);
        assert.deepEqual(responses[1].boundary, { kind: "afterResponse", turn: 2 });

        const tree = sessionTree(log, s.root);
        assert.equal(tree[0].label, "Turn 3: Deploy it");
        const t2files = tree[1].children!.map((c) => `${c.label} ${c.description}`).sort();
        assert.deepEqual(t2files, ["src/app.py changed", "src/util.py created"]);
        // words, not digests: the rows and their tooltips
        const rows = JSON.stringify(tree);
        assert.doesNotMatch(rows, /[0-9a-f]{32}/, "no digest in the view");
        assert.doesNotMatch(rows, /@v1/, "no checkpoint name in the view");
        assert.deepEqual(tree[1].children![0].diff, { source: "turn", turn: 2, uri: tree[1].children![0].uri });

        // Rewind to before prompt 2, confirmed from the rendering.
        const ui = scriptedUi();
        const out = await rewindFlow(s.api, prompts[1].boundary, ui, { root: s.root });
        assert.equal(out.status, "committed", out.message);
        assert.equal(ui.shown.length, 1);
        const c = ui.shown[0];
        artifact("confirmation-rewind.txt", confirmationText(c));
        assert.match(c.title, /keep 1 turn, discard 2 turns/);
        assert.match(c.detail, /Keeps: turn 1, ending with turn 1 “Write the app”/);
        assert.match(c.detail, /Discards: 2 turns from turn 2 “Add a helper module” on/);
        assert.match(c.detail, /restore\s+src\/app\.py/);
        assert.match(c.detail, /delete\s+src\/util\.py/);
        assert.match(c.detail, /restore\s+README\.md/);
        assert.match(c.detail, /step-scope-unknown/, "the shell step without a scope is a gap");
        assert.match(c.detail, /What the discarded steps did:\n  Put back by this rewind:\n    file write src\/util\.py, src\/app\.py \(turn 2\)\n  Already left this machine; nothing undoes them:\n    ran “git push && \.\/deploy\.sh” \(turn 3\)/);
        assert.doesNotMatch(c.detail.split("What the discarded steps did:")[1], /s3\.1|crossedUncompensated/,
            "steps by what they did, buckets by their names");
        assert.equal(c.action, "Rewind");

        assert.equal(s.read("src/app.py"), "print('v1')\n");
        assert.equal(s.read("src/util.py"), undefined);
        assert.equal(s.read("README.md"), "# demo\n");
        const epoch = await s.waitFor("turnback/epoch");
        assert.equal(epoch.source, "rewind");
        assert.equal(epoch.turnCount, 1);
        assert.equal(s.state.epoch?.epoch, epoch.epoch);
        assert.equal((await s.api.sessionLog()).turns.length, 1);
    });

    test("cancelling the confirmation commits nothing", async () => {
        const ui = scriptedUi([false]);
        const out = await rewindFlow(s.api, { kind: "beforePrompt", turn: 1 }, ui, { root: s.root });
        assert.equal(out.status, "cancelled");
        assert.match(ui.shown[0].detail, /Keeps: nothing, the session starts empty\./);
        assert.equal(s.read("src/app.py"), "print('v1')\n");
        assert.equal((await s.api.sessionLog()).turns.length, 1);
    });

    test("a stale commit re-shows the fresh candidate (an edit made while the dialog was open)", async () => {
        await chatTurn(s, "Rename the output", "Changed the message.", async () => {
            await s.save("src/app.py", "print('v2')\n");
        });
        const ui = scriptedUi([true, true], async (_c, i) => {
            if (i === 0) {
                // Someone edits the file behind turnback while the modal is up: the plan goes stale.
                s.write("src/app.py", "print('edited by hand')\n");
            }
        });
        const out = await rewindFlow(s.api, { kind: "afterResponse", turn: 1 }, ui, { root: s.root });
        artifact("confirmation-stale.txt", ui.shown.map(confirmationText).join("\n\n----\n\n"));
        assert.equal(out.status, "committed", out.message);
        assert.equal(ui.shown.length, 2, "the fresh candidate was shown again");
        assert.doesNotMatch(ui.shown[0].detail, /changed outside turnback/);
        assert.match(ui.shown[1].title, /^The session changed; here is the fresh plan\. Rewind at the response of turn 1/);
        assert.match(ui.shown[1].detail, /restore\s+src\/app\.py\s+⚠ changed outside turnback since the last capture: that edit will be overwritten/);
        assert.match(ui.shown[1].detail, /⚠ 1 file changed outside turnback; the rewind overwrites that change\./);
        assert.equal(s.read("src/app.py"), "print('v1')\n");
    });

    test("redo: groups listed newest first, confirmed, files come back", async () => {
        const list = await s.api.redoList();
        assert.equal(list.available, true);
        assert.equal(redoUnavailableMessage(list), undefined);
        const picks = redoPicks(list);
        assert.ok(picks.length >= 2);
        const seqs = picks.map((p) => p.headSeq);
        assert.deepEqual(seqs, [...seqs].sort((a, b) => b - a), "newest head first");
        const three = list.groups.find((g) => g.turnCount === 3 && g.lastPrompt === "Deploy it");
        assert.ok(three, "the three-turn head is offered: " + JSON.stringify(list.groups));
        const pick = picks.find((p) => p.headSeq === three.headSeq)!;
        assert.match(pick.label, /Turns 2–3 back: Deploy it/, "labelled by what it brings back");
        assert.match(pick.description!, /README\.md/);
        assert.match(pick.detail!, /saved \d{4}-\d\d-\d\d \d\d:\d\d · 3 turns in all$/);

        const ui = scriptedUi();
        const out = await redoFlow(s.api, async (groups) => groups.find((g) => g.headSeq === three.headSeq), ui, { root: s.root });
        artifact("confirmation-redo.txt", confirmationText(ui.shown[0]));
        assert.equal(out.status, "committed", out.message);
        assert.match(ui.shown[0].title, /Redo: bring back 3 turns/);
        assert.match(ui.shown[0].detail, /src\/util\.py/);
        assert.equal(s.read("src/util.py"), "def helper():\n    return 1\n");
        assert.equal(s.read("README.md"), "# demo\n\nDeployed.\n");
        assert.equal((await s.api.sessionLog()).turns.length, 3);
        const epoch = await s.waitFor("turnback/epoch", (p) => p.source === "redo");
        assert.equal(epoch.turnCount, 3);
    });

    test("a bad request is a JSON-RPC error with data.code, and the server keeps serving", async () => {
        await assert.rejects(s.api.rewindPrepare({ kind: "beforePrompt", turn: 99 }), (err: unknown) => {
            assert.equal(errorCode(err), "unknown-turn");
            return true;
        });
        // A path outside the workspace is refused as a gap, not captured.
        const cap = await s.api.turnCapture({ uris: ["file:///etc/passwd"] });
        assert.deepEqual(cap.gaps.map((g) => g.reason), ["outside-workspace"]);
        // A made-up plan hash is a stale commit that carries the fresh candidate.
        const r = await s.api.rewindCommit({ kind: "afterResponse", turn: 1 }, "0000");
        assert.equal(r.status, "stale");
        assert.ok(r.candidate?.planHash);
        assert.equal((await s.api.sessionInfo()).turnCount, 3);
    });
});

describe("gaps: the status bar from real turnback/status notifications", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace(), { capture: { maxFileBytes: 256, sweep: true } });
    });
    after(async () => {
        await s?.close();
    });

    test("no gap: plain text, no warning", async () => {
        const status: Status = await s.waitFor("turnback/status");
        const v = renderStatus(status, { root: s.root });
        assert.equal(status.liveGaps, 0);
        assert.equal(v.warning, false);
        assert.equal(v.text, "$(history) turnback");
        assert.match(v.tooltip, /every change is captured/);
    });

    test("a file over maxFileBytes and a symlink become gaps: warning text, tooltip, quick pick", async () => {
        const since = s.notifications.length;
        s.write("notes.txt", "small\n");
        const { turn } = await s.api.turnBegin({ prompt: "Generate the data files" });
        s.write("data/big.csv", "x,y\n".repeat(200));
        fs.symlinkSync(s.file("notes.txt"), s.file("data/latest"));
        await s.save("notes.txt", "small, edited\n");
        const cap = await s.api.turnCapture({ uris: [s.uri("data/big.csv"), s.uri("data/latest")] });
        assert.deepEqual(cap.gaps.map((g) => g.reason).sort(), ["symlink", "too-large"]);
        const status: Status = await s.waitFor("turnback/status", (p) => p.liveGaps >= 2, { since });
        assert.equal(s.state.status?.liveGaps, status.liveGaps, "SessionState follows the notifications");

        const v = renderStatus(s.state.status, { root: s.root });
        assert.equal(v.warning, true);
        assert.equal(v.text, "$(warning) turnback: 2 gaps");
        assert.match(v.tooltip, /data\/big\.csv — too-large, the file is over the capture size limit/);  // the server's words
        assert.match(v.tooltip, /data\/latest — symlink/);
        const linkLine = v.tooltip.split("\n").find((l) => l.includes("data/latest")) ?? "";
        assert.equal(linkLine.match(/symbolic link/g)?.length, 1, `the link said once: ${linkLine}`);
        artifact("status-gaps.txt", `status bar: ${v.text}   (warning background)\n\ntooltip:\n${v.tooltip}\n`);

        const picks = gapPicks(s.state.status, s.root);
        assert.deepEqual(picks.map((p) => p.label).sort(), ["$(warning) data/big.csv", "$(warning) data/latest"]);
        assert.ok(picks.every((p) => p.uri?.startsWith("file://")));

        await s.api.turnRespond({ turn, text: "Wrote the CSV." });
        await s.api.turnSettle({ turn });
        const log = await s.api.sessionLog();
        const tree = sessionTree(log, s.root);
        assert.match(tree[0].description!, /2 gaps/);

        // The candidate names the gaps too.
        const cand: Candidate = await s.api.rewindPrepare({ kind: "beforePrompt", turn });
        const conf = renderCandidate(cand, { root: s.root });
        artifact("confirmation-gaps.txt", confirmationText(conf));
        assert.match(conf.detail, /Gaps, what cannot be put back/);
        assert.match(conf.detail, /data\/big\.csv — too-large/);
        assert.match(conf.detail, /restore\s+notes\.txt/);
    });

    test("the gap clears when the file comes back under the limit", async () => {
        const since = s.notifications.length;
        const { turn } = await s.api.turnBegin({ prompt: "Shrink the data" });
        await s.save("data/big.csv", "x,y\n");
        fs.unlinkSync(s.file("data/latest"));
        await s.api.turnCapture({ uris: [s.uri("data/big.csv"), s.uri("data/latest")] });
        await s.api.turnSettle({ turn });
        const status: Status = await s.waitFor("turnback/status", (p) => p.liveGaps === 0, { since });
        assert.equal(renderStatus(status).warning, false);
    });
});

describe("directives: CodeLens titles from real turnback/directives notifications", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace());
    });
    after(async () => {
        await s?.close();
    });

    test("upsert, an attempt, rewind before the attempt, edit the request", async () => {
        s.write("lib/math.py", "def add(a, b):\n    # TODO(turnback): handle overflow\n    return a + b\n");
        await s.didOpen("lib/math.py", "python");
        const uri = s.uri("lib/math.py");

        let since = s.notifications.length;
        const d = await s.api.directiveUpsert({ uri, anchor: { line: 1, character: 4 }, request: "Handle integer overflow" });
        const first = await s.waitFor("turnback/directives", (p) => p.directives.some((x: any) => x.id === d.id), { since });
        assert.equal(first.uri, uri);
        let lenses = directiveLenses(s.state.directivesFor(uri)[0]);
        assert.match(lenses[0].title, new RegExp(`turnback: ${d.state}`));
        assert.deepEqual(lenses.map((l) => l.title).slice(1), ["$(play) Begin attempt", "$(edit) Edit request"],
            "no attempt yet: begin one, or edit the request");
        assert.deepEqual(lenses[1].arguments, [{ directiveId: d.id }]);

        // An attempt: a directive turn that edits the file, then its answer recorded.
        since = s.notifications.length;
        const { turn } = await s.api.turnBegin({ kind: "directive", prompt: "Handle integer overflow", directiveId: d.id });
        const running = await s.waitFor("turnback/directives", () => true, { since }).catch(() => undefined);
        await s.save("lib/math.py", "def add(a, b):\n    # TODO(turnback): handle overflow\n    return min(a + b, 2**63 - 1)\n");
        await s.api.turnRespond({ turn, text: "Clamped the sum." });
        await s.api.turnSettle({ turn });
        since = s.notifications.length;
        const recorded = await s.api.directiveRecord({ directiveId: d.id, turn, answer: "Clamped the sum." });
        await s.waitFor("turnback/directives", (p) => p.directives.some((x: any) => x.id === d.id && x.attempts.length === 1), { since });
        const now = s.state.directivesFor(uri)[0];
        assert.equal(now.state, recorded.state);
        lenses = directiveLenses(now);
        const titles = lenses.map((l) => l.title);
        artifact("codelens.txt", `${running ? `while running: ${directiveLenses(running.directives[0])[0].title}\n` : ""}` +
            `after the attempt (line ${now.anchor.line + 1}): ${titles.join("  |  ")}\n`);
        assert.match(titles[0], new RegExp(`turnback: ${now.state} · 1 attempt`));
        assert.equal(titles[1], `$(debug-step-back) Rewind before attempt (turn ${turn})`);
        assert.deepEqual(lenses[1].arguments, [{ directiveId: d.id, turn }]);
        assert.equal(titles[titles.length - 1], "$(edit) Edit request");
        assert.deepEqual(directiveAttemptPicks(now).map((p) => p.boundary), [{ kind: "beforeDirectiveAttempt", directiveId: d.id, turn }]);

        // Rewind before the attempt, as the lens does.
        since = s.notifications.length;
        const ui = scriptedUi();
        const out = await rewindFlow(s.api, { kind: "beforeDirectiveAttempt", directiveId: d.id, turn }, ui, { root: s.root });
        assert.equal(out.status, "committed", out.message);
        artifact("confirmation-directive.txt", confirmationText(ui.shown[0]));
        assert.match(ui.shown[0].detail, /Directives:\n\s+“Handle integer overflow”: 1 attempt discarded, then \w+/);
        assert.match(ui.shown[0].detail, /restore\s+lib\/math\.py/);
        assert.equal(s.read("lib/math.py"), "def add(a, b):\n    # TODO(turnback): handle overflow\n    return a + b\n");
        await s.waitFor("turnback/directives", (p) => p.directives.some((x: any) => x.id === d.id && x.attempts.length === 0), { since });
        const after = s.state.directivesFor(uri)[0];
        assert.deepEqual(directiveLenses(after).slice(1).map((l) => l.title), ["$(play) Begin attempt", "$(edit) Edit request"],
            "state, begin and edit only: the attempt is gone");

        // Edit the request (what the "Edit request" lens sends).
        since = s.notifications.length;
        await s.api.directiveUpsert({ id: d.id, uri, anchor: { line: after.anchor.line, character: after.anchor.character }, request: "Raise OverflowError instead" });
        await s.waitFor("turnback/directives", (p) => p.directives.some((x: any) => x.request === "Raise OverflowError instead"), { since });
        assert.match(directiveLenses(s.state.directivesFor(uri)[0])[0].tooltip!, /Raise OverflowError instead/);
    });
});

describe("the pid store: Redo is not offered", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace(), { store: { kind: "pid" } });
    });
    after(async () => {
        await s?.close();
    });

    test("redo says why, rewind still works", async () => {
        assert.equal((await s.api.sessionInfo()).storeKind, "pid");
        s.write("a.txt", "one\n");
        await chatTurn(s, "first", "ok", async () => s.save("a.txt", "two\n"));
        const ui = scriptedUi();
        const out = await redoFlow(s.api, async () => assert.fail("no pick on a pid store"), ui);
        assert.equal(out.status, "unavailable");
        assert.match(out.message, /Redo is not available/);
        assert.match(out.message, /turnback\.store\.kind/);
        assert.equal(ui.shown.length, 0);
        const r = await rewindFlow(s.api, { kind: "beforePrompt", turn: 1 }, scriptedUi(), { root: s.root });
        assert.equal(r.status, "committed", r.message);
        assert.equal(s.read("a.txt"), "one\n");
    });
});
