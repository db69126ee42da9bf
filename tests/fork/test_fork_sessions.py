"""Many sessions in one store: `wb.sessions.start`, `session/list` with lineage, parked sessions that
stay readable (also after a collection), the guard on requests aimed at another session, and a crash at
every file-system operation of a start."""

from __future__ import annotations

import pytest
from sessionkit import Agent, crash_every_operation

from turnback.errors import TurnbackError
from turnback.store import lineage
from turnback.store.fsck import fsck


def _two_turns(a: Agent) -> None:
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_start_parks_the_live_session_and_lists_both(agent, kind):
    a = agent(store_kind=kind)
    _two_turns(a)
    first = a.wb.state.session_id
    made = a.wb.sessions.start(meta={"agent": "claude-code", "agentSession": "abc"})
    assert made["current"] and made["sessionId"] != first and made["turnCount"] == 0
    assert made["meta"] == {"agent": "claude-code", "agentSession": "abc"}
    a.reopen()
    listed = a.wb.sessions.list()["sessions"]
    assert [s["sessionId"] for s in listed] == [made["sessionId"], first]
    assert listed[0]["current"] and not listed[1]["current"]
    assert listed[1] == {"sessionId": first, "parentId": None, "forkTurn": None, "frozen": False,
                         "worktree": None, "turnCount": 2, "current": False,
                         "created": listed[1]["created"], "meta": {}}
    assert listed[0]["meta"]["agentSession"] == "abc"
    # The parked session stays readable, the live one starts empty.
    old = a.wb.sessions.log({"sessionId": first})
    assert [t["prompt"] for t in old["turns"]] == ["one", "two"] and old["sessionId"] == first
    assert a.log()["turns"] == []


def test_a_new_session_knows_the_files_so_its_first_turn_has_real_before_images(agent):
    a = agent()
    _two_turns(a)
    a.wb.sessions.start()
    a.turn("fresh", {"a.txt": "a3"})
    turn = a.log()["turns"][0]
    assert turn["gaps"] == []
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    assert [(f["path"], f["action"]) for f in c["files"]] == [("a.txt", "restore")]
    a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 1}, "planHash": c["planHash"]})
    assert (a.root / "a.txt").read_text() == "a2"  # the state the new session started from


def test_lineage_is_recorded_and_validated(agent):
    a = agent()
    _two_turns(a)
    first = a.wb.state.session_id
    child = a.wb.sessions.start(parent=first, fork_turn=1)
    assert (child["parentId"], child["forkTurn"]) == (first, 1)
    assert a.wb.info()["parentId"] == first
    with pytest.raises(TurnbackError) as e:
        a.wb.sessions.start(parent="nope")
    assert e.value.code == "not-found"
    with pytest.raises(TurnbackError) as e:
        a.wb.sessions.start(fork_turn=2)
    assert e.value.code == "invalid-params"
    a.begin("running")
    with pytest.raises(TurnbackError) as e:
        a.wb.sessions.start()
    assert e.value.code == "turn-running"


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_collection_keeps_every_parked_session_readable(agent, kind):
    a = agent(store_kind=kind, grace_heads=0, grace_seconds=0.0)
    _two_turns(a)
    first = a.wb.state.session_id
    a.wb.sessions.start()
    a.turn("other", {"c.txt": "c"})
    a.wb.sessions.start()
    a.turn("third", {"d.txt": "d"})
    stats = a.wb.collection.run({})
    assert stats["objectsDeleted"] >= 0 and not stats.get("skipped")
    assert [t["prompt"] for t in a.wb.sessions.log({"sessionId": first})["turns"]] == ["one", "two"]
    assert fsck(a.root / ".turnback").ok


def test_requests_aimed_at_another_session_are_refused(agent):
    a = agent()
    _two_turns(a)
    first = a.wb.state.session_id
    a.wb.sessions.start()
    a.wb.sessions.guard({"sessionId": a.wb.state.session_id})  # the live one: fine
    a.wb.sessions.guard({})
    with pytest.raises(TurnbackError) as e:
        a.wb.sessions.guard({"sessionId": first})
    assert e.value.code == "not-current" and e.value.data["current"] == a.wb.state.session_id
    with pytest.raises(TurnbackError) as e:
        a.wb.sessions.guard({"sessionId": "never-was"})
    assert e.value.code == "not-found"
    rec = lineage.read_session(a.wb.store, first)
    lineage.write_session(a.wb.store, dict(rec, frozen=True))
    with pytest.raises(TurnbackError) as e:
        a.wb.sessions.guard({"sessionId": first, "prompt": "more"})
    assert e.value.code == "frozen"


START = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
wb.sessions.start(meta={"n": 1})
wb.close()
"""


def _sessions_snapshot(root, kind):
    a = Agent(root, store_kind=kind)
    try:
        listed = a.wb.sessions.list()["sessions"]
        shape = [(s["turnCount"], s["current"], s["meta"]) for s in listed]
        return shape, [t["prompt"] for t in a.log()["turns"]]
    finally:
        a.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_a_session_start(tmp_path, kind):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    a = Agent(pristine, store_kind=kind)
    _two_turns(a)
    a.close()
    crash_every_operation(tmp_path, pristine, START, (kind,),
                          lambda root: _sessions_snapshot(root, kind))
