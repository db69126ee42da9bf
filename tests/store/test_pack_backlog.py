"""A pack being written never makes its producer wait on the compressing thread while a job can
wait in slices instead (issue 24, item 5: the storm's 30-50 ms holds were `add` waiting for a block).
`add` goes on past IN_FLIGHT blocks in flight; the objects of blocks still being compressed read back
from memory; `iter_settle` is where a job waits, a slice at a time; only past IN_FLIGHT_MAX does
`add` itself wait (memory stays bounded). The compressor is a gate the test opens, never a sleep."""

import threading

import pytest

from turnback.store.objects import packwrite
from turnback.store.objects.packwrite import IN_FLIGHT, IN_FLIGHT_MAX, PackWriter

GATE = 30.0
BLOCK = 400 << 10
SIZE = 300 << 10  # past INLINE_BLOCK, and one to a block: every add after the first cuts a block,
#                   which goes to the compressing thread


@pytest.fixture
def gated(monkeypatch):
    """compress_block held until the test opens the gate; counts the blocks that entered it."""
    gate, entered = threading.Event(), []
    real = packwrite.compress_block

    def held(pieces, raw_len, level=packwrite.LEVEL):
        entered.append(raw_len)
        assert gate.wait(GATE), "the test never opened the gate"
        return real(pieces, raw_len, level)

    monkeypatch.setattr(packwrite, "compress_block", held)
    return gate, entered


def _objects(store, n, size=SIZE):
    """n objects of `size` bytes, each a pack block of its own at BLOCK: (digest, bytes)."""
    out = []
    for i in range(n):
        data = (b"object %06d " % i) * (size // 14 + 1)
        out.append((store.hasher.digest(data), data))
    return out


def test_add_goes_on_while_blocks_are_compressed_and_they_read_back(store, gated):
    gate, entered = gated
    writer = PackWriter(store.objects.packs.folder, block_raw=BLOCK)
    objs = _objects(store, IN_FLIGHT + 3)
    try:
        for digest, data in objs:
            writer.add(digest, data)  # the gate is shut: a wait here would never return
        assert len(writer._inflight) > IN_FLIGHT and writer.backlog
        for digest, data in objs:  # in flight, in the open block: all read back, nothing waits
            assert writer.read(digest) == data
        settle = writer.iter_settle()
        assert next(settle) is None  # the job waits a slice, and yields
        assert next(settle) is None
        gate.set()
        for _ in settle:
            pass
        assert not writer.backlog and len(writer._inflight) <= IN_FLIGHT
        temps = writer.finish()
        assert all(p.exists() for p in temps)
        for digest, data in objs:
            assert writer.read(digest) == data  # now read back from the written pack
    finally:
        gate.set()
        writer.discard()


def test_past_the_bound_add_waits_for_the_oldest(store, gated):
    gate, entered = gated
    writer = PackWriter(store.objects.packs.folder, block_raw=BLOCK)
    objs = _objects(store, IN_FLIGHT_MAX + 4)
    waiting, done, sent = threading.Event(), threading.Event(), []
    real_write = writer._write_oldest

    def write_oldest():
        if not gate.is_set():
            sent.append(len(writer._inflight))
            waiting.set()  # the producer is about to wait for a block the gate holds
        real_write()

    writer._write_oldest = write_oldest

    def produce():
        for digest, data in objs:
            writer.add(digest, data)
        done.set()

    producer = threading.Thread(target=produce, daemon=True)
    try:
        producer.start()
        assert waiting.wait(GATE), "add never waited: memory is not bounded"
        assert not done.is_set() and sent[0] == IN_FLIGHT_MAX + 1
        gate.set()
        assert done.wait(GATE)
        assert len(writer._inflight) <= IN_FLIGHT_MAX
    finally:
        gate.set()
        producer.join(GATE)
        writer.discard()
