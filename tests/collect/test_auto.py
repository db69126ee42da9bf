"""The command line collects by itself past a threshold (collect/auto.py, git's `gc.auto`): a quick
collection, stopped at its first pause past a deadline. A stop at any pause leaves a sound store
that loses nothing retained, and the next full collection ends where an uninterrupted one does."""

from __future__ import annotations

import shutil

import pytest

from sessionkit import assert_faulted
from turnback.collect import auto, collector
from turnback.store.testing import faultplan
from turnback.store.objects.writer import RAW_LOOSE_MAX
from turnback.store.objects.packs import Pack

from .conftest import (age_objects, assert_sound, build_template, finish_and_compare, open_wb,
                       reference_run, snapshot, turn)


@pytest.fixture
def template(fast_tmp):
    ws = build_template(fast_tmp)
    _plan, _stats, ref = reference_run(ws, fast_tmp)
    return ws, snapshot(ref / ".turnback"), fast_tmp


def _capture_collectors(monkeypatch) -> list:
    made = []
    real = collector.Collector.__init__

    def init(self, *args, **kw):
        real(self, *args, **kw)
        made.append(self)

    monkeypatch.setattr(collector.Collector, "__init__", init)
    return made


def _quick_run(ws, monkeypatch, stop_after: int | None) -> tuple[int, bool]:
    """A quick collection of `ws` whose deadline passes after `stop_after` pauses; (pauses, stopped)."""
    made = _capture_collectors(monkeypatch)
    wb = open_wb(ws)
    try:
        job = wb.collection.job(quick=True, deadline=float("inf"))
        pauses = 0
        try:
            while True:
                next(job)
                pauses += 1
                if stop_after is not None and pauses >= stop_after:
                    made[-1].deadline = 0.0  # passed: the next pause outside a helper's work stops
        except StopIteration:
            return pauses, False
        except collector.CollectionStopped:
            return pauses, True
    finally:
        wb.close()
        monkeypatch.undo()


def test_a_quick_collection_stopped_at_every_pause_loses_nothing(template, monkeypatch):
    ws0, expected, scratch = template
    probe = scratch / "probe"
    shutil.copytree(ws0, probe, symlinks=True)
    total, stopped = _quick_run(probe, monkeypatch, None)
    assert not stopped and total >= 5
    assert_sound(probe / ".turnback")
    shutil.rmtree(probe)
    stops = 0
    for k in range(1, total + 1):
        ws = scratch / f"stop{k}"
        shutil.copytree(ws0, ws, symlinks=True)
        _pauses, was_stopped = _quick_run(ws, monkeypatch, k)
        stops += was_stopped
        finish_and_compare(ws, expected)
        shutil.rmtree(ws)
    assert stops >= total // 2, (stops, total)  # most pauses are outside a helper thread's work


def test_a_quick_collection_packs_at_the_put_time_level_and_a_full_one_relayouts(ws):
    wb = open_wb(ws)
    try:
        turn(wb, ws, "many files", [(f"src/f{i}.txt", f"line {i}\n" * 50) for i in range(80)])
        age_objects(wb.store)
        stats = auto.run_bounded(wb, budget=600.0)
        assert not stats["stopped"] and stats["packsWritten"] == 1
        levels = {p.made_at() for p in wb.store.objects.packs.packs.values()}
        assert levels == {3}, levels  # fast blocks only: nothing at the collector's level yet
        wb.collection.run()
        packs: list[Pack] = list(wb.store.objects.packs.packs.values())
        assert packs and {p.made_at() for p in packs} == {19}
        assert not list(wb.store.objects.list_loose())
    finally:
        wb.close()
    assert_sound(ws / ".turnback")


def test_due_counts_a_sample_of_the_fan_out_and_the_head_files(tmp_path, monkeypatch):
    store = tmp_path / "store"
    for i in range(16):
        (store / "objects" / f"{i:02x}").mkdir(parents=True)
    for i in range(40):  # 40 in the sample: about 640 in the store
        (store / "objects" / f"{i % 16:02x}" / f"{i:030x}").write_bytes(b"x")
    (store / "objects" / "00" / "stray.tbtmp.0123456789ab").write_bytes(b"")
    with open(store / "objects" / "01" / f"{99:030x}", "wb") as big:  # stays loose whatever runs
        big.truncate(RAW_LOOSE_MAX + 1)
    (store / "heads").mkdir()
    assert auto.loose_estimate(store) == 640
    assert "640 loose objects" in auto.due(store)
    monkeypatch.setenv(auto.ENV, "1000")
    assert auto.due(store) is None
    for seq in range(1, auto.AUTO_HEADS + 1):
        (store / "heads" / f"{seq:012d}.cbor").write_bytes(b"")
    assert "head files" in auto.due(store)
    monkeypatch.setenv(auto.ENV, "0")
    assert auto.due(store) is None  # turned off


def test_a_quick_collection_failing_at_every_operation_loses_nothing(template):
    """The quick run's own writes (a level-3 pack, no relayout) under the fault plans: a failure at
    each of its file-system operations leaves a sound store, and a full run then completes it."""
    ws0, expected, scratch = template
    probe = scratch / "count"
    shutil.copytree(ws0, probe, symlinks=True)
    wb = open_wb(probe)
    with faultplan.faults() as counting:
        assert not auto.run_bounded(wb, budget=600.0)["stopped"]
    wb.close()
    total = counting.count
    shutil.rmtree(probe)
    assert total >= 10
    faulted = 0
    for n in range(1, total + 1):
        ws = scratch / f"fail{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        wb = open_wb(ws)
        with faultplan.faults(fail_at=n) as plan:
            try:
                auto.run_bounded(wb, budget=600.0)
            except OSError:
                pass
            else:  # a point past this run's end (loaded machines saw shorter runs), or tidying's
                assert not plan.faulted or _is_fanout_rmdir(plan.log[n - 1]), (n, plan.log[n - 1:n])
        faulted += plan.faulted > 0
        assert not wb.collecting
        wb.close()
        finish_and_compare(ws, expected)
        shutil.rmtree(ws)
    assert_faulted(faulted, total, "a quick collection failed at every operation")


def _is_fanout_rmdir(line: str) -> bool:
    """The repack's removal of an emptied objects/xx folder (repack._empty_fanouts) is best effort."""
    return line.startswith("rmdir ") and "/.turnback/objects/" in line


def test_a_quick_collection_stopped_in_its_mark_has_retired_the_heads(template, monkeypatch):
    """The budget spent while the plan marks (a big store: marking is most of a plan): the heads
    are still retired and the head cache saved, as before the plan/execution split, so the next
    bounded run goes further instead of starting over (collect/collector.py, `_decided`)."""
    from turnback.collect import plan as plan_mod

    ws0, expected, scratch = template
    ws = scratch / "stopped-in-mark"
    shutil.copytree(ws0, ws, symlinks=True)
    before = snapshot(ws / ".turnback")[0]

    def spent(self):
        raise collector.CollectionStopped()
        yield

    monkeypatch.setattr(plan_mod.Planner, "_mark", spent)
    _pauses, stopped = _quick_run(ws, monkeypatch, None)
    assert stopped
    after = snapshot(ws / ".turnback")[0]
    assert set(after) < set(before) and set(after) >= set(expected[0]), (before, after)
    finish_and_compare(ws, expected)
