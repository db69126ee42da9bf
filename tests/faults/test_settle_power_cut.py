"""A power cut (lost unsynced writes) at every file-system operation of a settle that publishes a few
loose objects in as many fan-out folders, then its head.

A batch's commit makes its loose objects durable at two points, each one syncfs when there are more
than one (`ObjectStore._iter_commit`, docs/performance.md "A turn at the cost of a process start"):
the temp files' contents before any is named, then the new names before any head can name them.
After each cut the reopened session is the turn running (settle lost) or the turn settled, every
object its turns name reads back, and fsck finds the store sound. A settle asked to answer once
durable (`answer: "durable"`) syncs its sweep's records and its own with one journal fsync before it
answers: a cut after its answer leaves it settled. Without the names' point (the
second syncfs) a cut after the head's publication leaves a head naming objects the cut took back,
and this test fails."""

from __future__ import annotations

import os
import random
import shutil

import pytest
from sessionkit import Agent, assert_faulted, run_child

from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck

FILES = [f"pkg{i}/m{i}.py" for i in range(6)]
SEED = 39
SAMPLE = 8
TAIL = 16  # operations: the last object batch's renames and syncs, the head, the journal

SETTLE_CHILD = """
import sys, pathlib
from turnback.workbench import Workbench, Options
from turnback.store import fs
from turnback.store.testing import faultplan
root = pathlib.Path(sys.argv[1])
wb = Workbench.open(root, Options())
n = wb.run(wb.turns.begin_job({"prompt": "edit six files"}))["turn"]
for i in range(6):
    (root / f"pkg{i}" / f"m{i}.py").write_text(f"# edited by turn {n}\\n" * (40 + i))
if faultplan.current() is not None:
    print("settle-from", faultplan.current().count, flush=True)
job = wb.turns.settle_job({"turn": n, "answer": sys.argv[2]})
for value in job:  # as the owner runs it: an early answer is sent when it is yielded
    if getattr(value, "early_answer", None) is not None and faultplan.current() is not None:
        print("answered", faultplan.current().count, flush=True)
wb.close()
if faultplan.current() is not None:
    print("total", faultplan.current().count, flush=True)
"""


def _pristine(root):
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n" * 30)
    a = Agent(root)
    n = a.begin("the first checkpoint")
    a.wb.run(a.wb.turns.settle_job({"turn": n}))
    a.close()


def _snapshot(work):
    a = Agent(work)
    try:
        objects = a.wb.store.objects
        for turn in a.wb.state.turns:
            for entry in turn.files.values():
                for digest in (entry.before, entry.after):
                    if digest:
                        objects.get(digest)  # raises when a cut took an object a turn names
        return [(t.n, t.state) for t in a.wb.state.turns]
    finally:
        a.close()


def _counting(code: str) -> str:
    return code.replace("wb = Workbench.open", "plan = faultplan.FaultPlan()\nfaultplan.install(plan)\n"
                        "wb = Workbench.open", 1)


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the crash model needs /proc")
@pytest.mark.parametrize("answer", ["published", "durable"])
def test_a_power_cut_at_every_operation_of_a_settle_leaves_it_running_or_settled(tmp_path, monkeypatch,
                                                                                 answer):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _pristine(pristine)
    counted = tmp_path / "counted"
    shutil.copytree(pristine, counted, symlinks=True)
    proc = run_child(_counting(SETTLE_CHILD), counted, answer)
    assert proc.returncode == 0, proc.stderr
    marks = dict(line.split() for line in proc.stdout.splitlines())
    start, total = int(marks["settle-from"]), int(marks["total"])
    answered = int(marks["answered"]) if answer == "durable" else None  # operations done by then
    log = proc.stdout
    assert total - start > 10, log
    after = _snapshot(counted)
    assert after[-1][1] == "settled", after

    monkeypatch.setenv("TURNBACK_CRASH_MODEL", "lose-unsynced")
    outcomes = {"running": 0, "settled": 0}
    crashed = 0
    # the publication's end whole (the names' sync, the head, the journal), a sample of the rest
    tail = set(range(max(start + 1, total - TAIL), total + 1))
    if answered is not None:  # the operations around the early answer, whole
        tail |= set(range(max(start + 1, answered - 6), answered + 4))
    rest = range(start + 1, max(start + 1, total - TAIL))
    points = sorted(tail | set(random.Random(SEED).sample(rest, min(SAMPLE, len(rest)))))
    for n in points:
        work = tmp_path / f"cut{n}"
        shutil.copytree(pristine, work, symlinks=True)
        proc = run_child(SETTLE_CHILD, work, answer, crash_at=n)
        assert proc.returncode in (0, faultplan.CRASH_EXIT), proc.stderr
        crashed += proc.returncode == faultplan.CRASH_EXIT
        got = _snapshot(work)
        assert got[:-1] == after[:-1], f"a power cut at operation {n} changed an earlier turn"
        state = got[-1][1]
        assert state in ("running", "settled"), f"a power cut at operation {n}: turn {got[-1]}"
        if answered is not None and n > answered:  # after its answer said "settled"
            assert state == "settled", f"a power cut at operation {n}, after the answer: {got[-1]}"
        outcomes[state] += 1
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
        shutil.rmtree(work)
    assert_faulted(crashed, len(points), f"power cut during a settle ({len(points)} of its "
                   f"{total - start} operations)")
    assert outcomes["settled"], outcomes


def test_a_batch_of_a_few_loose_objects_syncs_twice_not_once_per_folder(tmp_path):
    """The durability points themselves: contents once, before the renames; names once, after."""
    if fs.sync._load_syncfs() is None:
        pytest.skip("no syncfs on this platform: a fsync each, as before")
    root = tmp_path / "ws"
    root.mkdir()
    _pristine(root)
    a = Agent(root)
    try:
        objects = a.wb.store.objects
        with faultplan.faults() as plan:
            with objects.batch():
                for i in range(8):
                    objects.put(b"a loose object of its own %d\n" % i * 20)
        ops = [line.split()[0] for line in plan.log]
    finally:
        a.close()
    syncs = [i for i, op in enumerate(ops) if op in ("fsync", "fsync_dir", "syncfs")]
    renames = [i for i, op in enumerate(ops) if op == "rename"]
    assert len(renames) == 8, ops
    assert [ops[i] for i in syncs] == ["syncfs", "syncfs"], ops
    assert syncs[0] < renames[0] and syncs[1] > renames[-1], ops
