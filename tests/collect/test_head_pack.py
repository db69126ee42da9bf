"""The pack of old heads (store/objects/headpack.py): the collector moves kept heads past the newest few into
one file; they read, list, redo and collect the same as loose ones; the store gets smaller on disk;
damage is named, never read past; and a failure or crash at every operation loses no head."""

from __future__ import annotations

import os
import shutil

import pytest
from sessionkit import assert_faulted

from turnback.errors import CorruptStore, HeadRace
from turnback.store.testing import faultplan
from turnback.store.objects import headpack
from turnback.store import heads
from turnback.store.fsck import fsck

from .conftest import (age_objects, assert_sound, expire_lease, open_wb, reference_run, rewind, run_py,
                       snapshot, turn)

NEWEST = 3  # heads kept loose in these tests (LOOSE_NEWEST is 64 in use)


@pytest.fixture(autouse=True)
def few_loose(monkeypatch):
    monkeypatch.setattr(heads, "LOOSE_NEWEST", NEWEST)


def session(ws, turns=8):
    wb = open_wb(ws)
    for i in range(turns):
        turn(wb, ws, f"p{i}", [("a.txt", f"a{i}\n"), (f"f{i}.txt", f"{i}\n")])
    return wb


def records(store) -> dict:
    return {s: store.heads.read(s) for s in store.heads.list_seqs()}


def test_old_kept_heads_move_into_one_file_and_read_the_same(ws):
    wb = session(ws)
    store = wb.store
    redo_before = wb.redo.list({"everything": True})["groups"]
    stats = wb.collection.run()
    kept = records(store)
    assert stats["headsPacked"] == len(kept) - NEWEST > 0
    loose = store.heads.loose_seqs()
    assert loose == sorted(kept)[-NEWEST:]  # the newest stay files of their own
    assert sorted(store.heads.packed()) == sorted(kept)[:-NEWEST]
    assert store.heads.current().seq == max(kept)
    assert wb.redo.list({"everything": True})["groups"] == redo_before
    wb.close()
    assert_sound(store.path)
    wb = open_wb(ws)  # a new owner reads them all the same
    assert records(wb.store) == kept
    again = wb.collection.run()
    assert again["coldHeads"] == 0  # a packed head keeps its stamp: the cache stayed warm
    assert again["headsPacked"] == 0 and records(wb.store) == kept
    wb.close()


def test_the_pack_costs_less_disk_than_the_files_it_replaces(ws):
    wb = session(ws, turns=12)
    folder = wb.store.heads.dir

    def blocks():
        return sum(os.lstat(folder / n).st_blocks for n in os.listdir(folder))

    before = blocks()
    wb.collection.run()
    packed = len(wb.store.heads.packed())
    wb.close()
    assert packed >= 8 and blocks() < before - (packed - 1) * 8  # 8 blocks of 512 bytes a file


def test_a_packed_head_retired_later_leaves_the_pack(ws):
    """Heads kept only for their youth are packed too; once old they are retired out of it."""
    wb = session(ws)
    wb.close()
    wb = open_wb(ws, grace_seconds=3600.0)  # every head is young: all kept, all but 3 packed
    assert wb.collection.run()["headsRetired"] == 0
    packed_before = set(wb.store.heads.packed())
    wb.close()
    wb = open_wb(ws)
    stats = wb.collection.run()
    gone = packed_before - set(wb.store.heads.list_seqs())
    assert gone and stats["headsRetired"] >= len(gone)
    for seq in gone:  # a retired head is nowhere: not loose, not in the pack
        assert seq not in wb.store.heads.packed()
        with pytest.raises(FileNotFoundError):
            wb.store.heads.read(seq)
    wb.close()
    assert_sound(wb.store.path)


def test_a_stale_writer_cannot_publish_under_a_packed_number(ws):
    wb = session(ws)
    wb.collection.run()
    low = min(wb.store.heads.packed())
    cur = wb.store.heads.current()
    with pytest.raises(HeadRace):
        wb.store.heads.publish(parent=None, session=cur.session, created=0.0, turn_count=0,
                               fork_point=cur.fork_point, settled=True, epoch=cur.epoch,
                               body=cur.body, expect_seq=low)
    assert wb.store.heads.read(low).seq == low and not wb.store.heads.path(low).exists()
    wb.close()


def test_a_damaged_pack_is_named_and_nothing_is_collected_past_it(ws):
    wb = session(ws)
    wb.collection.run()
    wb.close()
    store_path = ws / ".turnback"
    pack = headpack.path_in(store_path / "heads")
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.write_bytes(bytes(data))
    report = fsck(store_path)
    assert not report.ok and any("packed.cbor" in e.path for e in report.errors), report.errors
    objects_before = snapshot_objects(store_path)
    wb = open_wb(ws)  # the current head is loose: the session still opens
    assert wb.store.heads.current() is not None
    with pytest.raises(CorruptStore):
        wb.collection.run()
    wb.close()
    assert snapshot_objects(store_path) == objects_before  # nothing deleted past an unread root


def snapshot_objects(store_path):
    from turnback.store.layout import Store

    return frozenset(Store.open(store_path, kind=None, create=False).objects.list())


def test_a_head_left_both_loose_and_packed_reads_once_and_is_tidied(ws):
    """A crash between the new pack and the unlinks: the copies agree, the next run unlinks."""
    wb = session(ws)
    store = wb.store
    wb.collection.run()
    victim = min(store.heads.packed())
    entry = store.heads.packed()[victim]
    store.heads.path(victim).write_bytes(entry.data)  # as it was before its unlink
    store.heads.path(victim).chmod(0o600)
    os.utime(store.heads.path(victim), ns=(entry.mtime_ns, entry.mtime_ns))
    assert store.heads.list_seqs().count(victim) == 1 and fsck(store.path).ok
    store.heads.path(victim).write_bytes(entry.data.replace(b"p0", b"p9"))
    assert any("differs" in e.what for e in fsck(store.path).errors)  # copies that disagree: named
    store.heads.path(victim).write_bytes(entry.data)
    os.utime(store.heads.path(victim), ns=(entry.mtime_ns, entry.mtime_ns))
    assert wb.collection.run()["coldHeads"] == 0
    assert victim in store.heads.packed() and not store.heads.path(victim).exists()
    wb.close()
    assert_sound(store.path)


# ---------------------------------------------------------------------------- fault loops

@pytest.fixture
def template(fast_tmp):
    ws = fast_tmp / "template"
    ws.mkdir()
    wb = session(ws, turns=4)
    wb.close()
    wb = open_wb(ws, grace_seconds=3600.0)
    wb.collection.run()  # every head young, all but 3 packed: the next run retires out of the pack
    for i in range(3):
        turn(wb, ws, f"later {i}", [("a.txt", f"later {i}\n")])
    wb.close()
    age_objects(wb.store)  # old enough to sweep and to pack
    plan, stats, ref = reference_run(ws, fast_tmp)
    assert stats["headsPacked"] > 0 and stats["headsRetired"] > 0
    # Operations on heads/ (retirements, the pack, the unlinks after it) and the one after each.
    own = {n for n, line in enumerate(plan.log, 1) if "/heads/" in line}
    assert len(own) >= 8, plan.log
    return ws, snapshot(ref / ".turnback"), plan.count, fast_tmp, own | {n + 1 for n in own}


def _finish(ws, expected):
    store_path = ws / ".turnback"
    assert_sound(store_path)
    assert set(expected[0]) <= set(snapshot(store_path)[0])  # no kept head lost
    wb = open_wb(ws)
    wb.collection.run()
    wb.close()
    assert snapshot(store_path) == expected
    assert_sound(store_path)


def test_fail_at_every_operation_of_a_collection_that_packs_heads(template):
    ws0, expected, total, scratch, _ = template
    faulted = absorbed = 0
    for n in range(1, total + 1):
        ws = scratch / f"fail{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        wb = open_wb(ws)
        with faultplan.faults(fail_at=n) as plan:
            try:
                wb.collection.run()
            except OSError:
                pass
            else:  # only tidying may absorb a failure: an emptied fan-out folder stays a run longer
                assert plan.faulted and _is_fanout_rmdir(plan.log[n - 1]), (n, plan.log[n - 1:n])
                absorbed += 1
        faulted += plan.faulted > 0
        wb.close()
        _finish(ws, expected)
        shutil.rmtree(ws)
    assert total >= 20, total
    print(f"{total} operations, {faulted} faulted, {absorbed} absorbed by tidying")
    assert absorbed < faulted // 2, (absorbed, faulted)
    assert_faulted(faulted, total, "a collection that packs heads, failed at every operation")


def _is_fanout_rmdir(line: str) -> bool:
    """The repack's removal of an emptied objects/xx folder (repack._empty_fanouts) is best effort."""
    return line.startswith("rmdir ") and "/.turnback/objects/" in line


CRASH = """
from turnback.store import fs, heads
from turnback.store.testing import faultplan
from turnback.workbench import Options, Workbench
heads.LOOSE_NEWEST = {newest}
wb = Workbench.open({ws!r}, Options(grace_heads=0, grace_seconds=0.0, publish_interval=0.0))
faultplan.install(faultplan.FaultPlan(crash_at={n}))
wb.collection.run()
print("finished")
"""


@pytest.mark.slow
@pytest.mark.parametrize("model", ["process-death", "lose-unsynced"])
def test_crash_at_every_operation_of_a_collection_that_packs_heads(template, model):
    """Every operation on heads/ and the one after it, and every third of the rest (test_faults.py
    crashes a collection at every operation; the fail loop above fails this one at every one)."""
    ws0, expected, total, scratch, own = template
    chosen = sorted({n for n in own if n <= total} | set(range(1, total + 2, 3)) | {total + 1})
    crashed = 0
    for n in chosen:
        ws = scratch / f"crash{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        env = {"TURNBACK_CRASH_MODEL": model} if model == "lose-unsynced" else {}
        r = run_py(CRASH.format(ws=str(ws), n=n, newest=NEWEST), env=env)
        assert r.returncode in (0, faultplan.CRASH_EXIT), (n, r.stderr)
        crashed += r.returncode == faultplan.CRASH_EXIT
        expire_lease(ws / ".turnback")
        _finish(ws, expected)
        shutil.rmtree(ws)
    print(f"{len(own)} points on heads/ or after, {total} operations, {len(chosen)} chosen")
    assert len(chosen) >= 40, len(chosen)
    assert_faulted(crashed, len(chosen) - 1, f"a collection that packs heads, crashed ({model})")
