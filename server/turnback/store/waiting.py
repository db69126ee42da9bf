"""Waiting inside a job without holding its thread: blocking work on a helper thread, awaited in
slices.

A job is a generator the server advances a slice at a time on its event loop (`lsp/slices.py`) and
the command line runs straight through (`Workbench.run`). Work that blocks in one call (a sync of a
big pack on a loaded disk, a pack's last blocks being compressed, its index being built) would hold
the loop for all of it; run on a helper thread, the job waits for it at most `WAIT_SLICE` per step
and yields between (the command line then simply waits again: no spinning).

Architecture invariant: the job's own thread is the only one that changes the store's state; a
helper thread does one self-contained piece whose result (or exception, a fault plan's included)
is handed back and raised where the job waits.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout

WAIT_SLICE = 0.0025  # seconds a step may block waiting: half the loop's slice budget


IDLE_SECONDS = 10.0  # a helper thread with nothing to do for this long ends (its malloc arena
# then gives back what it kept: 8-9 MiB at 250,000 files; the pack reader's blocks go after as long)


class _Helpers:
    """Daemon threads kept for the next `in_thread` (a thread started per call cost 0.45 ms, and a
    served capture or step makes two calls): a call takes an idle one or starts one more, so calls
    never wait for each other, however many are in flight; one idle for `IDLE_SECONDS` ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0

    def submit(self, task) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # that one takes it (or a sibling, as idle as it)
                self._tasks.put(task)
                return
        # Handed in a list the thread empties: a Thread keeps its `args` until it ends, and with
        # them the first call's closure, its arguments and its result (a sweep's tables, a file's
        # bytes) for as long as the helper lives (with the zstd contexts once kept per thread,
        # 15-25 MiB resident at 250,000 files: docs/performance.md, 4 December).
        threading.Thread(target=self._work, args=([task],), name="turnback-wait",
                         daemon=True).start()

    def _work(self, first: list) -> None:
        task = first.pop()
        while True:
            task()
            task = None  # nothing of the last call is kept alive while idle
            with self._lock:
                self._idle += 1
            try:
                task = self._tasks.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    try:  # handed one just as the wait ended: it was counted on, so run it
                        task = self._tasks.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return


_helpers = _Helpers()


def in_thread(fn, *args) -> Future:
    """Run `fn(*args)` on a helper thread of its own (daemon: a process that must exit is not held)."""
    fut: Future = Future()

    def run():
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the job, which raises it
            fut.set_exception(exc)

    _helpers.submit(run)
    return fut


def wait_in_slices(fut: Future, slice_seconds: float = WAIT_SLICE):
    """Yield (None) until `fut` is done, blocking at most `slice_seconds` per step; return its
    result or raise its exception. Closed meanwhile (a cancelled job), it waits for the helper to
    end before it lets go: what the helper touches is the caller's to clean up afterwards."""
    try:
        while True:
            try:
                return fut.result(timeout=slice_seconds)
            except FutureTimeout:
                yield None
    except GeneratorExit:
        try:
            fut.result()
        except BaseException:  # noqa: BLE001 - the job is being closed; its own error stands
            pass
        raise


class _Bound:
    """What a job yields once it has changed what its request asked for: a runner that is cancelled
    from here on lets the job run to its end and answers with its outcome (`lsp/slices.run_job`)."""

    binding = True


BOUND = _Bound()


def binding_steps(job):
    """`job`'s steps (its value is job's), each yielded as binding: for the waits that follow a
    job's own change (a journal sync after its record, a publication after a settle), which a
    cancel must not cut off from the change before them. Closed at one of them all the same (a
    second cancel, a shutdown, an outer job that was cancelled), it first runs `job` to its end:
    each of its steps blocks at most one wait slice."""
    try:
        while True:
            try:
                next(job)
            except StopIteration as done:
                return done.value
            try:
                yield BOUND
            except GeneratorExit:
                for _ in job:
                    pass
                raise
    finally:
        job.close()


def unbound_steps(job):
    """`job`'s steps with its binding marks kept to itself: for a sub-job that runs before the
    caller's own change (the settle of an idle turn before a rewind, a fork's sweep of its new
    worktree), so that the caller stays cancellable until it changes something itself. The
    sub-job's change is whole all the same: closed in its binding waits, it finishes them first
    (`binding_steps`)."""
    try:
        while True:
            try:
                value = next(job)
            except StopIteration as done:
                return done.value
            yield None if getattr(value, "binding", False) else value
    finally:
        job.close()
