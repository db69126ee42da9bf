"""Small helpers the scenarios share: driving a session through the workbench, verifying a store."""

from __future__ import annotations

import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from ..workbench import Options, Workbench


class Timer:
    def __init__(self):
        self.s = 0.0

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self._t0
        return False


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def open_wb(root: Path, **options) -> Workbench:
    return Workbench.open(root, Options(**options))


@contextmanager
def session(root: Path, **options):
    wb = open_wb(root, **options)
    try:
        yield wb
    finally:
        wb.close()


RENEW_EVERY = 5.0  # seconds; the lease lives 30 s and the server renews it on a timer


def keepalive(wb: Workbench) -> None:
    """Renew the lease the way the server's timer does (the command line's one-shot commands never
    live long enough to need it; a bench session does)."""
    now = time.monotonic()
    if now - getattr(wb, "_bench_renewed", 0.0) >= RENEW_EVERY:
        wb.renew()
        wb._bench_renewed = now


def run_job(wb: Workbench, job):
    """Run a workbench job to its end, renewing the lease between its steps."""
    if not hasattr(job, "send"):
        return job
    try:
        while True:
            next(job)
            keepalive(wb)
    except StopIteration as done:
        return done.value


def begin(wb: Workbench, prompt: str) -> int:
    keepalive(wb)
    return run_job(wb, wb.turns.begin_job({"prompt": prompt}))["turn"]


def settle(wb: Workbench, n: int) -> int | None:
    keepalive(wb)
    return run_job(wb, wb.turns.settle_job({"turn": n}))["headSeq"]


def uris(wb: Workbench, rels) -> list[str]:
    return [wb.ws.to_uri(r) for r in rels]


def write(root: Path, rel: str, data: bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)


def verify_objects(objects, digests) -> tuple[int, list[str]]:
    """Verify every named object against its digest; returns (count verified, bad digests)."""
    bad, n = [], 0
    for d in digests:
        n += 1
        if not objects.verify(d):
            bad.append(d)
    return n, bad


def store_objects(objects) -> tuple[int, int]:
    """(count, apparent bytes) of every object in a store."""
    n = total = 0
    for d in objects.list():
        n += 1
        total += objects.stat(d) or 0
    return n, total


def copy_store_tree(src: Path, dst: Path) -> None:
    """Copy a workspace with its store, hard-linking the write-once parts (objects and heads: never
    modified in place, only created and unlinked) and copying everything else (journal, lease, caches),
    so a destructive scenario can collect a copy without touching the original."""
    if dst.exists():
        shutil.rmtree(dst)

    def copy(s: str, d: str) -> None:
        parts = Path(s).parts
        if ".turnback" in parts:
            i = parts.index(".turnback")
            if len(parts) > i + 1 and parts[i + 1] in ("objects", "heads"):
                os.link(s, d)
                return
        shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=copy, symlinks=True)
