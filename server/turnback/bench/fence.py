"""`fence-cost`: what the write path's fence costs (store/fs/anchored.py).

Every write, rename and unlink in a fenced root resolves its folder afresh from the root with
`O_NOFOLLOW | O_DIRECTORY` opens (or one `openat2` with RESOLVE_NO_SYMLINKS where the kernel has it),
so a folder swapped for a link between check and use cannot redirect it. That costs system calls. Here
the same restore-shaped work (replace N files, 5 folders deep, through `fs.write_atomic`) runs in a
fenced root and in an unfenced one, in the same run; the unfenced figure is the baseline. Both with
and without the fsyncs, since on most disks the fsyncs hide the walk entirely.
"""

from __future__ import annotations

import time

from ..store.fs import anchored
from ..store import fs

DEPTH = 5


def _tree(root, n: int) -> list:
    folder = root.joinpath(*(f"d{i}" for i in range(DEPTH)))
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"f{i}.txt" for i in range(n)]
    for p in paths:
        p.write_bytes(b"old\n")
    return paths


def _replace_all(paths, sync: bool) -> float:
    start = time.perf_counter()
    for i, p in enumerate(paths):
        fs.write_atomic(p, b"new %d\n" % i, sync=sync)
    return (time.perf_counter() - start) / len(paths)


def run(ctx) -> None:
    n = ctx.pick(50, 300, 1000)
    rounds = ctx.pick(3, 5, 7)
    fenced_root, plain_root = ctx.dir("fenced"), ctx.dir("plain")
    anchored.fence_root(fenced_root)
    fenced, plain = _tree(fenced_root, n), _tree(plain_root, n)
    ctx.require("the fenced root is resolved through the fence",
                anchored.root_of(str(fenced[0])) is not None and anchored.root_of(str(plain[0])) is None)
    anchored._setup_openat2()
    resolver = "openat2" if anchored._openat2 is not None else "an openat walk"
    for sync in (False, True):
        what = "with fsync" if sync else "no fsync"
        # interleaved rounds, best of each: the same disk state and cache for both sides
        f_best = p_best = float("inf")
        for _ in range(rounds):
            f_best = min(f_best, _replace_all(fenced, sync))
            p_best = min(p_best, _replace_all(plain, sync))
        ctx.fig(f"replace one file, fenced ({what})", f_best, "s", baseline=p_best,
                source="the same write, unfenced",
                note=f"{n} files {DEPTH} folders deep, best of {rounds}; resolved by {resolver}")
    ok = all(p.read_bytes() == b"new %d\n" % i for paths in (fenced, plain) for i, p in enumerate(paths))
    ctx.check("every file holds its new bytes on both sides", ok)
