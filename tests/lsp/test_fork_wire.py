"""Fork over real stdio: prepare, a stale confirm, confirm, the epoch naming the branch, the frozen
parent refusing `turn/begin`, the lineage in `session/list`, and a refusal with its code."""

from __future__ import annotations

from .conftest import Tb
from .test_session import turn


async def test_fork_over_stdio(ws, servers, flavour):
    tb: Tb = await servers(ws, flavour)
    await turn(tb, "first", {"a.txt": "two\n"})
    await turn(tb, "second", {"a.txt": "three\n", "b.txt": "b\n"})
    parent = (await tb.req("turnback/session/info", {}))["sessionId"]
    report = await tb.req("turnback/fork/prepare", {"turn": 1})
    assert report["turn"] == 1 and "refusal" not in report and report["summary"]
    assert len(report["effects"]["restored"]) == 2  # the two file steps of turn 2
    stale = await tb.req("turnback/fork/confirm", {"turn": 1, "hash": "0" * 32})
    assert stale["status"] == "stale" and stale["report"]["hash"] == report["hash"]
    assert (ws / "b.txt").exists()
    out = await tb.req("turnback/fork/confirm", {"turn": 1, "hash": report["hash"]})
    assert out["status"] == "forked" and out["branch"]["parentId"] == parent
    branch = out["branch"]["sessionId"]
    assert (ws / "a.txt").read_text() == "two\n" and not (ws / "b.txt").exists()
    await tb.until(lambda: tb.epochs, what="the fork's epoch")
    assert tb.epochs[-1]["source"] == "fork" and tb.epochs[-1]["sessionId"] == branch
    assert tb.epochs[-1]["parentId"] == parent
    listed = {s["sessionId"]: s for s in (await tb.req("turnback/session/list", {}))["sessions"]}
    assert listed[parent]["frozen"] and listed[branch]["current"]
    assert listed[branch]["forkTurn"] == 1
    exc = await tb.error("turnback/turn/begin", {"prompt": "into the parent", "sessionId": parent})
    assert exc.data["code"] == "frozen"
    exc = await tb.error("turnback/fork/prepare", {"turn": 1, "sessionId": parent})
    assert exc.data["code"] == "frozen"
    old = await tb.req("turnback/session/log", {"sessionId": parent})
    assert [t["prompt"] for t in old["turns"]] == ["first", "second"] and old["frozen"]
    # The branch goes on; an opaque step in its tail makes the next fork a refusal, not an error.
    n = (await tb.req("turnback/turn/begin", {"prompt": "branch"}))["turn"]
    await tb.req("turnback/turn/step", {"turn": n, "kind": "shell", "scope": "host",
                                         "summary": "make install"})
    await tb.req("turnback/turn/settle", {"turn": n, "status": "settled"})
    refused = await tb.req("turnback/fork/prepare", {"turn": 1})
    assert refused["refusal"]["code"] == "fork-opaque-step"
    out = await tb.req("turnback/fork/confirm", {"turn": 1, "hash": refused["hash"]})
    assert out["status"] == "refused"
