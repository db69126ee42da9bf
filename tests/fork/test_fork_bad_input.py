"""Issue 25's bad input, refused or done whole with a clear word: a fork of a fork of a fork, and a
fork while a collection is under way (its Redo groups must survive it). The worktree target that
appears while the fork runs and a submodule with local changes are in test_fork_refuse_first.py."""

from __future__ import annotations

from forkkit import file_turn
from sessionkit import Agent
from travelkit import fork, tree

from turnback.store.fsck import fsck


def test_a_fork_of_a_fork_of_a_fork(agent):
    a = agent()
    file_turn(a, "one", {"a.txt": "a1"})
    file_turn(a, "two", {"a.txt": "a2"})
    trees, ids = [], [a.wb.state.session_id]
    for depth in range(3):  # each fork at turn 1 of the live branch, which then goes on
        trees.append(tree(a.root))
        out = fork(a, 1)
        assert out["status"] == "forked" and out["branch"]["parentId"] == ids[-1]
        ids.append(out["branch"]["sessionId"])
        file_turn(a, f"branch {depth} two", {"a.txt": f"b{depth}", f"new{depth}.txt": "n"})
    listed = {s["sessionId"]: s for s in a.wb.sessions.list()["sessions"]}
    assert [listed[sid]["frozen"] for sid in ids] == [True, True, True, False]
    assert [listed[sid]["parentId"] for sid in ids[1:]] == ids[:-1]
    # Redo offers the states of every frozen ancestor, each marked, and brings back each exactly.
    groups = [g for g in a.wb.redo.list()["groups"] if g["frozenParent"]]
    assert {g["sessionId"] for g in groups} == set(ids[:3])
    for ancestor, expected in zip(ids[:3], trees):
        group = next(g for g in a.wb.redo.list()["groups"]
                     if g.get("sessionId") == ancestor and g["turnCount"] == 2)
        plan = a.wb.redo.prepare({"headSeq": group["headSeq"]})
        assert a.wb.redo.commit({"headSeq": group["headSeq"],
                                 "planHash": plan["planHash"]})["status"] == "committed"
        assert tree(a.root) == expected, ancestor  # the branches' new files are gone too
    a.reopen()
    assert fsck(a.wb.store.path).ok


def test_a_fork_while_a_collection_runs_keeps_every_redo_state(agent):
    """The collector is a job in slices; a fork committed between two of its slices publishes heads
    (the parent's before state among them) and parks the parent: the collection must keep all of it."""
    a = agent(grace_heads=0, grace_seconds=0.0)
    file_turn(a, "one", {"a.txt": "a1"})
    file_turn(a, "two", {"a.txt": "a2"})
    (a.root / "a.txt").write_text("mine, never captured")
    before = tree(a.root)
    job = a.wb.collection.job()
    next(job)  # the collection is under way (its scan has begun)
    out = fork(a, 1)
    assert out["status"] == "forked"
    for _ in job:
        pass
    a.wb.collection.run({})  # and a full one after it
    group = next(g for g in a.wb.redo.list()["groups"] if g["frozenParent"] and g["keptBefore"])
    plan = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    assert a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": plan["planHash"]})["status"] \
        == "committed"
    assert tree(a.root) == before  # the edit the fork overwrote, back from a collected store
    parent = out["branch"]["parentId"]
    assert len(a.wb.sessions.log({"sessionId": parent})["turns"]) == 2
    a.close()
    assert fsck(a.root / ".turnback").ok
    b = Agent(a.root)
    b.close()
