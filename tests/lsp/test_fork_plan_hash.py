"""The plan hash has one name on the wire (issue 44): `turnback/fork/confirm` takes `planHash`, as
every other commit does, and still reads `hash`, the name clients already out send."""

from __future__ import annotations


async def test_fork_confirm_reads_plan_hash_and_its_older_name(ws, servers):
    tb = await servers(ws, "vscode")
    await tb.turn("one", {"a.txt": "a1"})
    await tb.turn("two", {"a.txt": "a2"})
    report = await tb.req("turnback/fork/prepare", {"turn": 1})

    err = await tb.error("turnback/fork/confirm", {"turn": 1})
    assert err.data["code"] == "invalid-params" and err.data["field"] == "planHash"
    err = await tb.error("turnback/fork/confirm", {"turn": 1, "hash": 7})  # the alias is checked too
    assert err.data["code"] == "invalid-params" and err.data["field"] == "hash"
    # `planHash` counts when both are sent: a wrong one is stale, whatever `hash` says
    out = await tb.req("turnback/fork/confirm", {"turn": 1, "planHash": "0" * 32,
                                                 "hash": report["hash"]})
    assert out["status"] == "stale" and out["report"]["hash"] == report["hash"]
    assert (ws / "a.txt").read_text() == "a2"

    out = await tb.req("turnback/fork/confirm", {"turn": 1, "planHash": report["hash"]})
    assert out["status"] == "forked" and out["branch"]["turnCount"] == 1
    assert (ws / "a.txt").read_text() == "a1"

    # the older name, as a client already out sends it
    await tb.turn("three", {"a.txt": "a3"})
    report = await tb.req("turnback/fork/prepare", {"turn": 1})
    out = await tb.req("turnback/fork/confirm", {"turn": 1, "hash": report["hash"]})
    assert out["status"] == "forked"
    assert (ws / "a.txt").read_text() == "a1"
