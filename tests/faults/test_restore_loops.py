"""All or nothing for restore and each rewind mode (issue 23): the same file transaction as a rewind,
faulted at sampled operations (fail the Nth, a full disk, a kill, a power cut) and closed at every
yield. After each, the live process and a reopen agree and are the old state or the new one, never a
mix, and fsck is sound. Each loop says how many points it tried and fails when fewer than 80 % of
them were faulted."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from sessionkit import Agent, assert_faulted, normalised_log, run_child
from txnkit import assert_recorded_exactly
from turnback.errors import TurnbackError
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck

SEED = 23
SAMPLE = 20  # points per in-process loop
CRASH_SAMPLE = 10  # points per child-process loop
B1 = {"kind": "beforePrompt", "turn": 2}
END1 = {"kind": "afterResponse", "turn": 1}

# (what, params): a restore of a folder and a file, and the two rewind modes
PLANS = {
    "restore": ("restore", {"paths": ["src", "a.txt"], "boundary": END1}),
    "files": ("rewind", {"boundary": B1, "mode": "files"}),
    "conversation": ("rewind", {"boundary": B1, "mode": "conversation"}),
}


def build(root, kind) -> None:
    """Turn 2 rewrites a.txt and src/x.py and creates src/deep/new.py: each plan writes, deletes
    (files mode) or keeps (conversation mode) several files."""
    a = Agent(root, store_kind=kind)
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1", "src/x.py": "x1"})
    a.turn("two", {"a.txt": "a2", "src/x.py": "x2", "src/deep/new.py": "n2"})
    a.close()


def snapshot_of(a) -> tuple:
    log = normalised_log(a.log())
    root = a.root.resolve().as_uri() + "/"
    for rec in log.get("restores", []):  # a fork point is a fresh uuid in every run
        rec.pop("forkPoint", None)
        rec.pop("forkPointBefore", None)
        rec["paths"] = [p[len(root):] if p.startswith(root) else p for p in rec["paths"]]
    return a.files(), log


def snapshot(root, kind):
    a = Agent(root, store_kind=kind)
    try:
        return snapshot_of(a)
    finally:
        a.close()


def commit_job(a, plan: str):
    what, params = PLANS[plan]
    feature = getattr(a.wb, what)
    c = feature.prepare(params)
    return feature.commit_job({**params, "planHash": c["planHash"]})


def fresh(tmp_path, pristine, name):
    work = tmp_path / name
    shutil.copytree(pristine, work, symlinks=True)
    return work


def sound(work):
    report = fsck(work / ".turnback")
    assert report.ok, [str(p) for p in report.problems]


def setup(tmp_path, kind, plan):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    before = snapshot(fresh(tmp_path, pristine, "before"), kind)
    count_at = fresh(tmp_path, pristine, "count")
    a = Agent(count_at, store_kind=kind)
    job = commit_job(a, plan)
    with faultplan.faults() as counter:
        out = a.wb.run(job)
    assert out["status"] == "committed", out
    a.close()
    after = snapshot(count_at, kind)
    assert after != before
    points = sorted(random.Random(SEED).sample(range(1, counter.count + 1),
                                               min(SAMPLE, counter.count)))
    return pristine, before, after, counter.count, points


CASES = [("fail", "heads", "restore"), ("fail", "pid", "restore"), ("fail", "heads", "files"),
         ("fail", "heads", "conversation"), ("fail", "pid", "conversation"),
         ("disk-full", "heads", "restore"), ("disk-full", "heads", "files"),
         ("disk-full", "heads", "conversation")]


@pytest.mark.parametrize("fault,kind,plan", CASES, ids=[f"{f}-{p}-{k}" for f, k, p in CASES])
def test_a_fault_at_sampled_operations_leaves_old_or_new(tmp_path, kind, plan, fault):
    pristine, before, after, total, points = setup(tmp_path, kind, plan)
    faulted, statuses = 0, set()
    for n in points:
        work = fresh(tmp_path, pristine, f"{fault}{n}")
        a = Agent(work, store_kind=kind)
        job = commit_job(a, plan)
        args = {"fail_at": n} if fault == "fail" else {"disk_full_at": n}
        with faultplan.faults(**args) as faults:
            try:
                statuses.add(a.wb.run(job)["status"])
            except TurnbackError as exc:
                statuses.add(exc.code)
        faulted += faults.faulted > 0
        live = snapshot_of(a)
        try:
            a.close()
        except TurnbackError:
            pass
        got = snapshot(work, kind)
        if fault == "fail":  # one failure: the rollback itself works, so the live process agrees
            assert got == live, f"failure at operation {n}: the live process and a reopen disagree"
        # a full disk may refuse the rollback too: its intent (or a recovery record naming the
        # files) stays, and the reopen settles it; a record is shown to the user, never a silent mix
        if got not in (before, after):  # then named, file by file, by its records
            assert_recorded_exactly(work, got[0], before[0], f"{fault} at operation {n}")
        sound(work)
        shutil.rmtree(work)
    assert_faulted(faulted, len(points), f"{fault}, {plan} ({kind}, {total} operations) {statuses}")
    assert statuses - {"committed"}, "no fault made the commit fail"


CHILD = """
import sys
from turnback.workbench import Workbench, Options
plans = {"restore": ("restore", {"paths": ["src", "a.txt"],
                                 "boundary": {"kind": "afterResponse", "turn": 1}}),
         "files": ("rewind", {"boundary": {"kind": "beforePrompt", "turn": 2}, "mode": "files"}),
         "conversation": ("rewind", {"boundary": {"kind": "beforePrompt", "turn": 2},
                                     "mode": "conversation"})}
what, params = plans[sys.argv[3]]
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
feature = getattr(wb, what)
c = feature.prepare(params)
assert feature.commit({**params, "planHash": c["planHash"]})["status"] == "committed"
wb.close()
"""


CRASHES = [("heads", "restore", "process-death"), ("heads", "restore", "lose-unsynced"),
           ("pid", "files", "lose-unsynced"), ("heads", "conversation", "process-death")]


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the crash model needs /proc")
@pytest.mark.parametrize("kind,plan,model", CRASHES, ids=[f"{p}-{k}-{m}" for k, p, m in CRASHES])
def test_a_crash_at_sampled_operations_leaves_old_or_new(tmp_path, monkeypatch, kind, plan, model):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    before = snapshot(fresh(tmp_path, pristine, "before"), kind)
    counted = fresh(tmp_path, pristine, "counted")
    code = CHILD.replace("wb = Workbench.open", "from turnback.store import fs; from turnback.store.testing import faultplan\n"
                         "counter = faultplan.FaultPlan()\nfaultplan.install(counter)\nwb = Workbench.open")
    proc = run_child(code + "print(counter.count)\n", counted, kind, plan)
    assert proc.returncode == 0, proc.stderr
    total = int(proc.stdout.split()[-1])
    after = snapshot(counted, kind)
    if model == "lose-unsynced":
        monkeypatch.setenv("TURNBACK_CRASH_MODEL", model)
    # and the last operation: the counted total varies by a few operations from run to run (random
    # ids), so a fixed sample could fall wholly before the commit point and never see "new"
    sample = random.Random(SEED).sample(range(1, total + 1), min(CRASH_SAMPLE, total))
    points = sorted({total} | set(sample))
    crashed, outcomes = 0, {"old": 0, "new": 0}
    for n in points:
        work = fresh(tmp_path, pristine, f"crash{n}")
        proc = run_child(CHILD, work, kind, plan, crash_at=n)
        assert proc.returncode in (0, faultplan.CRASH_EXIT), proc.stderr
        crashed += proc.returncode == faultplan.CRASH_EXIT
        got = snapshot(work, kind)
        assert got in (before, after), f"a crash ({model}) at operation {n} left a mix"
        outcomes["old" if got == before else "new"] += 1
        sound(work)
        shutil.rmtree(work)
    assert_faulted(crashed, len(points), f"crash ({model}), {plan} ({kind}, {total} operations)")
    assert outcomes["old"] and outcomes["new"], outcomes


@pytest.mark.parametrize("plan", ["restore", "files", "conversation"])
def test_closing_the_commit_at_every_yield_leaves_old_or_new(tmp_path, plan):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, "heads")
    before = snapshot(fresh(tmp_path, pristine, "before"), "heads")
    done = fresh(tmp_path, pristine, "done")
    a = Agent(done)
    a.wb.run(commit_job(a, plan))
    a.close()
    after = snapshot(done, "heads")
    tried, n = 0, 0
    while True:
        n += 1
        work = fresh(tmp_path, pristine, f"cancel{n}")
        a = Agent(work)
        job = commit_job(a, plan)
        try:
            for _ in range(n):
                next(job)
        except StopIteration:
            a.close()
            break
        job.close()
        tried += 1
        live = snapshot_of(a)
        a.close()
        got = snapshot(work, "heads")
        assert got == live and got in (before, after), f"closed at yield {n}"
        sound(work)
        shutil.rmtree(work)
    print(f"cancel, {plan}: closed at {tried} yields")
    assert tried > 0, "the commit never yielded: nothing was cancelled"
