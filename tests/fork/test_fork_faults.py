"""A crash or failure at any file-system operation of a fork leaves, after the next open, either the
parent as it was (files rolled back, not frozen, no branch) or the whole fork (branch live, parent
frozen, records complete): never a mix. The paper this follows never had this test."""

from __future__ import annotations

import os
import shutil

import pytest
from forkkit import three_turns
from pychild import run_python
from sessionkit import Agent, assert_faulted, crash_every_operation, normalised_log
from travelkit import tree

from turnback.errors import TurnbackError
from turnback.store.testing import faultplan
from turnback.store import lineage
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
    """three_turns, with an empty folder and a permission bit a fork at turn 1 must put back, and
    an empty folder it must remove: the loops compare whole trees."""
    a = Agent(root, store_kind=kind)
    (a.root / "tool.sh").write_text("echo\n")
    os.chmod(a.root / "tool.sh", 0o644)
    (a.root / "keep").mkdir()
    three_turns(a)
    a.begin("four")
    os.chmod(a.root / "tool.sh", 0o755)
    os.rmdir(a.root / "keep")
    (a.root / "made" / "empty").mkdir(parents=True)
    a.settle()
    a.close()


def snapshot(root, kind):
    """Files, the lineage (without ids), the live log, and every fork record's phase."""
    a = Agent(root, store_kind=kind)
    try:
        listed = a.wb.sessions.list()["sessions"]
        shape = [(s["turnCount"], s["current"], s["frozen"], s["forkTurn"]) for s in listed]
        readable = [len(a.wb.sessions.log({"sessionId": s["sessionId"]})["turns"]) for s in listed]
        phases = [r["phase"] for r in lineage.forks(a.wb.store)]
        return tree(a.root), shape, readable, phases, normalised_log(a.log())["turns"]
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
    n, statuses, after, faulted = 0, set(), None, 0
    while True:
        n += 1
        work = tmp_path / f"fail{n}"
        shutil.copytree(pristine, work, symlinks=True)
        a = Agent(work, store_kind=kind)
        report = a.wb.fork.prepare({"turn": 1})
        with faultplan.faults(fail_at=n) as plan:
            try:
                status = a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})["status"]
            except TurnbackError as exc:
                status = exc.code
        reached = plan.count < n
        faulted += plan.faulted > 0
        statuses.add(status)
        live_files = tree(a.root)
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
    assert_faulted(faulted, n - 1, f"fork ({kind}) failed at every operation")
    assert "rolled-back" in statuses or "io-error" in statuses


def _power_cut(code: str, *args, crash_at: int):
    """A child killed at operation `crash_at` as a power cut would: every write and name change no
    fsync made durable is undone first (the seam's lose-unsynced crash model)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    env.update(TURNBACK_CRASH_AT=str(crash_at), TURNBACK_CRASH_MODEL="lose-unsynced")
    return run_python(code, *args, env=env, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_power_cut_at_every_operation_of_a_fork(tmp_path, kind):
    from sessionkit import pristine_copy

    from turnback.store.testing.faultplan import CRASH_EXIT

    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    before = snapshot(pristine_copy(tmp_path, pristine, "before"), kind)
    done = pristine_copy(tmp_path, pristine, "done")
    proc = _power_cut(FORK, done, kind, crash_at=10 ** 9)
    assert proc.returncode == 0, proc.stderr
    after = snapshot(done, kind)
    outcomes = {"old": 0, "new": 0}
    n = 0
    while True:
        n += 1
        work = pristine_copy(tmp_path, pristine, f"cut{n}")
        proc = _power_cut(FORK, work, kind, crash_at=n)
        if proc.returncode == 0:
            break
        assert proc.returncode == CRASH_EXIT, proc.stderr
        got = snapshot(work, kind)
        assert got in (before, after), f"a power cut at operation {n} left a mix"
        outcomes["old" if got == before else "new"] += 1
        assert fsck(work / ".turnback").ok, n
        shutil.rmtree(work)
    assert_faulted(outcomes["old"] + outcomes["new"], n - 1, f"fork ({kind}), a power cut")
    assert outcomes["old"] and outcomes["new"], outcomes
