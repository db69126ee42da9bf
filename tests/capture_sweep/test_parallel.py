"""The parallel first checkpoint: a sweep that must read many files reads them in a bounded pool,
gives exactly the sequential sweep's answer, keeps one durability pass, and leaves nothing behind
when it is abandoned or a worker's write fails."""

from __future__ import annotations

import errno
import os

import pytest

from turnback.capture import parallel
from turnback.capture.parallel import ParallelReader
from turnback.capture.sweep import StatCache, iter_sweep, sweep
from turnback.store import fsio
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
    return [p for p in store.path.rglob("*") if fsio.is_temp_name(p.name)]


def test_the_pool_gives_the_sequential_answer_in_one_durability_pass(setup, tmp_path, monkeypatch):
    ws, store = setup
    started = []
    real_init = ParallelReader.__init__

    def spy(self, *a, **kw):
        real_init(self, *a, **kw)
        started.append(self)
    monkeypatch.setattr(ParallelReader, "__init__", spy)
    with fsio.faults() as plan:
        with store.objects.batch():
            got = sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    assert started and started[0].submitted > N / 2  # most files went through the pool
    ops = [line.split()[0] for line in plan.log]
    assert ops.count("syncfs") <= 2 and ops.count("fsync") <= 2 and ops.count("fsync_dir") <= 16
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
    assert max(high) <= 2 * 8 and res.hashed == N + 1
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


@pytest.mark.parametrize("fail_at", [40, 90, 250])
def test_a_worker_that_cannot_write_fails_the_sweep_cleanly(setup, fail_at):
    """One write fails in a worker (the disk filled for a moment): the error reaches the sweep's
    caller, every other staged temp file is removed, and nothing was named."""
    ws, store = setup
    with pytest.raises(OSError) as info:
        with store.objects.batch():
            with fsio.faults(fail_at=fail_at, errno=errno.ENOSPC):
                sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    assert info.value.errno == errno.ENOSPC
    assert _temps(store) == []
    assert list(store.objects.list()) == []


def test_under_a_full_disk_nothing_is_named_and_the_owner_sweeps_the_rest(setup):
    ws, store = setup
    with pytest.raises(OSError):
        with store.objects.batch():
            with fsio.faults(fail_at=60, errno=errno.ENOSPC, sticky=True):
                sweep(ws, store.objects, StatCache(), max_bytes=16 << 20)
    assert list(store.objects.list()) == []
    store.sweep_temp()  # what the next owner's open does; a full disk refused even the unlinks
    assert _temps(store) == []
