"""The in-place fork end to end through the workbench: report, hash, confirm, frozen parent, branch."""

from __future__ import annotations

import pytest
from forkkit import file_turn, fork, three_turns
from sessionkit import normalised_log

from turnback.effects.partition import BUCKETS
from turnback.errors import TurnbackError
from turnback.store import lineage


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_fork_report_confirm_and_the_frozen_parent(agent, kind):
    a = agent(store_kind=kind)
    ids = three_turns(a)
    parent = a.wb.state.session_id
    parent_log = normalised_log(a.log())
    epochs = []
    a.wb.events.subscribe(lambda name, p: epochs.append(p) if name == "epoch" else None)

    report = a.wb.fork.prepare({"turn": 1})
    assert report["turn"] == 1 and "refusal" not in report
    eff = report["effects"]
    assert set(eff) == set(BUCKETS)
    assert ids["sent"] in eff["crossedUncompensated"]
    assert ids["held"] in eff["droppedBeforeCrossing"]
    assert ids["charge"] in eff["crossedCompensated"]  # listed, never fired
    assert report["droppedSends"] == [ids["held"]]
    assert any("seeds" in x for x in report["notPreserved"])
    assert "frozen" in report["summary"]

    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})
    assert out["status"] == "forked"
    branch = out["branch"]
    assert branch["parentId"] == parent and branch["sessionId"] != parent
    assert branch["turnCount"] == 1
    # The workspace is at the end of turn 1; the branch is live with a fresh id and its provenance.
    assert a.files() == {"a.txt": b"a1"}
    assert a.wb.state.session_id == branch["sessionId"]
    lin = a.log()["lineage"]
    assert lin["parentId"] == parent and lin["forkTurn"] == 1 and lin["notPreserved"]
    assert lin["droppedSends"] == [ids["held"]]
    assert a.wb.state.workflow == {"tasks": [], "goals": [], "agents": [], "handoffs": []}
    # The epoch names the branch.
    assert epochs == [{"source": "fork", "sessionId": branch["sessionId"], "parentId": parent,
                       "turnCount": 1, "epoch": a.wb.state.epoch}]

    for reopened in (False, True):
        if reopened:
            a.reopen()
        listed = {s["sessionId"]: s for s in a.wb.sessions.list()["sessions"]}
        assert listed[parent]["frozen"] and not listed[parent]["current"]
        assert listed[parent]["turnCount"] == 3
        assert listed[branch["sessionId"]]["current"] and not listed[branch["sessionId"]]["frozen"]
        assert (listed[branch["sessionId"]]["parentId"], listed[branch["sessionId"]]["forkTurn"]) \
            == (parent, 1)
        # The parent is readable, whole, and refuses every mutation with `frozen`.
        old = a.wb.sessions.log({"sessionId": parent})
        assert old["frozen"] and normalised_log({k: v for k, v in old.items() if k != "frozen"}) \
            == parent_log
        with pytest.raises(TurnbackError) as e:
            a.wb.sessions.guard({"sessionId": parent, "prompt": "more"})
        assert e.value.code == "frozen" and branch["sessionId"] in e.value.message
        with pytest.raises(TurnbackError) as e:
            a.wb.fork.prepare({"turn": 1, "sessionId": parent})
        assert e.value.code == "frozen"
    records = [r for r in lineage.forks(a.wb.store)]
    assert [(r["phase"], r["branchId"]) for r in records] == [("complete", branch["sessionId"])]
    assert records[0]["effects"] == report["effects"]
    # The branch takes new turns.
    file_turn(a, "branch two", {"c.txt": "c"})
    assert a.log()["turns"][-1]["prompt"] == "branch two"


def test_a_stale_hash_returns_a_fresh_report_and_changes_nothing(agent):
    a = agent()
    three_turns(a)
    report = a.wb.fork.prepare({"turn": 1})
    file_turn(a, "four", {"d.txt": "d"})  # the session moved on
    before = a.files(), normalised_log(a.log())
    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})
    assert out["status"] == "stale" and out["report"]["hash"] != report["hash"]
    assert (a.files(), normalised_log(a.log())) == before
    assert len(a.wb.sessions.list()["sessions"]) == 1 and not lineage.forks(a.wb.store)
    assert a.wb.fork.confirm({"turn": 1, "hash": out["report"]["hash"]})["status"] == "forked"


def test_the_hash_is_bound_to_composition_and_span(agent):
    a = agent()
    three_turns(a)
    h1 = a.wb.fork.prepare({"turn": 1})["hash"]
    assert a.wb.fork.prepare({"turn": 1})["hash"] == h1  # deterministic
    assert a.wb.fork.prepare({"turn": 2})["hash"] != h1
    a.wb.state.config["approvals"] = ["rm -rf"]  # configuration is part of the composition
    assert a.wb.fork.prepare({"turn": 1})["hash"] != h1
    del a.wb.state.config["approvals"]
    a.wb.state.turns[0].instructions["CLAUDE.md"] = "0" * 32  # an instruction snapshot changed
    assert a.wb.fork.prepare({"turn": 1})["hash"] != h1


def test_the_branch_inherits_no_approvals_and_no_workflow(agent):
    a = agent()
    three_turns(a)
    a.wb.turns.workflow_set({"tasks": [{"id": "t"}], "goals": [{"id": "g"}]})
    a.wb.state.config["approvals"] = ["Bash(ls)"]
    out = fork(a, 2)
    assert out["status"] == "forked"
    assert "approvals" not in a.wb.state.config
    assert a.wb.turns.workflow_get({}) == {"tasks": [], "goals": [], "agents": [], "handoffs": []}


def test_redo_brings_the_frozen_parents_state_back_into_the_branch(agent):
    a = agent()
    three_turns(a)
    parent = a.wb.state.session_id
    branch = fork(a, 1)["branch"]["sessionId"]
    groups = a.wb.redo.list()["groups"]
    mine = [g for g in groups if g["turnCount"] == 3]
    assert mine, groups
    plan = a.wb.redo.prepare({"headSeq": mine[0]["headSeq"]})
    assert a.wb.redo.commit({"headSeq": mine[0]["headSeq"], "planHash": plan["planHash"]})["status"] \
        == "committed"
    assert a.files() == {"b.txt": b"b2"}
    assert a.wb.state.session_id == branch and a.log()["lineage"]["parentId"] == parent
    assert a.wb.sessions.is_frozen(parent)


def test_a_fork_of_the_branch_freezes_the_branch_too(agent):
    a = agent()
    three_turns(a)
    first = a.wb.state.session_id
    b1 = fork(a, 2)["branch"]["sessionId"]
    file_turn(a, "b1 three", {"e.txt": "e"})
    b2 = fork(a, 1)["branch"]["sessionId"]
    listed = {s["sessionId"]: s for s in a.wb.sessions.list()["sessions"]}
    assert listed[first]["frozen"] and listed[b1]["frozen"] and not listed[b2]["frozen"]
    assert listed[b2]["parentId"] == b1 and listed[b1]["parentId"] == first
