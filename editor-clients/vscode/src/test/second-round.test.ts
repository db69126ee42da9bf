// The second round's client parts: recovery (issue 11), fork and lineage (issue 14), the user's own
// edits and nothing-to-do (issue 15), $/progress on commits. Recovery and progress run against the
// REAL server; the rest drives the flows with a recording API where the server side is not in this
// build yet.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ProgressType } from "vscode-jsonrpc/node";

import { choiceOf, NOTHING_TO_REWIND, redoFlow, rewindFlow, rolledBackMessage } from "../flows";
import type { FlowUi } from "../flows";
import { FORK_HERE, FORK_WORKTREE, forkFlow, lineageNode, renderForkPlan } from "../fork";
import type { Boundary, Candidate, ForkPrepareResult, Recovery, SessionSummary, TurnbackApi } from "../protocol";
import { DISMISS, RETRY, recoveryFlow, recoveryPicks, renderRecovery } from "../recovery";
import { confirmationText, KEEP_MY_EDITS, renderCandidate, renderStatus } from "../render";
import type { Confirmation } from "../render";
import { plantRecovery, Session, startSession, tempWorkspace } from "./harness";

function answering(...answers: (boolean | string)[]): FlowUi & { shown: Confirmation[] } {
    const shown: Confirmation[] = [];
    return {
        shown,
        async confirm(c) {
            shown.push(c);
            return answers.length ? answers.shift() : true;
        },
    };
}

describe("recovery against the real server: the status bar, the list, Retry and Dismiss", () => {
    let s: Session;
    let retryId: string;
    let dismissId: string;
    before(async () => {
        const root = tempWorkspace();
        const fs = await import("node:fs");
        fs.writeFileSync(`${root}/a.txt`, "half-written\n");
        fs.writeFileSync(`${root}/b.txt`, "the user's own fix\n");
        retryId = plantRecovery(root, "a.txt", "as before the rewind\n", "disk full while restoring a.txt");
        dismissId = plantRecovery(root, "b.txt", "old b\n", "permission denied on b.txt");
        s = await startSession(root);
    });
    after(async () => {
        await s?.close();
    });

    test("the status bar counts the records and opens the recovery list", async () => {
        const info = await s.api.sessionInfo();
        assert.equal(info.recovery, 2);
        const view = renderStatus(await s.api.sessionStatus(), { root: s.root });
        assert.match(view.text, /\$\(alert\) 2/);
        assert.equal(view.opens, "recovery");
        assert.equal(view.warning, true);
        assert.match(view.tooltip, /2 recovery records waiting.*Click to review/);
    });

    test("Retry writes the backup image back; the count drops", async () => {
        const { recovery } = await s.api.recoveryList();
        const picks = recoveryPicks(recovery, s.root);
        assert.deepEqual(picks.map((p) => p.label).sort(), ["$(alert) rewind: a.txt", "$(alert) rewind: b.txt"]);
        const shown: Confirmation[] = [];
        const out = await recoveryFlow(s.api, {
            pick: async (items) => items.find((i) => i.id === retryId),
            confirm: async (c) => {
                shown.push(c);
                return RETRY;
            },
        }, { root: s.root });
        assert.equal(out.status, "resolved", out.message);
        assert.match(shown[0].title, /^A rewind on .* could not put everything back\.$/);
        assert.match(shown[0].detail, /Why: disk full while restoring a\.txt/);
        assert.match(shown[0].detail, /Not put back \(1\):\n  a\.txt/);
        assert.match(shown[0].detail, /The images that would put them back:\n  a\.txt ← image [0-9a-f]{12}/);
        assert.deepEqual([shown[0].action, shown[0].alternative], [RETRY, DISMISS]);
        assert.match(out.message, /^Put back: a\.txt, as the backup images had it\. 1 recovery record still waiting\.$/);
        assert.equal(s.read("a.txt"), "as before the rewind\n");
        assert.equal((await s.api.sessionInfo()).recovery, 1);
        await s.waitFor("turnback/status", (p) => p.recovery === 1);
    });

    test("Dismiss leaves the file as the user made it and clears the record", async () => {
        const out = await recoveryFlow(s.api, { pick: async () => undefined, confirm: async () => DISMISS }, { root: s.root });
        assert.equal(out.status, "dismissed", out.message);
        assert.equal(out.record?.id, dismissId);
        assert.match(out.message, /^Dismissed: turnback no longer offers to put back b\.txt/);
        assert.equal(s.read("b.txt"), "the user's own fix\n");
        assert.equal((await s.api.sessionInfo()).recovery, 0);
        const none = await recoveryFlow(s.api, { pick: async () => undefined, confirm: async () => RETRY });
        assert.equal(none.status, "none");
    });
});

describe("a rewind commit reports $/progress on the token the client sends", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace());
    });
    after(async () => {
        await s?.close();
    });

    test("begin … end on our token, and the rewind commits", async () => {
        const { turn } = await s.api.turnBegin({ kind: "chat", prompt: "write a file" });
        await s.save("f.txt", "new\n");
        await s.api.turnSettle({ turn, status: "settled" });
        const seen: any[] = [];
        const token = "client-token-1";
        const listening = s.conn.onProgress(new ProgressType<any>(), token, (p: any) => seen.push(p));
        const ui: FlowUi = {
            confirm: async () => true,
            during: async (_title, work) => work(token),
        };
        const out = await rewindFlow(s.api, { kind: "beforePrompt", turn: 1 }, ui, { root: s.root });
        listening.dispose();
        assert.equal(out.status, "committed", out.message);
        assert.equal(s.read("f.txt"), undefined);
        assert.equal(seen[0]?.kind, "begin", JSON.stringify(seen));
        assert.equal(seen[seen.length - 1]?.kind, "end", JSON.stringify(seen));
    });
});

describe("against the real server: the user's own edits, nothing to do, the lineage", () => {
    let s: Session;
    before(async () => {
        const root = tempWorkspace();
        const fs = await import("node:fs");
        fs.writeFileSync(`${root}/a.txt`, "one\n");
        s = await startSession(root);
    });
    after(async () => {
        await s?.close();
    });

    test("an edit saved between turns is flagged; Keep My Edits leaves it, the turn's change is undone", async () => {
        const { turn } = await s.api.turnBegin({ kind: "chat", prompt: "agent edits" });
        await s.save("a.txt", "two\n");
        await s.save("b.txt", "agent file\n");
        await s.api.turnSettle({ turn, status: "settled" });
        await s.save("a.txt", "two, and my own line\n"); // the user, between turns
        await s.sync();
        const ui = answering(KEEP_MY_EDITS.rewind);
        const out = await rewindFlow(s.api, { kind: "beforePrompt", turn: 1 }, ui, { root: s.root });
        const c = ui.shown[0];
        assert.match(c.detail, /restore  a\.txt  ✎ your edit \(saved in the editor\)/, c.detail);
        assert.equal(c.alternative, KEEP_MY_EDITS.rewind);
        assert.equal(out.status, "committed", out.message);
        assert.equal(s.read("a.txt"), "two, and my own line\n", "the user's edit stays");
        assert.equal(s.read("b.txt"), undefined, "the turn's new file is gone");
    });

    test("a rewind to where the session already is: nothing to do, no dialog", async () => {
        const { turn } = await s.api.turnBegin({ kind: "chat", prompt: "one more" });
        await s.save("c.txt", "c\n");
        await s.api.turnSettle({ turn, status: "settled" });
        const ui = answering();
        const out = await rewindFlow(s.api, { kind: "afterResponse", turn }, ui, { root: s.root });
        assert.equal(out.status, "nothing-to-do", out.message);
        assert.equal(ui.shown.length, 0);
        assert.equal(s.read("c.txt"), "c\n");
    });

    test("two sessions in the store: the view's lineage lists both, this one marked", async () => {
        assert.equal(lineageNode((await s.api.sessionList()).sessions), undefined, "one session: no lineage node");
        const first = (await s.api.sessionInfo()).sessionId;
        await s.conn.sendRequest("turnback/session/start", {});
        const { sessions } = await s.api.sessionList();
        const node = lineageNode(sessions)!;
        assert.equal(node.label, "Sessions (2)");
        const labels = node.children!.map((c) => c.label);
        const now = (await s.api.sessionInfo()).sessionId;
        assert.notEqual(now, first);
        assert.ok(labels.includes(`● ${now.slice(0, 8)}`), JSON.stringify(labels));
        assert.ok(labels.includes(first.slice(0, 8)), JSON.stringify(labels));
    });
});

// -- flows against a recording API (server parts built in parallel) -------------------------------

const BOUNDARY: Boundary = { kind: "afterResponse", turn: 1 };

function candidate(extra: Partial<Candidate> = {}): Candidate {
    return {
        planHash: "h1",
        keep: { turnCount: 1, last: { turn: 1, prompt: "first" } },
        discard: { turnCount: 1, first: { turn: 2, prompt: "second" } },
        files: [
            { uri: "file:///w/a.txt", path: "a.txt", action: "restore", from: "d1", to: "d0" },
            { uri: "file:///w/notes.md", path: "notes.md", action: "restore", from: "d3", to: "d2", userEdit: true, userEditBy: "editor-save" },
        ],
        gaps: [],
        effects: { restored: [], droppedBeforeCrossing: [], crossedUncompensated: [], crossedCompensated: [], wouldCrossOnRewind: [], unrestored: [], provablyEmpty: [] },
        directives: [],
        summary: "",
        ...extra,
    };
}

function recordingApi(answers: Record<string, unknown[]>): TurnbackApi & { calls: [string, unknown[]][] } {
    const calls: [string, unknown[]][] = [];
    const api: any = { calls };
    for (const [name, values] of Object.entries(answers)) {
        api[name] = async (...args: unknown[]) => {
            calls.push([name, args]);
            const v = values.length > 1 ? values.shift() : values[0];
            if (v instanceof Error) {
                throw v;
            }
            return v;
        };
    }
    return api;
}

describe("the user's own edits: flagged in the confirmation, kept on request (keepUserEdits)", () => {
    test("the confirmation names the edit and offers Rewind, Keep My Edits", () => {
        const c = renderCandidate({ ...candidate(), boundary: BOUNDARY });
        assert.match(c.detail, /restore  notes\.md  ✎ your edit \(saved in the editor\)/);
        assert.match(c.detail, /Your own edits, made by no discarded turn \(1\): notes\.md\./);
        assert.equal(c.alternative, KEEP_MY_EDITS.rewind);
        assert.match(c.detail, /\n\nGaps: none, everything in range was captured\.\n\nEffects: no step to account for\./, "sections apart");
        assert.match(confirmationText(c), /\[ Rewind \]  \[ Rewind, Keep My Edits \]  \[ Files Only… \]  \[ Conversation Only… \]  \[ Cancel \]/);
        assert.equal(renderCandidate({ ...candidate({ files: [candidate().files[0]] }), boundary: BOUNDARY }).alternative, undefined);
    });

    test("choosing it commits with keepUserEdits: true; plain Rewind does not send it", async () => {
        for (const [answer, keep] of [[KEEP_MY_EDITS.rewind, true], ["Rewind", false]] as const) {
            const api = recordingApi({ rewindPrepare: [candidate()], rewindCommit: [{ status: "committed", epoch: 2 }] });
            const out = await rewindFlow(api, BOUNDARY, answering(answer));
            assert.equal(out.status, "committed");
            assert.equal(out.keptUserEdits, keep);
            const commit = api.calls.find(([n]) => n === "rewindCommit")!;
            assert.deepEqual(commit[1][2], keep ? { keepUserEdits: true } : {});
            assert.equal(out.message.includes("Your own edits were kept"), keep);
        }
    });

    test("redo offers the same choice", async () => {
        const plan = { planHash: "r1", turnCount: 2, files: candidate().files, gaps: [] };
        const api = recordingApi({
            redoList: [{ available: true, groups: [{ headSeq: 7, turnCount: 2, forkPoint: "f", created: 0, lastPrompt: "second" }] }],
            redoPrepare: [plan], redoCommit: [{ status: "committed", headSeq: 9 }],
        });
        const ui = answering(KEEP_MY_EDITS.redo);
        const out = await redoFlow(api, async (g) => g[0], ui);
        assert.equal(ui.shown[0].alternative, KEEP_MY_EDITS.redo);
        assert.equal(out.status, "committed");
        assert.deepEqual(api.calls.find(([n]) => n === "redoCommit")![1][2], { keepUserEdits: true });
    });

    test("a boundary at the current state asks nothing: nothing to do", async () => {
        const api = recordingApi({ rewindPrepare: [candidate({ files: [], noop: true })] });
        const ui = answering();
        const out = await rewindFlow(api, BOUNDARY, ui);
        assert.equal(out.status, "nothing-to-do");
        assert.equal(out.message, NOTHING_TO_REWIND);
        assert.equal(ui.shown.length, 0);
        const late = recordingApi({ rewindPrepare: [candidate()], rewindCommit: [{ status: "nothing-to-do" }] });
        assert.equal((await rewindFlow(late, BOUNDARY, answering())).status, "nothing-to-do");
    });

    test("a rolled-back commit is said in words, the server's message first", async () => {
        const api = recordingApi({
            rewindPrepare: [candidate()],
            rewindCommit: [{ status: "rolled-back", message: "the disk filled up while writing a.txt; every file is as it was.", recovery: [] }],
        });
        const out = await rewindFlow(api, BOUNDARY, answering());
        assert.equal(out.status, "rolled-back");
        assert.equal(out.message, "the disk filled up while writing a.txt; every file is as it was.");
        assert.equal(rolledBackMessage("redo", { reason: "OSError: disk full." }),
            "The redo was rolled back (OSError: disk full): every file is as it was and the session did not change.");
        assert.equal(rolledBackMessage("rewind", { reason: "x", recovery: [{}] }),
            "The rewind was rolled back (x), but a recovery record keeps what could not be put back. See Turnback: Recovery….");
        assert.equal(rolledBackMessage("rewind", { message: "The rewind failed.", recovery: [{}, {}] }),
            "The rewind failed. See Turnback: Recovery….");
    });

    test("choiceOf: true or the action commits, the alternative keeps edits, anything else cancels", () => {
        const c = { title: "t", detail: "d", action: "Rewind", alternative: KEEP_MY_EDITS.rewind };
        assert.equal(choiceOf(c, true), "commit");
        assert.equal(choiceOf(c, "Rewind"), "commit");
        assert.equal(choiceOf(c, KEEP_MY_EDITS.rewind), "keep-user-edits");
        assert.equal(choiceOf(c, undefined), "cancel");
        assert.equal(choiceOf({ ...c, alternative: undefined }, KEEP_MY_EDITS.rewind), "cancel");
    });
});

describe("Fork at This Response: the confirmation, confirm, stale, refusal, worktree", () => {
    const plan = (hash: string, extra: Partial<ForkPrepareResult> = {}): ForkPrepareResult => ({
        hash, turn: 2, summary: "Forks after turn 2.",
        keep: { turnCount: 2, last: { turn: 2, prompt: "second" } },
        discard: { turnCount: 1, first: { turn: 3, prompt: "third" } },
        files: [{ uri: "file:///w/a.txt", path: "a.txt", action: "restore", from: "x", to: "y" }],
        gaps: [{ uri: null, turn: 3, reason: "step-scope-unknown" }],
        effects: { restored: ["s3.1"], droppedBeforeCrossing: ["s3.2"], crossedUncompensated: [], crossedCompensated: [], wouldCrossOnRewind: [], unrestored: [], provablyEmpty: [] },
        droppedSends: ["s3.2"], notPreserved: ["model seeds", "the clock", "provider versions"],
        ...extra,
    });
    const forked = { status: "forked", branch: { sessionId: "bbbbbbbb1111", parentId: "aaaaaaaa2222", worktree: null } };

    test("the confirmation names both sessions, the files, gaps, effects and what is not preserved", () => {
        const c = renderForkPlan(plan("h"), { root: "/w" });
        assert.equal(c.title, "Fork at the response of turn 2: continue in a new branch and freeze this session?");
        assert.match(c.detail, /Branch: a new session with turns 1–2 ending with turn 2 “second”/);
        assert.match(c.detail, /This session: frozen as it is \(read-only, no new turns\), with its 1 later turn from turn 3 “third” on\./);
        assert.match(c.detail, /restore\s+a\.txt/);
        assert.match(c.detail, /step-scope-unknown/);
        assert.match(c.detail, /Put back by this rewind:\n    step s3\.1/);
        assert.match(c.detail, /Held sends dropped before they leave this machine: step s3\.2\./);
        assert.match(c.detail, /does not preserve: model seeds, the clock, provider versions\./);
        assert.deepEqual([c.action, c.alternative], [FORK_HERE, FORK_WORKTREE]);
    });

    test("Fork Here confirms with the prepared hash and says who is frozen", async () => {
        const api = recordingApi({ forkPrepare: [plan("h1")], forkConfirm: [forked] });
        const out = await forkFlow(api, 2, { confirm: async () => FORK_HERE, worktreePath: async () => assert.fail("no path asked") });
        assert.equal(out.status, "forked");
        assert.deepEqual(api.calls.find(([n]) => n === "forkConfirm")![1], [2, "h1", undefined, false]);
        assert.equal(out.message, "Forked at turn 2: a new branch continues from there; the session you forked is frozen, read only.");
    });

    test("the user's own edits are listed and Fork Here, Keep My Edits confirms with keepUserEdits", async () => {
        const mine = plan("h1", { files: [{ uri: "file:///w/notes.md", path: "notes.md", action: "delete", from: "x", to: "absent", userEdit: true, userEditBy: "editor-save" }] });
        const c = renderForkPlan(mine, { root: "/w" });
        assert.match(c.detail, /Your own edits, made by no discarded turn \(1\): notes\.md\./);
        assert.deepEqual([c.action, c.alternative, c.more], [FORK_HERE, FORK_WORKTREE, [KEEP_MY_EDITS.fork]]);
        assert.equal(renderForkPlan(plan("h"), { root: "/w" }).more, undefined);  // nothing of theirs: no such button
        const api = recordingApi({ forkPrepare: [mine], forkConfirm: [{ ...forked, kept: ["file:///w/notes.md"] }] });
        const out = await forkFlow(api, 2, { confirm: async () => KEEP_MY_EDITS.fork, worktreePath: async () => assert.fail("no path asked") });
        assert.deepEqual(api.calls.find(([n]) => n === "forkConfirm")![1], [2, "h1", undefined, true]);
        assert.match(out.message, /Your edits left as they were: 1 file\.$/);
    });

    test("a stale confirm re-shows the fresh report and confirms its hash", async () => {
        const api = recordingApi({ forkPrepare: [plan("h1")], forkConfirm: [{ status: "stale", report: plan("h2") }, forked] });
        const shown: Confirmation[] = [];
        const out = await forkFlow(api, 2, { confirm: async (c) => (shown.push(c), true), worktreePath: async () => undefined });
        assert.equal(out.status, "forked");
        assert.equal(shown.length, 2);
        assert.match(shown[1].title, /^The session changed; here is the fresh plan\./);
        assert.deepEqual(api.calls.filter(([n]) => n === "forkConfirm").map(([, a]) => a[1]), ["h1", "h2"]);
    });

    test("a refusal is said without a confirmation", async () => {
        const api = recordingApi({ forkPrepare: [plan("h", { refusal: { code: "fork-busy", message: "one live branch at a time" } })] });
        const out = await forkFlow(api, 2, { confirm: async () => assert.fail("no dialog"), worktreePath: async () => undefined });
        assert.equal(out.status, "refused");
        assert.equal(out.message, "turnback cannot fork here: one live branch at a time [fork-busy]");
    });

    test("into a worktree: the path asked goes with the confirm; no path cancels", async () => {
        const api = recordingApi({ forkPrepare: [plan("h1")], forkConfirm: [{ ...forked, branch: { ...forked.branch, worktree: "/w-fork" } }] });
        const out = await forkFlow(api, 2, { confirm: async () => FORK_WORKTREE, worktreePath: async () => "/w-fork" });
        assert.deepEqual(api.calls.find(([n]) => n === "forkConfirm")![1], [2, "h1", "/w-fork", false]);
        assert.match(out.message, /Its files are in \/w-fork\.$/);
        const none = recordingApi({ forkPrepare: [plan("h1")], forkConfirm: [forked] });
        const cancelled = await forkFlow(none, 2, { confirm: async () => FORK_WORKTREE, worktreePath: async () => undefined });
        assert.equal(cancelled.status, "cancelled");
        assert.equal(none.calls.some(([n]) => n === "forkConfirm"), false);
    });

    test("the session view's lineage: parents before branches, frozen and current marked", () => {
        const sessions: SessionSummary[] = [
            { sessionId: "bbbbbbbb9", parentId: "aaaaaaaa1", forkTurn: 2, frozen: false, worktree: null, turnCount: 3, current: true },
            { sessionId: "aaaaaaaa1", parentId: null, forkTurn: null, frozen: true, worktree: null, turnCount: 4, current: false },
            { sessionId: "cccccccc5", parentId: "aaaaaaaa1", forkTurn: 1, frozen: false, worktree: "/w-fork", turnCount: 1, current: false },
        ];
        const node = lineageNode(sessions)!;
        assert.equal(node.label, "Sessions (3)");
        assert.equal(node.expanded, true);
        assert.deepEqual(node.children!.map((c) => [c.label, c.description]), [
            ["aaaaaaaa", "4 turns · frozen"],
            ["  ↳ ● bbbbbbbb", "3 turns · forked at turn 2"],
            ["  ↳ cccccccc", "1 turn · forked at turn 1 · in /w-fork"],
        ]);
        assert.equal(node.children![0].contextValue, "turnback.session.frozen");
        assert.equal(lineageNode([sessions[1]]), undefined, "one session: no lineage node");
    });
});

describe("recovery rendering", () => {
    test("a record with several paths and no backup", () => {
        const r: Recovery = { id: "r1", operation: "redo", created: 0, paths: ["file:///w/a", "file:///w/b", "file:///w/c", "file:///w/d"], reason: "x", backups: [] };
        assert.equal(recoveryPicks([r], "/w")[0].label, "$(alert) redo: a, b, c, +1");
        assert.match(renderRecovery(r, "/w").detail, /No backup image is kept for these paths\./);
    });
});
