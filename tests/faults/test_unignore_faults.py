"""Faults while a sweep with changed ignore rules is folded in (capture/lastrules.py).

The settle of the turn that un-ignores `build/` writes images, the journal and the kept rules (twice:
old and new together, then the new alone). Whatever operation fails or a power cut interrupts, the
next process, settling again, must still know that `build/keep.txt` was hidden: a rewind to before
that turn keeps the user's file. A failure is tried at every operation; a power cut (in a child
process) at every operation near a write of the kept rules and at a fixed-seed sample of the rest."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from sessionkit import Agent, assert_faulted, run_child
from turnback.errors import TurnbackError
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck

SETTLE_CHILD = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options())
wb.run(wb.turns.settle_job({"turn": wb.state.running.n, "status": "settled"}))
wb.close()
"""
BOUNDARY = {"kind": "beforePrompt", "turn": 2}
SEED, SAMPLE = 5, 16


def build(root):
    """Turn 1 settled with build/ ignored; turn 2 running, its agent has emptied .gitignore."""
    a = Agent(root)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "keep.txt").write_text("mine")
    for i in range(4):  # more first-seen files, so the settle sweep stores a batch
        (root / "build" / f"old{i}.txt").write_text(f"old {i}")
    (root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1"})
    a.begin("stop ignoring build/")
    a.write(".gitignore", "")
    a.close()


def settle_and_rewind(work):
    """What the user does next; returns the rewind's plan action for build/keep.txt."""
    a = Agent(work)
    try:
        if a.wb.state.running is not None:
            a.settle()
        c = a.wb.rewind.prepare({"boundary": BOUNDARY})
        action = {f["path"]: f["action"] for f in c["files"]}.get("build/keep.txt")
        assert a.wb.rewind.commit({"boundary": BOUNDARY, "planHash": c["planHash"]})["status"] == \
            "committed"
    finally:
        a.close()
    keep = work / "build" / "keep.txt"
    assert keep.exists(), f"the rewind deleted the user's file (its plan said {action!r})"
    assert keep.read_text() == "mine", action
    assert action in ("unchanged", None), action
    report = fsck(work / ".turnback")
    assert report.ok, [str(p) for p in report.problems]


def count_operations(tmp_path, pristine) -> tuple[int, set[int]]:
    """How many fs operations the settle makes, and which of them touch the kept rules."""
    work = tmp_path / "counted"
    shutil.copytree(pristine, work, symlinks=True)
    child = SETTLE_CHILD.replace("wb = Workbench.open", "from turnback.store import fs; from turnback.store.testing import faultplan\n"
                                 "plan = faultplan.FaultPlan()\nfaultplan.install(plan)\nwb = Workbench.open")
    child += ("print(*[i + 1 for i, op in enumerate(plan.log) if 'ignore-rules' in op])\n"
              "print(plan.count)\n")
    proc = run_child(child, work)
    assert proc.returncode == 0, proc.stderr
    settle_and_rewind(work)  # and without a fault the file survives too
    *rules_line, count_line = proc.stdout.strip().splitlines()
    rules_ops = {int(x) for x in " ".join(rules_line).split()}
    assert rules_ops, "the settle never wrote the kept rules"
    return int(count_line), rules_ops


@pytest.fixture
def pristine(tmp_path):
    root = tmp_path / "pristine"
    root.mkdir()
    build(root)
    return root


def test_fail_at_every_operation_of_the_settle(tmp_path, pristine):
    total, _ = count_operations(tmp_path, pristine)
    faulted = 0
    for n in range(1, total + 1):
        work = tmp_path / f"fail{n}"
        shutil.copytree(pristine, work, symlinks=True)
        a = Agent(work)
        with faultplan.faults(fail_at=n) as plan:
            try:
                a.settle()
            except (TurnbackError, OSError):
                pass
        faulted += plan.faulted > 0
        try:
            a.close()
        except (TurnbackError, OSError):
            pass
        settle_and_rewind(work)
        shutil.rmtree(work)
    assert_faulted(faulted, total, "unignore settle failed at every operation")


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the crash model needs /proc")
def test_a_power_cut_at_every_operation_of_the_settle(tmp_path, pristine, monkeypatch):
    total, rules_ops = count_operations(tmp_path, pristine)
    monkeypatch.setenv("TURNBACK_CRASH_MODEL", "lose-unsynced")
    near = {n + d for n in rules_ops for d in range(-3, 4)}
    points = sorted(p for p in near | set(random.Random(SEED).sample(range(1, total + 1),
                                                                   min(SAMPLE, total)))
                    if 1 <= p <= total)
    crashed = 0
    for n in points:
        work = tmp_path / f"cut{n}"
        shutil.copytree(pristine, work, symlinks=True)
        proc = run_child(SETTLE_CHILD, work, crash_at=n)
        assert proc.returncode in (0, faultplan.CRASH_EXIT), proc.stderr
        crashed += proc.returncode == faultplan.CRASH_EXIT
        settle_and_rewind(work)
        shutil.rmtree(work)
    assert_faulted(crashed, len(points), f"unignore settle, a power cut ({total} operations)")
