// Fork at This Response against the REAL server (issue 14): in place, then into a worktree; the
// lineage the session view draws from turnback/session/list.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { FORK_HERE, FORK_WORKTREE, forkFlow, lineageNode } from "../fork";
import type { Confirmation } from "../render";
import { Session, startSession, tempWorkspace } from "./harness";

describe("fork against the real server", () => {
    let s: Session;
    before(async () => {
        s = await startSession(tempWorkspace());
        for (const [prompt, file] of [["write a", "a.txt"], ["write b", "b.txt"]]) {
            const { turn } = await s.api.turnBegin({ kind: "chat", prompt });
            await s.save(file, `${file} by the agent\n`);
            await s.api.turnStep({ turn, kind: "file-write", scope: "host", summary: `wrote ${file}`, uris: [s.uri(file)] });
            await s.api.turnRespond({ turn, text: `wrote ${file}`, final: true });
            await s.api.turnSettle({ turn, status: "settled" });
        }
    });
    after(async () => {
        await s?.close();
    });

    test("Fork Here at turn 1: the confirmation, the branch, this folder back at turn 1, the parent frozen", async () => {
        const parent = (await s.api.sessionInfo()).sessionId;
        const shown: Confirmation[] = [];
        const out = await forkFlow(s.api, 1, {
            confirm: async (c) => (shown.push(c), FORK_HERE),
            worktreePath: async () => assert.fail("no worktree asked"),
        }, { root: s.root });
        assert.equal(out.status, "forked", out.message);
        assert.match(shown[0].title, /^Fork at the response of turn 1/);
        assert.match(shown[0].detail, /Branch: a new session with turn 1 ending with turn 1 “write a”/);
        assert.match(shown[0].detail, /This session: frozen as it is .*1 later turn from turn 2 “write b”/);
        assert.match(shown[0].detail, /delete\s+b\.txt/);
        assert.match(shown[0].detail, /Put back by this rewind:\n    wrote b\.txt \(turn 2\)/);
        assert.match(shown[0].detail, /The branch does not preserve: model seeds/);
        assert.equal(s.read("b.txt"), undefined, "this folder is back at the end of turn 1");
        assert.equal(s.read("a.txt"), "a.txt by the agent\n");
        const info = await s.api.sessionInfo();
        assert.notEqual(info.sessionId, parent);
        assert.equal(out.result?.branch?.parentId, parent);
        assert.equal(out.message, "Forked at turn 1: a new branch continues from there; the session you forked is frozen, read only.");
        const node = lineageNode((await s.api.sessionList()).sessions)!;
        assert.deepEqual(node.children!.map((c) => [c.label, c.description]), [
            [parent.slice(0, 8), "2 turns · frozen"],
            [`  ↳ ● ${info.sessionId.slice(0, 8)}`, "1 turn · forked at turn 1"],
        ]);
    });

    test("into a worktree: the branch's files are in the new folder, this one stays", async () => {
        const { turn } = await s.api.turnBegin({ kind: "chat", prompt: "write c" });
        await s.save("c.txt", "c\n");
        await s.api.turnStep({ turn, kind: "file-write", scope: "host", uris: [s.uri("c.txt")] });
        await s.api.turnSettle({ turn, status: "settled" });
        const target = path.join(tempWorkspace("turnback-vscode-wt-"), "branch");
        const out = await forkFlow(s.api, 1, { confirm: async () => FORK_WORKTREE, worktreePath: async () => target }, { root: s.root });
        assert.equal(out.status, "forked", out.message);
        assert.equal(out.result?.branch?.worktree, target);
        assert.match(out.message, /Its files are in /);
        assert.equal(fs.readFileSync(path.join(target, "a.txt"), "utf8"), "a.txt by the agent\n");
        assert.equal(fs.existsSync(path.join(target, "c.txt")), false);
        assert.equal(s.read("c.txt"), "c\n", "this folder is left as it is");
        const { sessions } = await s.api.sessionList();
        assert.ok(sessions.some((x) => x.worktree === target), JSON.stringify(sessions));
    });
});
