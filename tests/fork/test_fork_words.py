"""Words that match (issue 25, item 7): a fork's report says what a fork does; compare says when two
names are one session, counts shared turns by content and compares a worktree fork with its parent
from either folder; Redo marks a frozen parent's states; a plain (pid) store says its fork cannot be
redone."""

from __future__ import annotations

from forkkit import file_turn, three_turns
from sessionkit import Agent
from travelkit import as_json, fork, ok

from turnback.store.layout import Store
from turnback.travel.offline import compare


def _store(root) -> Store:
    return Store.open(root / ".turnback", kind=None, create=False)


def test_the_fork_report_speaks_of_a_fork(agent):
    a = agent()
    three_turns(a)
    a.close()
    out = ok(a.root, "fork", "--turn", "1")  # no --yes: the report only
    assert "What this rewind cannot undo" not in out and "Discards" not in out
    assert "In the frozen session only" in out and "2 later turn(s), from turn 2" in out
    assert "put back" in out and "this session is frozen" in out
    assert "Redo can bring back its states" in out


def test_a_pid_store_says_its_fork_cannot_be_redone(agent):
    a = agent(store_kind="pid")
    three_turns(a)
    report = a.wb.fork.prepare({"turn": 1})
    assert report["redoable"] is False
    assert "no Redo" in report["summary"] and "Redo can bring back" not in report["summary"]
    a.close()
    out = ok(a.root, "fork", "--turn", "1")
    assert "no Redo" in out and "Redo can bring back" not in out


def test_compare_says_when_two_names_are_one_session(agent):
    a = agent()
    three_turns(a)
    a.close()
    c = as_json(a.root, "compare", "current", "current")
    assert c["sameSession"] is True and c["files"] == [] and c["sharedTurns"] == 3
    out = ok(a.root, "compare", "current", a.wb.state.session_id[:8])
    assert "are one session" in out


def test_compare_counts_shared_turns_by_content_after_a_redo(agent):
    a = agent()
    for n in range(5):
        file_turn(a, f"turn {n + 1}", {"a.txt": f"a{n + 1}"})
    parent = a.wb.state.session_id
    assert fork(a, 2)["status"] == "forked"
    group = next(g for g in a.wb.redo.list()["groups"] if g["frozenParent"])
    assert group["sessionId"] == parent and group["turnCount"] == 5
    plan = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    assert a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": plan["planHash"]})["status"] \
        == "committed"
    c = compare(_store(a.root), parent, "current")
    assert c["sharedTurns"] == 5 and c["a"]["turns"] == [] and c["b"]["turns"] == []
    assert c["liveReport"]["forkTurn"] == 2 and c["liveReport"]["agrees"] is True


def test_a_worktree_fork_compares_with_its_parent_from_either_folder(agent, tmp_path):
    a = agent()
    three_turns(a)
    parent = a.wb.state.session_id
    target = tmp_path / "wt"
    out = fork(a, 1, worktree=str(target))
    child_id = out["branch"]["sessionId"]
    a.close()
    child = Agent(target)
    file_turn(child, "in the worktree", {"w.txt": "w"})
    child.close()
    from_parent = as_json(a.root, "compare", "current", child_id[:10])
    from_child = as_json(target, "compare", parent[:10], "current")
    for c in (from_parent, from_child):
        assert c["sameSession"] is False and c["sharedTurns"] == 1
    assert [t["prompt"] for t in from_parent["a"]["turns"]] == ["two", "three"]
    assert [t["prompt"] for t in from_parent["b"]["turns"]] == ["in the worktree"]
    assert [t["prompt"] for t in from_child["a"]["turns"]] == ["two", "three"]
    assert [t["prompt"] for t in from_child["b"]["turns"]] == ["in the worktree"]
    assert from_parent["liveReport"]["agrees"] and from_child["liveReport"]["agrees"]
    assert "share 1 turn(s)" in ok(target, "compare", parent[:10], "current")
