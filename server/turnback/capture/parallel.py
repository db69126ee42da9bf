"""A bounded thread pool for sweeps that must read many files (the first checkpoint, a lost cache).

The walk stays on the caller's thread; each file the stat cache cannot vouch for is handed to a worker
that opens, reads, hashes, compresses and writes it to a temp file (`ObjectStore.stage`). Those are
system calls and zstd, which release the GIL, so the workers (one per core but the walk's, at most
four) overlap the disk and the CPU.
The caller's thread then adopts each staged object into the one open batch: the whole sweep stays
one durability pass, and nothing outside the batch's thread touches the batch.

Bounded on purpose: at most `max_files` reads in flight and `max_bytes` of file bytes held (the
submitter waits, by yielding, when either is reached), so memory does not grow with the tree. A file
too big to hold (`read_image` would stream it) is read on the caller's thread as before.

The pool starts only once a sweep has missed the cache `START_AFTER` times, and only inside an open
batch: an ordinary sweep that hashes a handful of edited files never pays for threads. A serving
process starts it at the first miss (`read_in_workers_from_the_first_miss`): there the caller's
thread is the event loop.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from .reader import IN_MEMORY_LIMIT, ImageRead, read_image

START_AFTER = 32
_start_after = START_AFTER  # a serving process reads in workers from the first miss
WAIT_SLICE = 0.002  # seconds a submitter or drainer blocks before it yields to the loop again
_ALONE = 4 << 20  # files above this are read on the caller's thread (few, and they stream)
# Files go to a worker in groups: one task per file cost about 30 us of the caller's time (a future,
# a queue put, a callback), as much as reading a small file; a group of 32 costs that once.
GROUP_FILES = 32
GROUP_BYTES = 1 << 20


def read_in_workers_from_the_first_miss() -> None:
    """For a serving process (once, at its start): a read on the caller's thread is a read on the
    event loop, and one that meets an existing packed copy inflates that copy's 8 MiB block there
    to confirm it (70 ms holds in a storm's pre-turn sweep, 3 December). The workers confirm on
    their thread (`ObjectStore.stage`). The command line keeps `START_AFTER`: no threads for a
    handful of edited files."""
    global _start_after
    _start_after = 0


def default_workers() -> int:
    """One core for the walk's thread, the rest (up to 4) for reading. On two cores one reader beat
    two: 2.3-2.8 s against 3.2-3.5 s for a 20,000-file first checkpoint from a warm page cache, the
    same from a cold one, with less CPU (two readers and the walk trade the interpreter lock at every
    system call, and each trade is a futex wake and a context switch)."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


class _Inline(Exception):
    """The file grew past what a worker holds in memory: read it on the caller's thread."""


class _Stager:
    """What `read_image` sees as its object store inside a worker: `put` stages instead of naming."""

    def __init__(self, objects):
        self.objects = objects
        self.staged = None

    def put(self, data: bytes) -> str:
        self.staged = self.objects.stage(data)
        return self.staged.digest

    def put_file(self, *_a, **_kw):
        raise _Inline()


class ParallelReader:
    """Read files in worker threads; results come back through `collect` on the caller's thread."""

    def __init__(self, ws, objects, *, max_bytes: int, workers: int | None = None,
                 max_files: int | None = None, max_held: int = 16 << 20):
        self.ws = ws
        self.objects = objects
        self.max_bytes = max_bytes
        self.workers = workers or default_workers()
        self.max_files = max_files or self.workers * 4 * GROUP_FILES
        self.max_held = max_held
        from ..store.memory import bound_malloc

        bound_malloc()  # many file-sized buffers freed by another thread: give them back
        self._pool: ThreadPoolExecutor | None = None  # made at the first group sent
        # future -> (the group's paths, bytes it may hold)
        self._inflight: dict[Future, tuple[list[str], int]] = {}
        self._files = 0  # files in the groups in flight
        self._held = 0
        self._group: list[str] = []
        self._group_bytes = 0
        self._finished: deque[Future] = deque()  # appended by the workers' done-callbacks
        self.submitted = 0

    @staticmethod
    def wanted(objects, misses: int) -> bool:
        return misses >= _start_after and getattr(objects, "batch_open", False) \
            and hasattr(objects, "stage")

    def takes(self, size: int) -> bool:
        return size <= _ALONE

    @property
    def full(self) -> bool:
        return self._files >= self.max_files or self._held >= self.max_held

    def __len__(self) -> int:
        return self._files + len(self._group)

    def submit(self, rel: str, size: int) -> None:
        self._group.append(rel)
        self._group_bytes += size
        self.submitted += 1
        if len(self._group) >= GROUP_FILES or self._group_bytes >= GROUP_BYTES:
            self._send()

    def _send(self) -> None:
        if not self._group:
            return
        group, held = self._group, self._group_bytes
        self._group, self._group_bytes = [], 0
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="turnback-read")
        fut = self._pool.submit(self._work_group, group)
        self._inflight[fut] = (group, held)
        fut.add_done_callback(self._finished.append)
        self._files += len(group)
        self._held += held

    def _work_group(self, group: list[str]):
        out = []
        try:
            for rel in group:
                out.append(self._work(rel))
        except BaseException:
            for _got, staged in out:
                if staged is not None:
                    staged.discard()
            raise
        return out

    def _work(self, rel: str):
        stager = _Stager(self.objects)
        try:
            got = read_image(self.ws, rel, stager, max_bytes=min(self.max_bytes, IN_MEMORY_LIMIT),
                             check_parents=False)
        except _Inline:
            if stager.staged is not None:
                stager.staged.discard()
            return None, None
        except BaseException:
            if stager.staged is not None:
                stager.staged.discard()
            raise
        if got.status == "too-large" and self.max_bytes > IN_MEMORY_LIMIT:
            return None, None  # over what a worker holds, not over the user's limit
        return got, stager.staged

    def done(self, *, block: bool, max_groups: int | None = None) -> list[tuple[str, ImageRead]]:
        """Results of finished reads, each adopted into the batch; with `block`, waits briefly for
        at least one. A read that must happen on the caller's thread is done here, inline. At most
        `max_groups` finished groups are taken (the rest wait for the next call): adopting is the
        caller's work, and a caller on an event loop keeps its steps short."""
        if block:
            self._send()  # a caller that waits must not wait for a group never sent
        if not self._inflight:
            return []
        if block and not self._finished:
            wait(list(self._inflight), timeout=WAIT_SLICE, return_when=FIRST_COMPLETED)
        finished = []
        while self._finished and (max_groups is None or len(finished) < max_groups):
            finished.append(self._finished.popleft())
        out = []
        for fut in finished:
            group, size = self._inflight.pop(fut)
            self._held -= size
            self._files -= len(group)
            results = fut.result()  # a store error in a worker is raised here, on our thread
            try:
                for rel, (got, staged) in zip(group, results):
                    if got is None:
                        got = read_image(self.ws, rel, self.objects, max_bytes=self.max_bytes,
                                         check_parents=False)
                    elif staged is not None:
                        digest = self.objects.adopt(staged)
                        assert digest == got.digest
                    out.append((rel, got))
            finally:
                for _got, staged in results:
                    if staged is not None:
                        staged.discard()  # no-op once adopted
        return out

    def close(self) -> None:
        """Stop: cancel what has not started, wait for what has, and remove what they staged."""
        for fut in list(self._inflight):
            fut.cancel()
        deadline = time.monotonic() + 30
        for fut in list(self._inflight):
            if fut.cancelled():
                continue
            try:
                results = fut.result(timeout=max(0.0, deadline - time.monotonic()))
            except BaseException:  # noqa: BLE001 - closing: the error was or will be reported
                continue
            for _got, staged in results:
                if staged is not None:
                    staged.discard()
        self._inflight.clear()
        self._group.clear()
        self._files = 0
        self._finished.clear()
        self._held = 0
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
