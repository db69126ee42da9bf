"""A pack's block and delta writes go to its writing thread, in order (`PackWriter._write`): a 2 MiB
frame's `write` is about 5 ms of kernel time here, which on the caller's thread held the owner's
loop 8 to 15 ms in a storm's sweep. The caller goes on while a write is held (a gate, never a
sleep); whatever reads the temp file back, hashes or closes it waits for the queue; a write that
fails fails the caller, and nothing is written after it."""

from __future__ import annotations

import errno
import threading

import pytest

from turnback.store import fs
from turnback.store.objects.packwrite import IN_FLIGHT, PackWriter

from .test_pack_backlog import BLOCK, GATE, SIZE, _objects  # one to a block, past INLINE_BLOCK


@pytest.fixture
def held_writes(monkeypatch):
    """Every `fs.append` off the caller's thread waits for the gate; records who wrote what."""
    gate, writes = threading.Event(), []
    caller = threading.current_thread()
    real = fs.append

    def append(fd, data):
        writes.append((threading.current_thread().name, len(data)))
        if threading.current_thread() is not caller:
            assert gate.wait(GATE), "the test never opened the gate"
        real(fd, data)

    monkeypatch.setattr(fs, "append", append)
    return gate, writes


def test_block_and_delta_writes_go_to_the_writing_thread_and_the_caller_goes_on(store,
                                                                                held_writes):
    gate, writes = held_writes
    writer = PackWriter(store.objects.packs.folder, block_raw=BLOCK)
    objs = _objects(store, IN_FLIGHT + 2)
    varied = "".join(f"def f_{i}(v):\n    return v * {i} + {i % 7}\n" for i in range(9000)).encode()
    objs[0] = (store.hasher.digest(varied[:SIZE]), varied[:SIZE])  # a delta of repeated text never pays
    try:
        for digest, data in objs:
            writer.add(digest, data)
        writer._drain()  # every block compressed and queued; none is written (the gate is shut)
        assert writer._writer is not None and writer._writes
        assert not any(f.done() for _, f in writer._writes)  # the caller came back while they wait
        base_digest, base = objs[0]
        changed = base[:1000] + b"an edit" + base[1000:]
        assert writer.add_delta(store.hasher.digest(changed), changed, base_digest, base)
        assert not writer._writes[-1][1].done()
        gate.set()
        writer.finish()
        off = [name for name, _ in writes if name.startswith("turnback-pack-write")]
        assert len(off) >= IN_FLIGHT + 2  # the blocks after the first, and the delta frame
        for digest, data in objs:
            assert writer.read(digest) == data
        assert writer.read(store.hasher.digest(changed)) == changed
        store.objects.publish_pack(writer)
    finally:
        gate.set()
        writer.discard()
    fresh = type(store).open(store.path, create=False)
    for digest, data in objs:
        assert fresh.objects.get(digest) == data  # the pack as written verifies: order kept
    assert fresh.objects.get(store.hasher.digest(changed)) == changed


def test_reading_back_waits_for_the_queued_writes(store, held_writes):
    gate, _writes = held_writes
    writer = PackWriter(store.objects.packs.folder, block_raw=BLOCK)
    objs = _objects(store, 3)
    got = []
    try:
        for digest, data in objs:
            writer.add(digest, data)
        writer._drain()
        writer._inflight_pieces.clear()  # the first object now reads from the temp file
        writer._small.clear()
        reader = threading.Thread(target=lambda: got.append(writer.read(objs[1][0])), daemon=True)
        reader.start()
        reader.join(0.05)
        assert reader.is_alive() and not got  # it waits for its block's write, the gate shut
        gate.set()
        reader.join(GATE)
        assert got == [objs[1][1]]
    finally:
        gate.set()
        writer.discard()


def test_reading_back_a_written_block_does_not_wait_for_later_writes(store, monkeypatch):
    """A read-back (a delta's base in a repack, a duplicate's check) waits for the writes that
    cover its segment, not for every one queued after it: with eight blocks queued that was tens of
    milliseconds on the loop."""
    writer = PackWriter(store.objects.packs.folder, block_raw=BLOCK)
    objs = _objects(store, IN_FLIGHT + 3)
    gate = threading.Event()
    real = fs.append
    try:
        for digest, data in objs[:2]:
            writer.add(digest, data)
        writer._drain()
        writer._written()  # the header and the first block are in the file
        first_end = writer.segments[0].offset + writer.segments[0].stored

        def append(fd, data):  # every later write is held on the gate
            if threading.current_thread().name.startswith("turnback-pack-write"):
                assert gate.wait(GATE), "the test never opened the gate"
            real(fd, data)

        monkeypatch.setattr(fs, "append", append)
        for digest, data in objs[2:]:
            writer.add(digest, data)
        writer._drain()
        assert writer._writes and all(start >= first_end for start, _ in writer._writes)
        writer._inflight_pieces.clear()
        writer._small.clear()
        writer._readback = None
        assert writer.read(objs[0][0]) == objs[0][1]  # returned with the later writes held
        assert writer._writes and not any(f.done() for _, f in writer._writes)
        gate.set()
        for digest, data in objs:
            assert writer.read(digest) == data
    finally:
        gate.set()
        writer.discard()


def test_a_failed_write_fails_the_caller_and_nothing_follows_it(store, monkeypatch):
    real, calls = fs.append, []

    def append(fd, data):
        calls.append(threading.current_thread().name)
        if threading.current_thread().name.startswith("turnback-pack-write") and \
                calls.count(calls[-1]) == 1:
            raise OSError(errno.ENOSPC, "the disk is full")
        real(fd, data)

    monkeypatch.setattr(fs, "append", append)
    writer = PackWriter(store.objects.packs.folder, block_raw=BLOCK)
    try:
        with pytest.raises(OSError) as raised:
            for digest, data in _objects(store, IN_FLIGHT + 4):
                writer.add(digest, data)
            writer.finish()
        assert raised.value.errno == errno.ENOSPC
        off = [name for name in calls if name.startswith("turnback-pack-write")]
        assert off == off[:1]  # the failed one only: no later write reached the file
    finally:
        writer.discard()
    assert not [p for p in store.objects.packs.folder.iterdir() if fs.is_temp_name(p.name)]
