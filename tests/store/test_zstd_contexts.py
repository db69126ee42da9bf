"""zstd contexts are kept for the next use by any thread, a few at most (`store/objects/zstdctx.py`): kept
per thread, every waiting helper that ever compressed a block held its 9.8 MiB workspace for as
long as it lived, and an owner at 250,000 files waited 15-20 MiB above what ending the helpers gave
(docs/performance.md, 4 December)."""

from __future__ import annotations

import os
import threading

from turnback.store.objects import envelope, packwrite, zstdctx
from turnback.store.objects.packformat import BLOCK
from turnback.store.objects.packs import inflate

GATE = 30.0


def _counting(monkeypatch, kept: zstdctx.Kept) -> list:
    made = []
    real = kept._make

    def make():
        made.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(kept, "_make", make)
    monkeypatch.setattr(kept, "_free", [])
    return made


def _block() -> tuple[list[bytes], int]:
    pieces = [os.urandom(512) + b"source text " * 300 for _ in range(64)]
    return pieces, sum(map(len, pieces))


def test_a_block_compressor_made_on_a_thread_that_ended_is_the_next_threads(monkeypatch):
    made = _counting(monkeypatch, packwrite._kept_for(packwrite.LEVEL))
    pieces, raw = _block()
    for _ in range(3):  # three helper threads, one after the other, each gone when the next runs
        t = threading.Thread(target=packwrite.compress_block, args=(pieces, raw))
        t.start()
        t.join(GATE)
    kind, stored, _check = packwrite.compress_block(pieces, raw)  # and the caller's own thread
    assert kind == BLOCK and inflate(stored, raw) == b"".join(pieces)
    assert len(made) == 1  # one context served all four (per thread: four, three of them lost)
    assert len(packwrite._kept_for(packwrite.LEVEL)._free) == 1


def test_contexts_in_use_at_once_are_distinct_and_no_more_than_keep_stay(monkeypatch):
    kept = envelope._compressors
    made = _counting(monkeypatch, kept)
    barrier = threading.Barrier(3, timeout=GATE)
    got, data = [], b"an image of a source file\n" * 400

    def use():
        c = kept.take()
        barrier.wait()  # all three hold one at the same moment
        got.append((c, c.compress(data)))
        kept.give(c)

    threads = [threading.Thread(target=use) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GATE)
    assert len(got) == 3 and len({id(c) for c, _ in got}) == 3 and len(made) == 3
    assert len({frame for _, frame in got}) == 1  # each compressed the whole input alone
    assert len(kept._free) == kept._keep == 2  # the third was let go


def test_an_idle_drop_gives_the_kept_workspaces_back_and_a_recent_use_keeps_them(monkeypatch):
    _counting(monkeypatch, packwrite._kept_for(packwrite.LEVEL))
    pieces, raw = _block()
    packwrite.compress_block(pieces, raw)
    assert zstdctx.drop_idle(3600.0) == 0 and packwrite._kept_for(packwrite.LEVEL)._free  # used just now
    freed = zstdctx.drop_idle(0.0)
    assert freed >= 1 << 20 and not packwrite._kept_for(packwrite.LEVEL)._free
    packwrite.compress_block(pieces, raw)  # made again on demand
    assert len(packwrite._kept_for(packwrite.LEVEL)._free) == 1
