"""A power cut (lost unsynced writes) at every file-system operation of a `turn/begin`, with and
without a change between turns for its sweep to record.

The begin's answer promises the turn has begun durably (docs/protocol.md): its record is synced in
the journal before it answers. The sweep before it leaves its records to that one sync (the
journal is append-only, so its records are never durable without the sweep's before them), and a
journal with nothing appended since its last fsync is not synced again (`Journal.sync`,
docs/performance.md "A turn at the cost of a process start"): a begin syncs the journal once. After each cut
the reopened session has the earlier turns as they were and either no new turn or the new turn
running, a change between turns is recorded whenever the new turn is, and fsck finds the store
sound."""

from __future__ import annotations

import os
import shutil

import pytest
from sessionkit import Agent, assert_faulted, run_child

from test_settle_power_cut import FILES, _counting, _pristine

from turnback.store.fsck import fsck
from turnback.store.testing import faultplan

BEGIN_CHILD = """
import sys, pathlib
from turnback.workbench import Workbench, Options
from turnback.store.testing import faultplan
root = pathlib.Path(sys.argv[1])
wb = Workbench.open(root, Options())
if sys.argv[2] == "changed":
    (root / "pkg0" / "m0.py").write_text("# changed between turns\\n" * 9)
if faultplan.current() is not None:
    print("begin-from", faultplan.current().count, flush=True)
wb.run(wb.turns.begin_job({"prompt": "the cut one"}))
if faultplan.current() is not None:
    print("total", faultplan.current().count, flush=True)
    print("fsyncs", sum(line.startswith("fsync ") for line in faultplan.current().log), flush=True)
wb.close()
"""


def _snapshot(work):
    a = Agent(work)
    try:
        state = a.wb.state
        return [(t.n, t.state) for t in state.turns], sorted(state.between.get(1, {}))
    finally:
        a.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the crash model needs /proc")
@pytest.mark.parametrize("between", ["unchanged", "changed"])
def test_a_power_cut_at_every_operation_of_a_begin_leaves_no_turn_or_the_turn_running(
        tmp_path, monkeypatch, between):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _pristine(pristine)
    counted = tmp_path / "counted"
    shutil.copytree(pristine, counted, symlinks=True)
    proc = run_child(_counting(BEGIN_CHILD), counted, between)
    assert proc.returncode == 0, proc.stderr
    marks = dict(line.split() for line in proc.stdout.splitlines())
    start, total = int(marks["begin-from"]), int(marks["total"])
    assert total - start >= 2, proc.stdout
    turns, changed = _snapshot(counted)
    assert turns == [(1, "settled"), (2, "running")], turns
    assert changed == (["pkg0/m0.py"] if between == "changed" else []), changed

    monkeypatch.setenv("TURNBACK_CRASH_MODEL", "lose-unsynced")
    outcomes = {"none": 0, "running": 0}
    crashed = 0
    # and the first operations of the close after it (the begin answered: the turn must be there)
    points = range(start + 1, total + 4)
    for n in points:
        work = tmp_path / f"cut{n}"
        shutil.copytree(pristine, work, symlinks=True)
        proc = run_child(BEGIN_CHILD, work, between, crash_at=n)
        assert proc.returncode in (0, faultplan.CRASH_EXIT), proc.stderr
        crashed += proc.returncode == faultplan.CRASH_EXIT
        got, got_changed = _snapshot(work)
        assert got[0] == (1, "settled"), f"a power cut at operation {n} changed turn 1: {got}"
        if got == [(1, "settled")]:
            outcomes["none"] += 1
        else:
            assert got == [(1, "settled"), (2, "running")], f"a power cut at operation {n}: {got}"
            outcomes["running"] += 1
            # the sweep's record is synced before the begin's: a begun turn never lost it
            assert got_changed == changed, f"a power cut at operation {n} lost the sweep's record"
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
        shutil.rmtree(work)
    assert_faulted(crashed, len(points), f"power cut during a begin ({len(points)} operations)")
    assert outcomes["none"] and outcomes["running"], outcomes


def test_a_begin_whose_sweep_found_nothing_syncs_the_journal_once(tmp_path):
    """The sweep's sync was a second fsync of the journal on the way to the begin's own: with
    nothing recorded it promised nothing; with a change between turns the begin's own sync makes
    the sweep's record durable with the begin's (the power cuts above: never a begun turn without
    it)."""
    root = tmp_path / "ws"
    root.mkdir()
    _pristine(root)
    a = Agent(root)
    try:
        fd = a.wb.book.journal._require_open()
        counts = []
        # The first sync after the journal's open always syncs (a process that died may have left
        # frames in the page cache only): the first turn of this process is not counted.
        for change in (False, False, True):
            if change:
                (root / FILES[0]).write_text("# changed between turns\n")
            with faultplan.faults() as plan:
                n = a.wb.run(a.wb.turns.begin_job({"prompt": "one"}))["turn"]
            counts.append(plan.log.count(f"fsync {fd}"))
            a.wb.run(a.wb.turns.settle_job({"turn": n}))
    finally:
        a.close()
    assert counts[1:] == [1, 1], counts
