"""A crash or failure at any file-system operation of a fork leaves, after the next open, either the
parent as it was (files rolled back, not frozen, no branch) or the whole fork (branch live, parent
frozen, records complete): never a mix. The paper this follows never had this test."""

from __future__ import annotations

import shutil

import pytest
from forkkit import three_turns
from sessionkit import Agent, crash_every_operation, normalised_log

from turnback.errors import TurnbackError
from turnback.store import fsio, lineage
from turnback.store.fsck import fsck

FORK = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
r = wb.fork.prepare({"turn": 1})
assert wb.fork.confirm({"turn": 1, "hash": r["hash"]})["status"] == "forked"
wb.close()
"""


def build(root, kind):
    a = Agent(root, store_kind=kind)
    three_turns(a)
    a.close()


def snapshot(root, kind):
    """Files, the lineage (without ids), the live log, and every fork record's phase."""
    a = Agent(root, store_kind=kind)
    try:
        listed = a.wb.sessions.list()["sessions"]
        shape = [(s["turnCount"], s["current"], s["frozen"], s["forkTurn"]) for s in listed]
        readable = [len(a.wb.sessions.log({"sessionId": s["sessionId"]})["turns"]) for s in listed]
        phases = [r["phase"] for r in lineage.forks(a.wb.store)]
        return a.files(), shape, readable, phases, normalised_log(a.log())["turns"]
    finally:
        a.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_a_fork(tmp_path, kind):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    outcomes = crash_every_operation(tmp_path, pristine, FORK, (kind,),
                                     lambda root: snapshot(root, kind))
    assert outcomes["old"] > 3 and outcomes["new"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_fail_every_operation_of_a_fork(tmp_path, kind):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    before = snapshot(pristine, kind)
    n, statuses, after = 0, set(), None
    while True:
        n += 1
        work = tmp_path / f"fail{n}"
        shutil.copytree(pristine, work, symlinks=True)
        a = Agent(work, store_kind=kind)
        report = a.wb.fork.prepare({"turn": 1})
        with fsio.faults(fail_at=n) as plan:
            try:
                status = a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})["status"]
            except TurnbackError as exc:
                status = exc.code
        reached = plan.count < n
        statuses.add(status)
        live_files = a.files()
        a.close()
        got = snapshot(work, kind)
        assert got[0] == live_files
        if reached:
            after = got
            assert status == "forked"
            break
        if status == "forked":
            assert got != before and got[1][1][2], f"failure {n}: forked but the parent is not frozen"
        else:
            assert got == before, f"failure at operation {n} ({status}) changed something"
        assert fsck(work / ".turnback").ok
        shutil.rmtree(work)
    assert after is not None and after != before
    assert "rolled-back" in statuses or "io-error" in statuses
