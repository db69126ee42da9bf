"""Fault loops the suite lacked: cancellation at every yield, a full disk and a power cut (lost unsynced
writes) at every (sampled) operation of a commit, and faults inside recovery and resolve-retry.

Each loop counts the points it faulted and fails unless at least 80 % of the points it sampled faulted
(sessionkit.assert_faulted). Long loops sample their points with a fixed seed, so CI time stays
bounded. A state that is neither old nor new must be named, file by file, by recovery records."""

from __future__ import annotations

import os
import random
import shutil

import pytest
from txnkit import (BOUNDARY, REWIND_CHILD, assert_recorded_exactly, crashed_mid_apply, intents,
                    recovery_files, three_files)

from sessionkit import REDO_CHILD, Agent, assert_faulted, normalised_log, run_child
from travelkit import tree
from turnback.errors import TurnbackError
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck

SEED = 11
SAMPLE = 24  # points per sampled loop


def build(root, kind="heads", *, rewound=False):
    a = Agent(root, store_kind=kind)
    three_files(a)
    if rewound:
        c = a.wb.rewind.prepare({"boundary": BOUNDARY})
        assert a.wb.rewind.commit({"boundary": BOUNDARY, "planHash": c["planHash"]})["status"] == \
            "committed"
    a.close()


def snapshot(root, kind="heads"):
    a = Agent(root, store_kind=kind)
    try:
        return tree(a.root), normalised_log(a.log())
    finally:
        a.close()


def fresh(tmp_path, pristine, name):
    work = tmp_path / name
    shutil.copytree(pristine, work, symlinks=True)
    return work


def sound(work):
    report = fsck(work / ".turnback")
    assert report.ok, [str(p) for p in report.problems]


def rewind_job(a):
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    return a.wb.rewind.commit_job({"boundary": BOUNDARY, "planHash": c["planHash"]})


def redo_job(a):
    g = a.wb.redo.list()["groups"][0]
    p = a.wb.redo.prepare({"headSeq": g["headSeq"]})
    return a.wb.redo.commit_job({"headSeq": g["headSeq"], "planHash": p["planHash"]})


def collect_job(a):
    return a.wb.collection.job()


def untracked(a, n=150):
    """Files the sweep must read (enough of them that the sweep yields)."""
    (a.root / "many").mkdir(exist_ok=True)
    for i in range(n):
        (a.root / "many" / f"u{i}.txt").write_text(f"seen by the sweep {i}")


def begin_job(a):
    untracked(a)
    return a.wb.turns.begin_job({"prompt": "three"})


def settle_job(a):
    a.begin("three")
    (a.root / "b.txt").write_text("b3, seen by the settle sweep")
    untracked(a)
    return a.wb.turns.settle_job({"turn": a.wb.state.running.n, "status": "settled"})


# -- cancellation at every yield ------------------------------------------------------------------
@pytest.mark.parametrize("make_job,rewound,kind", [
    (rewind_job, False, "heads"), (rewind_job, False, "pid"), (redo_job, True, "heads"),
    (collect_job, True, "heads"), (collect_job, True, "pid"), (begin_job, False, "heads"),
    (settle_job, False, "heads")], ids=["rewind", "rewind-pid", "redo", "collect", "collect-pid",
                                        "begin-sweep", "settle-sweep"])
def test_closing_a_job_at_every_yield_leaves_old_or_new(tmp_path, make_job, rewound, kind):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind, rewound=rewound)
    done = fresh(tmp_path, pristine, "done")
    a = Agent(done, store_kind=kind)
    before = (tree(a.root), normalised_log(a.log()))
    a.wb.run(make_job(a))
    a.close()
    after = snapshot(done, kind)
    tried, n = 0, 0
    while True:
        n += 1
        work = fresh(tmp_path, pristine, f"cancel{n}")
        a = Agent(work, store_kind=kind)
        job = make_job(a)
        try:
            for _ in range(n):
                next(job)
        except StopIteration:
            a.close()
            break
        job.close()
        tried += 1
        live = (tree(a.root), normalised_log(a.log()))
        a.close()
        got = snapshot(work, kind)
        assert got == live, f"closed at yield {n}: the live process and a reopen disagree"
        if make_job in (rewind_job, redo_job):  # the others may stop between their durable steps
            assert got in (before, after), f"closed at yield {n}: neither old nor new"
        assert not intents(work)
        sound(work)
        shutil.rmtree(work)
    assert_faulted(tried, n - 1, f"{make_job.__name__} ({kind}) closed at every yield")


# -- a full disk at every operation of a commit ---------------------------------------------------
@pytest.mark.parametrize("make_job,rewound", [(rewind_job, False), (redo_job, True)],
                         ids=["rewind", "redo"])
def test_a_full_disk_at_every_operation_of_a_commit(tmp_path, make_job, rewound):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, rewound=rewound)
    before = snapshot(fresh(tmp_path, pristine, "before"))
    count_at = fresh(tmp_path, pristine, "count")
    a = Agent(count_at)
    job = make_job(a)
    with faultplan.faults() as counter:
        a.wb.run(job)
    a.close()
    after = snapshot(count_at)
    points = sorted(random.Random(SEED).sample(range(1, counter.count + 1),
                                               min(SAMPLE, counter.count)))
    faulted = 0
    for n in points:
        work = fresh(tmp_path, pristine, f"full{n}")
        a = Agent(work)
        job = make_job(a)
        claimed = []
        with faultplan.faults(disk_full_at=n) as plan:
            try:
                out = a.wb.run(job)
                claimed = out.get("recovery", [])
            except TurnbackError:
                pass
        faulted += plan.faulted > 0
        for rec in claimed:  # a record the reply names exists
            assert (work / ".turnback" / "recovery" / f"{rec['id']}.cbor").exists()
        try:
            a.close()
        except TurnbackError:
            pass
        got = snapshot(work)
        if got not in (before, after):  # a rollback that could not finish: named, file by file
            assert_recorded_exactly(work, got[0], before[0], f"a full disk from operation {n}")
            assert got[1] == before[1], f"a full disk from operation {n}: the session moved on"
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, len(points), f"full disk, {make_job.__name__} ({counter.count} operations)")


# -- a power cut (lost unsynced writes) at sampled operations of a rewind commit -------------------


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the crash model needs /proc")
@pytest.mark.parametrize("kind,child", [("heads", REWIND_CHILD), ("pid", REWIND_CHILD),
                                        ("heads", REDO_CHILD)], ids=["rewind", "rewind-pid", "redo"])
def test_a_power_cut_during_a_commit_leaves_old_or_new(tmp_path, monkeypatch, kind, child):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind, rewound=child is REDO_CHILD)
    before = snapshot(fresh(tmp_path, pristine, "before"), kind)
    done = fresh(tmp_path, pristine, "done")
    assert run_child(child, done, kind).returncode == 0
    after = snapshot(done, kind)
    total = _child_operations(tmp_path, pristine, kind, child)
    monkeypatch.setenv("TURNBACK_CRASH_MODEL", "lose-unsynced")
    # and the last operation: the counted total varies by a few operations from run to run (random
    # ids), so a fixed sample could fall wholly before the commit point and never see "new"
    sample = random.Random(SEED).sample(range(1, total + 1), min(SAMPLE, total))
    points = sorted({total} | set(sample))
    outcomes = {"old": 0, "new": 0}
    crashed = 0
    for n in points:
        work = fresh(tmp_path, pristine, f"cut{n}")
        proc = run_child(child, work, kind, crash_at=n)
        assert proc.returncode in (0, faultplan.CRASH_EXIT), proc.stderr
        crashed += proc.returncode == faultplan.CRASH_EXIT  # (the count of operations varies a little)
        got = snapshot(work, kind)
        assert got in (before, after), f"a power cut at operation {n} left a mix"
        outcomes["old" if got == before else "new"] += 1
        sound(work)
        shutil.rmtree(work)
    assert_faulted(crashed, len(points), f"power cut ({kind}, {'redo' if child is REDO_CHILD else 'rewind'}, {total} operations)")
    assert outcomes["old"] and outcomes["new"], (crashed, outcomes)


def _counting(child: str) -> str:
    return child.replace("wb = Workbench.open", "from turnback.store import fs; from turnback.store.testing import faultplan\n"
                         "plan = faultplan.FaultPlan()\nfaultplan.install(plan)\nwb = Workbench.open"
                         ) + "print(plan.count)\n"


def _child_operations(tmp_path, pristine, kind, child) -> int:
    work = fresh(tmp_path, pristine, "counted")
    proc = run_child(_counting(child), work, kind)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1])


OPEN_CHILD = ("import sys\nfrom turnback.workbench import Workbench, Options\n"
              "from turnback.store import fs; from turnback.store.testing import faultplan\n"
              "try:\n    Workbench.open(sys.argv[1], Options()).close()\n"
              "finally:\n    print('FAULTED', faultplan.current().faulted if faultplan.current() else 0)\n")


def _faulted(proc) -> bool:
    """Whether the child's plan faulted (a failure the open absorbs counts: it was tried)."""
    return any(line.startswith("FAULTED ") and line.split()[1] != "0"
               for line in proc.stdout.splitlines())


# -- faults inside recovery itself ----------------------------------------------------------------
def test_fail_at_every_operation_of_recovery_then_reopen(tmp_path):
    pristine, before = crashed_mid_apply(tmp_path)
    count_at = fresh(tmp_path, pristine, "count")
    with faultplan.faults() as counter:
        Agent(count_at).close()
    faulted = 0
    for n in range(1, counter.count + 1):  # in a child: a failed open must not leave our own lease
        work = fresh(tmp_path, pristine, f"rfail{n}")
        proc = run_child(OPEN_CHILD, work, fail_at=n)
        faulted += _faulted(proc)
        if proc.returncode != 0:
            # Reopen, as a user would: a failed cleanup may have left one of our temp files, which
            # the next open removes; the state it then shows must be the old one, never a mix.
            assert run_child(OPEN_CHILD, work).returncode == 0
        files, _log = snapshot(work)
        if files != before:  # listed for the user, exactly the files it could not put back
            assert_recorded_exactly(work, files, before, f"a failure at operation {n} of recovery")
        assert not intents(work)
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, counter.count, "recovery failed at each operation")


@pytest.mark.parametrize("model", ["process-death", "lose-unsynced"])
def test_crash_at_sampled_operations_of_recovery_then_reopen(tmp_path, monkeypatch, model):
    if model == "lose-unsynced" and not os.path.exists("/proc/self/fd"):
        pytest.skip("the crash model needs /proc")
    pristine, before = crashed_mid_apply(tmp_path)
    if model == "lose-unsynced":
        monkeypatch.setenv("TURNBACK_CRASH_MODEL", model)
    count_at = fresh(tmp_path, pristine, "count")
    with faultplan.faults() as counter:
        Agent(count_at).close()
    points = sorted(random.Random(SEED).sample(range(1, counter.count + 1),
                                               min(SAMPLE, counter.count)))
    crashed = 0
    for n in points:
        work = fresh(tmp_path, pristine, f"rcrash{n}")
        proc = run_child(OPEN_CHILD, work, crash_at=n)
        crashed += proc.returncode == faultplan.CRASH_EXIT
        if proc.returncode != 0:
            assert run_child(OPEN_CHILD, work).returncode == 0  # reopen (removes our temp files)
        assert snapshot(work)[0] == before, f"a crash at operation {n} of recovery left a mix"
        assert not intents(work)
        sound(work)
        shutil.rmtree(work)
    assert_faulted(crashed, len(points), f"recovery ({model}, {counter.count} operations)")


def with_a_recovery_record(pristine, monkeypatch):
    """A rewind whose rollback of a.txt failed: one recovery record; returns (id, files a retry
    must leave)."""
    from turnback.travel import disk

    a = Agent(pristine)
    three_files(a)
    real = disk.place
    seen = []

    def flaky(rel, tmp, final):  # a written, b fails, a's rollback fails
        seen.append(rel)
        if rel == "b.txt" or (rel == "a.txt" and seen.count("a.txt") > 1):
            raise OSError(5, "disk gone", rel)
        return real(rel, tmp, final)

    monkeypatch.setattr(disk, "place", flaky)
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    rid = a.wb.rewind.commit({"boundary": BOUNDARY, "planHash": c["planHash"]})["recovery"][0]["id"]
    monkeypatch.undo()
    expected = dict(a.files(), **{"a.txt": b"a2"})
    a.close()
    return rid, expected


RETRY_CHILD = ("import sys\nfrom turnback.workbench import Workbench, Options\n"
               "wb = Workbench.open(sys.argv[1], Options())\n"
               "rid = wb.recovery.list()['recovery'][0]['id']\n"
               "wb.recovery.resolve({'id': rid, 'action': 'retry'})\nwb.close()\n")


def test_crash_at_every_operation_of_resolve_retry(tmp_path, monkeypatch):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    rid, expected = with_a_recovery_record(pristine, monkeypatch)
    crashed, n = 0, 0
    while True:
        n += 1
        work = fresh(tmp_path, pristine, f"rcrash{n}")
        proc = run_child(RETRY_CHILD, work, crash_at=n)
        a = Agent(work)
        try:
            if proc.returncode == 0:
                assert a.files() == expected and not recovery_files(work)
                break
            assert proc.returncode == faultplan.CRASH_EXIT, proc.stderr
            crashed += 1
            left = a.wb.recovery.list()["recovery"]
            if left:  # the record outlived the crash: retrying it now finishes the job
                assert a.wb.recovery.resolve({"id": rid, "action": "retry"})["status"] == "resolved"
            assert a.files() == expected and not recovery_files(work)
        finally:
            a.close()
        sound(work)
        shutil.rmtree(work)
    assert_faulted(crashed, n - 1, "resolve retry crashed at every operation")


def test_fail_at_every_operation_of_resolve_retry(tmp_path, monkeypatch):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    rid, expected = with_a_recovery_record(pristine, monkeypatch)
    faulted, n = 0, 0
    while True:
        n += 1
        work = fresh(tmp_path, pristine, f"retry{n}")
        a = Agent(work)
        with faultplan.faults(fail_at=n) as plan:
            try:
                status = a.wb.recovery.resolve({"id": rid, "action": "retry"})["status"]
            except (OSError, TurnbackError):
                status = "error"
        faulted += plan.faulted
        a.reopen()
        if status == "resolved" and not plan.faulted:
            assert a.files() == expected and not recovery_files(work)
            a.close()
            break
        left = a.wb.recovery.list()["recovery"]
        if left:  # the record survived the fault: retrying it now finishes the job
            assert a.wb.recovery.resolve({"id": rid, "action": "retry"})["status"] == "resolved"
        assert a.files() == expected and not recovery_files(work)
        a.close()
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, n - 1, "resolve retry failed at every operation")
