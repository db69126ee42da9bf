"""capture-latency: saves of files from 1 KiB to 16 MiB inside a running turn; p50 and p99 of the
`turnback/turn/capture` call per size (read, hash, store the image, journal the operation durably; an
occasional debounced publication lands inside a capture, as it would for a user).

Where a capture's time goes: the store's fsyncs (object file, its folder, the journal) are timed in
place during every capture, and reported per size as the median share of the capture they took."""

from __future__ import annotations

import contextlib
import time

from ..store import fs
from . import gen
from .common import begin, keepalive, session, settle, uris, write
from .runner import percentile

SIZES = ((1 << 10, "1KiB"), (16 << 10, "16KiB"), (256 << 10, "256KiB"), (1 << 20, "1MiB"),
         (4 << 20, "4MiB"), (16 << 20, "16MiB"))


def _reps(ctx, size: int) -> int:
    if size <= 256 << 10:
        return ctx.pick(5, 40, 200)
    if size <= 1 << 20:
        return ctx.pick(3, 20, 100)
    if size <= 4 << 20:
        return ctx.pick(2, 10, 40)
    return ctx.pick(2, 5, 20)


@contextlib.contextmanager
def _timed_syncs():
    """Time every fsync the store makes (file and folder) while the block runs: {"s": seconds, "n"}."""
    spent = {"s": 0.0, "n": 0}
    # The seam's modules call each other's functions by name: each binding is timed, not only the
    # package's (a write_atomic's own fsyncs count).
    names = ("fsync", "fsync_dir", "syncfs_or_fsync", "sync_folders")
    real = {(mod, name): getattr(mod, name) for mod in (fs, fs.ops, fs.publish, fs.sync)
            for name in names if hasattr(mod, name)}

    def wrap(fn):
        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent["s"] += time.perf_counter() - t0
                spent["n"] += 1
        return timed
    for (mod, name), fn in real.items():
        setattr(mod, name, wrap(fn))
    try:
        yield spent
    finally:
        for (mod, name), fn in real.items():
            setattr(mod, name, fn)


def run(ctx) -> None:
    root = ctx.dir("ws")
    rels = {label: f"data/blob_{label}.bin" for _size, label in SIZES}
    for size, label in SIZES:
        write(root, rels[label], gen.big(label, size, 0) if size >= 1 << 20 else gen.content(label, size))
    ok = True
    with session(root) as wb:
        turn = begin(wb, "save files of every size")
        objects = wb.store.objects
        for size, label in SIZES:
            times, syncs, counts = [], [], []
            for i in range(1, _reps(ctx, size) + 1):
                data = gen.big(label, size, i) if size >= 1 << 20 else gen.content(label, size, i)
                write(root, rels[label], data)
                keepalive(wb)
                with _timed_syncs() as spent:
                    t0 = time.perf_counter()
                    res = wb.turns.capture({"uris": uris(wb, [rels[label]])})
                    times.append(time.perf_counter() - t0)
                syncs.append(spent["s"])
                counts.append(spent["n"])
                digest = res["captured"][0]["digest"]
                ok &= digest is not None and objects.get(digest) == data
            ctx.fig(f"p50-{label}", percentile(times, 50) * 1000, "ms")
            ctx.fig(f"p99-{label}", percentile(times, 99) * 1000, "ms", note=f"{len(times)} saves")
            ctx.fig(f"fsync-p50-{label}", percentile(syncs, 50) * 1000, "ms",
                    baseline=percentile(times, 50) * 1000, source="the whole capture, p50",
                    note=f"{percentile(counts, 50)} fsyncs a capture")
        settle(wb, turn)
        ctx.check("every capture stored exactly the bytes that were saved", ok)
        log = wb.turns.log()["turns"][0]
        ctx.check("one checkpoint per path despite repeated saves",
                  len(log["files"]) == len(SIZES) and all(f["checkpoint"].endswith("@v1")
                                                          for f in log["files"]))
