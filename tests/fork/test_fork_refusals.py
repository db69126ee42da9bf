"""Every fork refusal has a stable code and a sentence, and a refused confirm changes nothing."""

from __future__ import annotations

import pytest
from forkkit import file_turn, three_turns
from sessionkit import normalised_log

from turnback.errors import TurnbackError
from turnback.store import lineage


def _refused(a, turn: int, code: str) -> dict:
    report = a.wb.fork.prepare({"turn": turn})
    assert report["refusal"]["code"] == code, report.get("refusal")
    assert len(report["refusal"]["message"]) > 30
    before = a.files(), normalised_log(a.log())
    out = a.wb.fork.confirm({"turn": turn, "hash": report["hash"]})
    assert out["status"] == "refused" and out["refusal"]["code"] == code
    assert (a.files(), normalised_log(a.log())) == before
    assert len(a.wb.sessions.list()["sessions"]) == 1
    return report


def test_an_opaque_step_in_the_tail(agent):
    a = agent()
    three_turns(a)
    ids = file_turn(a, "four", {"x.txt": "x"},
                    steps=[{"kind": "shell", "scope": "host", "summary": "make install"}])
    report = _refused(a, 3, "fork-opaque-step")
    assert report["refusal"]["steps"] == ids
    assert a.wb.fork.prepare({"turn": 4}).get("refusal") is None  # not in the tail of turn 4


def test_an_unknown_step_kind_is_opaque(agent):
    a = agent()
    three_turns(a)
    file_turn(a, "four", {}, steps=[{"kind": "teleport", "scope": "host"}])
    _refused(a, 3, "fork-opaque-step")


def test_a_non_idempotent_inverse_in_the_span(agent):
    a = agent()
    three_turns(a)
    ids = file_turn(a, "four", {}, steps=[
        {"kind": "network-send", "scope": "crossing", "summary": "append to ledger",
         "inverse": {"kind": "ledger-undo", "scope": "crossing", "idempotent": False}}])
    report = _refused(a, 3, "fork-non-idempotent")
    assert report["refusal"]["steps"] == ids


def test_a_boundary_whose_images_were_flushed(agent):
    a = agent()
    three_turns(a)
    report = a.wb.fork.prepare({"turn": 1})
    lost = next(f["to"] for f in report["files"] if f["path"] == "a.txt")
    path = a.wb.store.objects.path(lost) if hasattr(a.wb.store.objects, "path") else None
    assert path is not None and path.exists()
    path.unlink()
    _refused(a, 1, "fork-flushed")


def test_a_second_fork_while_one_is_under_way(agent):
    a = agent()
    three_turns(a)
    lineage.write_fork(a.wb.store, {"branchId": "f" * 32, "parentId": a.wb.state.session_id,
                                    "turn": 2, "phase": "begun", "created": 0.0})
    _refused(a, 1, "fork-busy")


def test_a_frozen_source_and_bad_params(agent):
    a = agent()
    three_turns(a)
    parent = a.wb.state.session_id
    report = a.wb.fork.prepare({"turn": 1})
    a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})
    with pytest.raises(TurnbackError) as e:
        a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "sessionId": parent})
    assert e.value.code == "frozen"
    for params, code in [({"turn": "1"}, "invalid-params"), ({}, "invalid-params"),
                         ({"turn": 9}, "unknown-turn")]:
        with pytest.raises(TurnbackError) as e:
            a.wb.fork.prepare(params)
        assert e.value.code == code
    a.begin("running")
    with pytest.raises(TurnbackError) as e:
        a.wb.fork.prepare({"turn": 1})
    assert e.value.code == "turn-running"
