"""Running a workbench job (a generator of small steps) a slice at a time on the event loop.

A slice advances the generator until about `budget` seconds have passed, then yields to the loop
with `await asyncio.sleep(0)`, so requests that arrived meanwhile are answered between slices.
`lock`, when given, is held per slice only (the background collector's way); a caller that must
keep others out for the whole job holds its own lock around `run_job` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Generator

from ..store import fs

SLICE_BUDGET = 0.005  # seconds; BRIEF law 7: goal 10 ms, hard ceiling 50 ms
# How long another thread may hold the interpreter lock before the loop's thread gets it back. The
# owner's helper threads (the watcher's walks, the parallel reads, the repack's, a sync waiting)
# hold it for Python work between their system calls; at CPython's default of 5 ms, every hop of a
# request (read, parse, run, answer) could wait that long behind one of them.
SWITCH_INTERVAL = 0.0001
_preferred = False


def prefer_the_loop() -> None:
    """Give the loop's thread the interpreter lock within `SWITCH_INTERVAL` (process-wide, once: a
    serving process's helpers are all background work)."""
    global _preferred
    if not _preferred:
        _preferred = True
        sys.setswitchinterval(SWITCH_INTERVAL)


@contextlib.contextmanager
def cycles_deferred():
    """No cyclic garbage collection while a long job builds big structures on the loop (a
    collection's scan holds millions of objects): one full collection over them held the loop 38 ms,
    outside any slice. Afterwards what survived is frozen, out of the collector's sight, so later
    collections stay small; reference counting still frees what goes (head facts hold no cycles).
    Cyclic garbage made meanwhile is frozen too: `reclaim_frozen` returns it at a quiet moment.
    Process-wide; the jobs that use it run one at a time."""
    global _frozen_garbage
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        _frozen_garbage = True
        if was:
            gc.enable()


_frozen_garbage = False


def reclaim_frozen() -> bool:
    """One full collection of everything frozen since the last one (call it when nothing has needed
    the loop for a long while: it takes tens of ms on a big session), then freeze what survives."""
    global _frozen_garbage
    if not _frozen_garbage or not gc.isenabled():
        return False
    _frozen_garbage = False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return True


LOOP_TURNS = 8  # loop iterations between slices: enough for a request to be read, parsed and run


async def breathe() -> None:
    """Give the loop a few iterations between slices. A request needs several hops (bytes read,
    message parsed, handler task started, handler run); one `sleep(0)` gives it only the first."""
    for _ in range(LOOP_TURNS):
        await asyncio.sleep(0)


@dataclass
class SliceStats:
    slices: int = 0
    steps: int = 0
    max_slice_ms: float = 0.0


class Gate:
    """Test support: a gate on a job (`TURNBACK_JOB_GATE=METHOD:FOLDER`). When a METHOD request
    starts and FOLDER/step holds N, the step file is taken, and at the job's Nth yield the server
    makes FOLDER/paused and waits, answering everything else, until FOLDER/go appears (it removes
    both then). A cancel the test sends meanwhile reaches the job exactly at that yield. FOLDER/step
    holding `answer` gates the yield of a job's early answer (runners.py) instead."""

    def __init__(self, step: int, folder: str, at_answer: bool = False):
        self.step, self.folder, self.at_answer = step, folder, at_answer

    def holds(self, steps: int, value: Any) -> bool:
        if self.at_answer:
            return getattr(value, "early_answer", None) is not None
        return steps == self.step

    @classmethod
    def for_method(cls, method: str) -> "Gate | None":
        import os

        name, _, folder = os.environ.get("TURNBACK_JOB_GATE", "").partition(":")
        if name != method or not folder:
            return None
        path = os.path.join(folder, "step")
        try:
            with open(path) as fh:
                text = fh.read().strip()
            step = 0 if text == "answer" else int(text)
            fs.unlink(path)  # the test's own folder: never the workspace or the store
        except (OSError, ValueError):
            return None
        fs.unlink(os.path.join(folder, "go"), missing_ok=True)  # a go left by an earlier cancel
        return cls(step, folder, at_answer=step == 0)

    def ended(self, steps: int) -> None:
        """The job ended before the gate's step: FOLDER/ended says after how many yields."""
        import os

        fs.write_atomic(os.path.join(self.folder, "ended"), str(steps).encode(), sync=False)

    async def hold(self) -> None:
        import os

        paused, go = os.path.join(self.folder, "paused"), os.path.join(self.folder, "go")
        fs.write_atomic(paused, b"", sync=False)
        try:
            while not os.path.exists(go):
                await asyncio.sleep(0.005)  # a cancel arrives here, as at any yield of the job
            fs.unlink(go)
        finally:
            fs.unlink(paused, missing_ok=True)


async def run_job(job: Generator[Any, None, Any], *, budget: float = SLICE_BUDGET,
                  lock: asyncio.Lock | None = None,
                  on_step: Callable[[Any], None] | None = None,
                  stats: SliceStats | None = None, gate: Gate | None = None) -> Any:
    """Drive `job` to its end and return its value. `on_step` sees every yielded value (progress).

    Cancelled (`$/cancelRequest`, a client gone) before the job yields a *binding* value (a
    transaction that has touched a workspace file), the job is closed: nothing changed. Cancelled
    after it, the job runs on, still in slices, and its outcome is the answer, as for a request
    that was never cancelled; a second cancel closes it, which finishes it at once."""
    stats = stats if stats is not None else SliceStats()
    prefer_the_loop()
    if not hasattr(job, "send"):
        # A feature may return a plain value instead of a generator (nothing to do).
        return job
    binding = told = False
    try:
        while True:
            if lock is not None:
                await lock.acquire()
            held = False
            try:
                start = time.monotonic()
                while True:
                    value = next(job)
                    stats.steps += 1
                    binding = binding or bool(getattr(value, "binding", False))
                    if on_step is not None:
                        on_step(value)
                    if gate is not None and gate.holds(stats.steps, value):
                        held = True
                        break
                    if time.monotonic() - start >= budget:
                        break
            finally:
                elapsed = (time.monotonic() - start) * 1000.0
                stats.slices += 1
                stats.max_slice_ms = max(stats.max_slice_ms, elapsed)
                if lock is not None:
                    lock.release()
            try:
                if held:
                    await gate.hold()
                await breathe()
            except asyncio.CancelledError:
                if not binding or told:
                    raise
                told = True  # past its point of no return: run on, and answer with the outcome
                task = asyncio.current_task()
                if task is not None and hasattr(task, "uncancel"):
                    task.uncancel()
    except StopIteration as done:
        if gate is not None and not gate.at_answer and stats.steps < gate.step:
            gate.ended(stats.steps)
        return done.value
    finally:
        # Cancellation ($/cancelRequest, a client gone, shutdown) reaches the job here, as
        # GeneratorExit at its yield: a commit that has touched a workspace file finishes inside
        # close() (travel/transaction.py), so nothing may skip this call.
        job.close()
