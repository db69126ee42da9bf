"""Round 3's merged whole on the wire, through the real server: a fork in place that keeps the user's
edit merges it (`merged` in the result), its epoch names the branch, the Redo list then marks the
frozen parent's states and counts shared turns by content, Redo of the parent's kept *before* state
brings the user's bytes back; Redo of the state a file restore left behind sends no epoch."""

from __future__ import annotations

from .conftest import Tb
from .test_session import turn

APP = "def hello():\n    return 'hello'\n\n\ndef bye():\n    return 'bye'\n"
RENAMED = APP.replace("bye", "farewell")
COMMENT = "# Greetings, kept short.\n"


async def test_a_merged_fork_then_redo_over_stdio(ws, servers):
    tb: Tb = await servers(ws)
    await turn(tb, "write the app", {"src/app.py": APP})
    await turn(tb, "add a readme", {"README.md": "# app\n"})
    await turn(tb, "rename bye", {"src/app.py": RENAMED})
    (ws / "src/app.py").write_text(COMMENT + RENAMED)  # the user's edit, never captured
    parent = (await tb.req("turnback/session/info", {}))["sessionId"]
    report = await tb.req("turnback/fork/prepare", {"turn": 2})
    app = next(f for f in report["files"] if f["uri"] == tb.uri("src/app.py"))
    assert app["userEdit"] and app["merge"]["result"] == "merged"
    out = await tb.req("turnback/fork/confirm", {"turn": 2, "hash": report["hash"],
                                                 "keepUserEdits": True})
    assert out["status"] == "forked" and out["merged"] == [tb.uri("src/app.py")]
    assert "kept" not in out and (ws / "src/app.py").read_text() == COMMENT + APP
    await tb.until(lambda: tb.epochs, what="the fork's epoch")
    assert tb.epochs[-1]["source"] == "fork" and tb.epochs[-1]["parentId"] == parent

    listed = await tb.req("turnback/redo/list", {})
    last = next(g for g in listed["groups"] if g["turnCount"] == 3)
    assert last["frozenParent"] and last["sessionId"] == parent and last["sharedTurns"] == 2
    assert last["keptBefore"]
    plan = await tb.req("turnback/redo/prepare", {"headSeq": last["headSeq"]})
    done = await tb.req("turnback/redo/commit", {"headSeq": last["headSeq"],
                                                 "planHash": plan["planHash"]})
    assert done["status"] == "committed" and (ws / "src/app.py").read_text() == COMMENT + RENAMED
    await tb.until(lambda: tb.epochs[-1]["source"] == "redo", what="the Redo's epoch")
    again = await tb.req("turnback/redo/list", {})
    assert last["headSeq"] not in [g["headSeq"] for g in again["groups"]]  # it is the current state


async def test_redo_after_a_restore_sends_no_epoch_over_stdio(ws, servers):
    tb: Tb = await servers(ws)
    await turn(tb, "one", {"a.txt": "a1\n"})
    await turn(tb, "two", {"a.txt": "a2\n"})
    boundary = {"kind": "afterResponse", "turn": 1}
    params = {"paths": [tb.uri("a.txt")], "boundary": boundary}
    c = await tb.req("turnback/restore/prepare", params)
    await tb.req("turnback/restore/commit", {**params, "planHash": c["planHash"]})
    await tb.until(lambda: len(tb.rewound) == 1, what="the restore's turnback/rewound")
    state = next(g for g in (await tb.req("turnback/redo/list", {}))["groups"] if g["turnCount"] == 2)
    plan = await tb.req("turnback/redo/prepare", {"headSeq": state["headSeq"]})
    done = await tb.req("turnback/redo/commit", {"headSeq": state["headSeq"],
                                                 "planHash": plan["planHash"]})
    assert done["status"] == "committed" and "epoch" not in done
    assert (ws / "a.txt").read_text() == "a2\n"
    note = await tb.until(lambda: len(tb.rewound) == 2 and tb.rewound[-1], what="the Redo's rewound")
    assert note["operation"] == "redo" and note["files"] == [tb.uri("a.txt")]
    # the rewound notification follows the epoch one, were there any: none came
    assert tb.epochs == []
