"""Fail-at-N loops for the paths that had none: a turn (begin, capture, settle), a redo commit, a
collection of a plain (pid) store, and a stale owner (the lease lost mid-operation) for rewind, redo and
settle. Each fails unless at least 80 % of the points it sampled faulted (sessionkit.assert_faulted);
long loops are sampled with a fixed seed (at most SAMPLE points each)."""

from __future__ import annotations

import os
import random
import shutil
import time

import pytest
from test_loops import build, fresh, redo_job, rewind_job, snapshot, sound
from txnkit import assert_recorded_exactly, intents

from sessionkit import Agent, assert_faulted, normalised_log
from travelkit import tree
from turnback.errors import NotOwner, TurnbackError
from turnback.store.testing import faultplan

SEED = 11
SAMPLE = 24


def sampled(count: int) -> list[int]:
    return sorted(random.Random(SEED).sample(range(1, count + 1), min(SAMPLE, count)))


def one_turn(a):
    a.begin("three")
    a.write("a.txt", "a3")
    a.write("fresh/e.txt", "e3")
    a.step(kind="shell", scope="host", result="ok")
    a.settle()


def count_ops(tmp_path, pristine, kind, action, **agent_options) -> int:
    a = Agent(fresh(tmp_path, pristine, "count"), store_kind=kind, **agent_options)
    with faultplan.faults() as counter:
        action(a)
    a.close()
    return counter.count


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_fail_at_sampled_operations_of_a_turn(tmp_path, kind):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    faulted = 0
    points = sampled(count_ops(tmp_path, pristine, kind, one_turn))
    for n in points:
        work = fresh(tmp_path, pristine, f"turn{n}")
        a = Agent(work, store_kind=kind)
        with faultplan.faults(fail_at=n) as plan:
            try:
                one_turn(a)
            except (OSError, TurnbackError):
                pass
        faulted += plan.faulted
        live = normalised_log(a.log())
        try:
            a.close()
        except (OSError, TurnbackError):
            pass
        _files, got = snapshot(work, kind)
        assert got == live, f"a failure at operation {n} of a turn: a reopen disagrees with the live session"
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, len(points), f"turn ({kind})")


def test_fail_at_every_operation_of_a_redo_commit(tmp_path):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, rewound=True)
    before = snapshot(fresh(tmp_path, pristine, "before"))
    faulted, n, statuses = 0, 0, set()
    while True:
        n += 1
        work = fresh(tmp_path, pristine, f"redo{n}")
        a = Agent(work)
        job = redo_job(a)
        with faultplan.faults(fail_at=n) as plan:
            try:
                status = a.wb.run(job)["status"]
            except TurnbackError as exc:
                status = exc.code
        statuses.add(status)
        live = (tree(a.root), normalised_log(a.log()))
        a.close()
        got = snapshot(work)
        assert got == live, f"a failure at operation {n}: a reopen disagrees with the live process"
        if not plan.faulted:
            assert status == "committed" and got != before
            break
        faulted += 1
        if status != "committed" and got != before:  # named, file by file
            assert_recorded_exactly(work, got[0], before[0], f"a failure at operation {n}")
            assert got[1] == before[1], f"a failure at operation {n}: the session moved on"
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, n - 1, f"redo commit failed at every operation {sorted(statuses)}")
    assert "rolled-back" in statuses, statuses


def test_fail_at_every_operation_of_a_pid_store_collection(tmp_path):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, "pid", rewound=True)
    # Objects written moments ago count as new and are kept by any collection; make them old, so
    # the collection has garbage to delete whatever the timing of the run.
    old = time.time() - 3600
    for f in (pristine / ".turnback" / "objects").rglob("*"):
        if f.is_file():
            os.utime(f, (old, old), follow_symlinks=False)
    before = snapshot(fresh(tmp_path, pristine, "before"), "pid")

    def collect(a):
        a.wb.collection.run({})

    # counted with the options the loop runs with (no grace: the collection has work to do)
    total = count_ops(tmp_path, pristine, "pid", collect, grace_heads=0, grace_seconds=0.0)
    faulted = 0
    for n in range(1, total + 1):
        work = fresh(tmp_path, pristine, f"gc{n}")
        a = Agent(work, store_kind="pid", grace_heads=0, grace_seconds=0.0)
        with faultplan.faults(fail_at=n) as plan:
            try:
                collect(a)
            except (OSError, TurnbackError):
                pass
        faulted += plan.faulted
        a.close()
        assert snapshot(work, "pid") == before, f"a failure at operation {n} of a collection"
        a = Agent(work, store_kind="pid")
        try:  # everything a rewind needs is still there
            c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
            assert a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 1},
                                       "planHash": c["planHash"]})["status"] == "committed"
        finally:
            a.close()
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, total, "pid-store collection failed at every operation")


def settle_job(a):
    a.begin("three")
    a.write("a.txt", "a3")
    return a.wb.turns.settle_job({"turn": a.wb.state.running.n, "status": "settled"})


@pytest.mark.parametrize("make_job,rewound", [(rewind_job, False), (redo_job, True),
                                              (settle_job, False)], ids=["rewind", "redo", "settle"])
def test_an_owner_that_loses_its_lease_mid_operation(tmp_path, make_job, rewound):
    """The lease is stolen after the k-th ownership check (modelled at the check itself: another
    process took the store over while this one was stalled)."""
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, rewound=rewound)
    before = snapshot(fresh(tmp_path, pristine, "before"))
    stolen, k, statuses = 0, 0, set()
    while True:
        k += 1
        work = fresh(tmp_path, pristine, f"stale{k}")
        a = Agent(work)
        job = make_job(a)
        start = (tree(a.root), normalised_log(a.log()))
        owner = a.wb.book.owner
        real, calls = owner.check, {"n": 0}

        def check():
            calls["n"] += 1
            if calls["n"] >= k:
                raise NotOwner("injected: another process took the store over")
            return real()

        owner.check = check
        try:
            out = a.wb.run(job)
            status = out.get("status", "done")
        except NotOwner:
            status = "not-owner"
        owner.check = real
        statuses.add(status)
        live_log = normalised_log(a.log())
        a.close()
        files, log = snapshot(work)
        if calls["n"] < k:  # the lease was never lost: the operation ran to its end
            break
        stolen += 1
        assert not intents(work)
        if make_job is settle_job:
            assert log == live_log, f"stolen at check {k}: a reopen disagrees with the live session"
        else:
            assert status in ("rolled-back", "not-owner"), status
            assert (files, log) in (before, start), f"stolen at check {k}: not the old state"
        sound(work)
        shutil.rmtree(work)
    assert_faulted(stolen, k - 1, f"stale owner, {make_job.__name__}: lease lost at every check "
                   f"{sorted(statuses)}")
    if make_job is not settle_job:  # the lease lost at the commit point itself: a full rollback
        assert "rolled-back" in statuses, statuses
