"""What the collector keeps off the loop: retirements are made durable by one folder sync, outside the
slices, and before any object is deleted; every phase reports its slowest slice."""

from __future__ import annotations

from turnback.store import fs
from turnback.store.testing import faultplan

from .conftest import age_objects, assert_sound, open_wb, turn


def _history(ws):
    wb = open_wb(ws)
    for i in range(6):
        turn(wb, ws, f"p{i}", [(f"f{j % 3}.txt", f"{i}.{j}\n") for j in range(5)])
    return wb


def test_retirements_are_synced_once_and_before_any_deletion(ws):
    wb = _history(ws)
    heads_dir = str(wb.store.heads.dir)
    objects_dir = str(wb.store.objects.root)
    age_objects(wb.store)
    with faultplan.faults() as plan:
        stats = wb.collection.run()
    assert stats["headsRetired"] >= 10 and stats["objectsDeleted"] > 0
    log = plan.log
    head_unlinks = [i for i, e in enumerate(log) if e.startswith("unlink " + heads_dir)]
    head_syncs = [i for i, e in enumerate(log) if e == f"fsync_dir {heads_dir}"]
    object_unlinks = [i for i, e in enumerate(log) if e.startswith("unlink " + objects_dir)]
    assert len(head_unlinks) == stats["headsRetired"]
    assert len(head_syncs) == 1  # one sync for every retirement, not one each
    assert max(head_unlinks) < head_syncs[0] < min(object_unlinks)
    wb.close()
    assert_sound(wb.store.path)


def test_a_failed_retirement_sync_deletes_nothing(ws):
    wb = _history(ws)
    age_objects(wb.store)
    before = set(wb.store.objects.list())
    real = fs.fsync_dir

    def failing(path):
        if str(path) == str(wb.store.heads.dir):
            raise OSError(5, "injected: the heads folder could not be synced")
        return real(path)
    fs.fsync_dir = failing
    try:
        try:
            wb.collection.run()
            raised = False
        except OSError:
            raised = True
    finally:
        fs.fsync_dir = real
    assert raised
    assert set(wb.store.objects.list()) == before  # nothing deleted after an unsynced retirement
    wb.close()


def test_every_phase_reports_its_slowest_slice(ws):
    wb = _history(ws)
    age_objects(wb.store)
    stats = wb.collection.run()
    by_phase = stats["slowestByPhase"]
    assert {"scan", "retire", "mark", "sweep"} <= set(by_phase)
    assert max(by_phase.values()) == stats["maxSliceMs"]
    wb.close()
