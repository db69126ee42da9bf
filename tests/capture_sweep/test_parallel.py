"""The parallel first checkpoint: a sweep that must read many files reads them in a bounded pool,
gives exactly the sequential sweep's answer, keeps one durability pass, and leaves nothing behind
when it is abandoned or a worker's write fails."""

from __future__ import annotations

import errno
import os

import pytest
from sessionkit import assert_faulted

from turnback.capture import parallel
from turnback.capture.parallel import ParallelReader
from turnback.capture.statcache import StatCache
from turnback.capture.sweep import iter_sweep, sweep
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.layout import Store
from turnback.workspace import Workspace

N = 300


def _tree(root, n=N):
    for i in range(n):
        p = root / f"pkg{i % 7}" / f"mod{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"value_{i}_{j} = {j} * {i}\n" for j in range(20 + i % 50))
        if i % 10 == 0:
            body = "shared = 1\n" * 40  # identical files: one object, several names
        p.write_text(body)
    (root / "big.bin").write_bytes(os.urandom(5 << 20))  # over what a worker holds: read inline


@pytest.fixture
def setup(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    _tree(root)
    store = Store.open(root / ".turnback")
    return Workspace(root, store.path), store


def _temps(store):
    return [p for p in store.path.rglob("*") if fs.is_temp_name(p.name)]


def test_the_pool_gives_the_sequential_answer_in_one_durability_pass(setup, tmp_path, monkeypatch):
    ws, store = setup
    started = []
    real_init = ParallelReader.__init__

    def spy(self, *a, **kw):
        real_init(self, *a, **kw)
        started.append(self)
    monkeypatch.setattr(ParallelReader, "__init__", spy)
    with faultplan.faults() as plan:
        with store.objects.batch():
            got = sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    assert started and started[0].submitted > N / 2  # most files went through the pool
    ops = [line.split()[0] for line in plan.log]
    # One pass: the pack, its index and the one big loose object (5 MiB streams, loose), then the
    # folders; the 300 small files are one pack, not 300 files.
    assert ops.count("syncfs") + ops.count("fsync") <= 3 and ops.count("fsync_dir") <= 16
    assert ops.count("create") <= 4 and len(store.objects.packs.packs) == 1
    # The sequential answer, from a second store that never starts a pool (no batch open). Its
    # seed differs, so the names do too: compare what each name holds.
    other = Store.open(tmp_path / "other")
    expect = sweep(Workspace(ws.root, store.path), other.objects, StatCache(), max_bytes=16 << 20)
    assert set(got.images) == set(expect.images) and got.hashed == expect.hashed == N + 1
    assert all(store.objects.get(got.images[r]) == other.objects.get(expect.images[r])
               for r in got.images)
    assert got.gaps == expect.gaps == [] and not got.absent
    for rel, digest in got.images.items():
        assert store.objects.get(digest) == (ws.root / rel).read_bytes()
    assert len(set(got.images.values())) < len(got.images)  # the identical files share one object
    assert _temps(store) == []


def test_a_cold_sweep_of_an_existing_store_confirms_instead_of_rewriting(setup):
    ws, store = setup
    with store.objects.batch():
        first = sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    with store.objects.batch():
        again = sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)  # cache lost
    assert again.images == first.images and _temps(store) == []


def test_the_pool_stays_bounded_and_the_sweep_keeps_yielding(setup, monkeypatch):
    ws, store = setup
    high = []
    real_submit = ParallelReader.submit

    def submit(self, rel, size):
        real_submit(self, rel, size)
        high.append(len(self))
    monkeypatch.setattr(ParallelReader, "submit", submit)
    monkeypatch.setattr(parallel, "default_workers", lambda: 2)
    monkeypatch.setattr(parallel, "GROUP_FILES", 4)  # in flight: 2 workers x 4 groups x 4 files
    yields = 0
    with store.objects.batch():
        gen = iter_sweep(ws, store.objects, StatCache(), max_bytes=16 << 20, budget_files=16)
        while True:
            try:
                next(gen)
                yields += 1
            except StopIteration as stop:
                res = stop.value
                break
    assert max(high) <= 2 * 4 * 4 + 4 and res.hashed == N + 1  # and one group being filled
    assert yields >= N // 16


def test_abandoning_the_sweep_leaves_no_temp_file_and_no_object(setup):
    ws, store = setup
    with pytest.raises(KeyboardInterrupt):
        with store.objects.batch():
            gen = iter_sweep(ws, store.objects, StatCache(), max_bytes=16 << 20, budget_files=4)
            for _ in range(40):
                next(gen)
            gen.close()  # the job was cancelled
            raise KeyboardInterrupt
    assert _temps(store) == []
    assert list(store.objects.list()) == []


def test_a_write_that_fails_anywhere_in_a_packed_first_checkpoint_names_nothing(setup):
    """Every write of the batch fails once in turn (the disk filled for a moment): the error
    reaches the sweep's caller, no temp file is left, and whatever got its name before the fault
    (the commit renames loose objects, then the pack) is sound: unreferenced, for the collector."""
    ws, store = setup

    def empty():
        for d in list(store.objects.list_loose()):
            store.objects.remove(d)
        if store.objects.packs.folder.exists():
            for name in os.listdir(store.objects.packs.folder):
                os.unlink(store.objects.packs.folder / name)
        store.objects.packs.refresh(force=True)
    points = faulted = 0
    for n in range(1, 200):
        empty()
        try:
            with faultplan.faults(fail_at=n, errno=errno.ENOSPC) as plan:
                with store.objects.batch():
                    sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        else:
            assert plan.count < n  # it finished before reaching the fault
            break
        points += 1
        faulted += plan.faulted
        assert _temps(store) == []
        store.objects.packs.refresh(force=True)
        assert all(store.objects.verify(d) for d in store.objects.list())
    assert points >= 8, points
    assert_faulted(faulted, points, "a sweep failed at every operation (ENOSPC)")
    assert len(store.objects.packs.packs) == 1  # the run that finished wrote its pack


@pytest.mark.parametrize("model", ["sticky", "disk-full"])
def test_under_a_broken_or_full_disk_nothing_is_left_that_the_owner_cannot_sweep(setup, model):
    """From operation N on every write fails (a device gone) or every space-taking operation
    fails (a full disk, where unlinks still work), for every N: whatever was named is sound and
    what is left over is temp files the next owner's open removes."""
    ws, store = setup
    points = faulted = 0
    for n in range(1, 200):
        for d in list(store.objects.list_loose()):
            store.objects.remove(d)
        for name in os.listdir(store.objects.packs.folder) if store.objects.packs.folder.exists() else []:
            os.unlink(store.objects.packs.folder / name)
        store.objects.packs.refresh(force=True)
        kw = {"fail_at": n, "sticky": True} if model == "sticky" else {"disk_full_at": n}
        try:
            with faultplan.faults(errno=errno.ENOSPC, **kw) as plan:
                with store.objects.batch():
                    sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
        except OSError:
            pass
        else:
            break
        points += 1
        faulted += plan.faulted > 0
        store.sweep_temp()  # what the next owner's open does; a full disk refused even the unlinks
        assert _temps(store) == []
        store.objects.packs.refresh(force=True)
        assert all(store.objects.verify(d) for d in store.objects.list())
    assert points >= 8, points
    assert_faulted(faulted, points, f"a sweep on a {model} disk")


def _readers(monkeypatch):
    import threading

    from turnback.capture import reader

    seen, real = [], reader._attempt

    def recorded(rel, *a, **kw):
        seen.append((rel, threading.current_thread()))
        return real(rel, *a, **kw)
    monkeypatch.setattr(reader, "_attempt", recorded)
    return seen


def test_a_serving_process_reads_in_workers_from_the_first_miss(tmp_path, monkeypatch):
    """On the command line a sweep reads its first `START_AFTER` misses itself; in a serving
    process its thread is the loop, where a read that meets an existing packed copy inflates the
    copy's block: there every miss goes to a worker."""
    import threading

    root = tmp_path / "ws"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}.txt").write_text(f"file {i}\n" * 50)
    store = Store.open(root / ".turnback")
    ws = Workspace(root, store.path)
    me = threading.current_thread()

    seen = _readers(monkeypatch)
    with store.objects.batch():
        sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    assert len(seen) == 5 and all(t is me for _rel, t in seen)  # a handful: no threads

    monkeypatch.setattr(parallel, "_start_after", parallel.START_AFTER)
    parallel.read_in_workers_from_the_first_miss()
    seen.clear()
    with store.objects.batch():
        got = sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    assert len(seen) == 5 and all(t is not me for _rel, t in seen)
    assert sorted(got.images) == [f"f{i}.txt" for i in range(5)]


def test_a_sweep_that_misses_nothing_starts_no_thread(setup, monkeypatch):
    ws, store = setup
    for p in ws.root.rglob("*"):
        if p.is_file() and ".turnback" not in p.parts:
            os.utime(p, (1e9, 1e9))  # long settled: the stat cache vouches for them (not racy)
    cache = StatCache()
    with store.objects.batch():
        sweep(ws, store.objects, cache, max_bytes=16 << 20)
    monkeypatch.setattr(parallel, "_start_after", 0)
    made = []
    real = parallel.ThreadPoolExecutor

    def counted(*a, **kw):
        made.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(parallel, "ThreadPoolExecutor", counted)
    with store.objects.batch():
        again = sweep(ws, store.objects, cache, max_bytes=16 << 20)
    assert again.hashed == 0 and made == []
