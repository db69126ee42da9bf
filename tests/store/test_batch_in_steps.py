"""A job's batch commits in steps (issue 24, item 5): the pack's last blocks, its index and the one
sync pass run on a helper thread while the job yields, so the first checkpoint of a big tree never
holds the owner's loop for its durability pass. Meanwhile the batch's objects read back, and a put
from anyone else is written durable on its own instead of joining a batch already being sealed.
The slow sync is a gate the test opens, never a sleep."""

import threading

import pytest

from turnback.store import fs
from turnback.store.objects.batch import PACK_AFTER

GATE = 30.0


def _body(objects, blobs):
    for data in blobs:
        objects.put(data)
        yield "put"
    return "walked"


def test_the_commit_waits_for_its_sync_in_steps_and_reads_go_on(store, monkeypatch):
    objects = store.objects
    blobs = [b"object %d " % i * 40 for i in range(PACK_AFTER * 4)]  # enough for a pack
    entered, release = threading.Event(), threading.Event()
    real = fs.syncfs_or_fsync

    def slow_sync(paths, **kw):
        paths = list(paths)
        if any(str(p).endswith(".pack") or ".pack." in str(p) for p in paths):
            entered.set()
            assert release.wait(GATE), "the test never opened the gate"
        return real(paths, **kw)

    monkeypatch.setattr(fs, "syncfs_or_fsync", slow_sync)
    job = objects.iter_batch(_body(objects, blobs))
    steps = 0
    while not entered.is_set():
        next(job)
        steps += 1
        assert steps < 100_000, "the commit never reached its sync"
    # the sync is held: the job still yields, step after step, instead of blocking in it
    for _ in range(3):
        assert next(job) is None
    digests = [store.objects.hasher.digest(b) for b in blobs]
    assert objects.get(digests[0]) == blobs[0]  # the batch being sealed still reads back
    assert objects.has(digests[-1])
    with objects.batch():  # another request's batch meanwhile (a publication): still read back
        assert objects.get(digests[1]) == blobs[1]
        objects.put(b"a publication's own object")
    late = objects.put(b"written while the batch is sealed")
    assert (objects.path(late)).exists()  # durable on its own, not part of the sealed batch
    release.set()
    with pytest.raises(StopIteration) as done:
        while True:
            next(job)
    assert done.value.value == "walked"
    assert objects.packs.locate(digests[0]) is not None  # published as a pack
    assert all(objects.get(d) == b for d, b in zip(digests, blobs))


def test_a_failed_sync_discards_the_batch_and_is_raised_where_the_job_waits(store, monkeypatch):
    objects = store.objects
    blobs = [b"doomed %d " % i * 40 for i in range(PACK_AFTER * 2)]

    def failing(paths, **kw):
        raise OSError(5, "the disk went away")

    monkeypatch.setattr(fs, "syncfs_or_fsync", failing)
    job = objects.iter_batch(_body(objects, blobs))
    with pytest.raises(OSError, match="went away"):
        while True:
            next(job)
    pack_dir = store.path / "objects" / "pack"
    assert not any(pack_dir.glob("*")) if pack_dir.exists() else True  # no temp, no pack left
    assert not objects.has(store.objects.hasher.digest(blobs[0]))
