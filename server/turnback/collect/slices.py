"""A collection's slices: the owner's loop runs it a few steps at a time and answers requests between.

The plan (`collect/plan.py`) and its execution (`collect/collector.py`) are both generators that
yield after every slice: a slice ends after `max_steps` steps or `SLICE_SECONDS`, whichever comes
first, and every slice's time (wall and the loop thread's CPU) is kept per phase in the stats, so a
test or `turnback bench` can see which phase held the loop. Blocking calls (an fsync, a pack's
making) run on a helper thread (`off_loop`) while the job goes on pausing.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generator, TypeVar, cast

MAX_STEPS = 8  # steps per slice: a step is one small file read, one retirement, one body, one batch
SLICE_SECONDS = 0.005  # half the loop's 10 ms: a request that lands mid-slice still answers in time

T = TypeVar("T")
Progress = dict[str, Any]  # what a pause yields: {phase, done, total}
Slices = Generator[Progress, None, T]  # a generator of slices whose value is a T


class CollectionStopped(BaseException):
    """A bounded collection (`collect/auto.py`) reached its deadline at a pause and stopped there.
    Not an Exception, as GeneratorExit is not: no handler of the collector's that records an error
    and goes on may take it for one; those that clean up (`except BaseException`) still do."""


def new_stats() -> dict[str, Any]:
    """A collection's figures, every one zero: the plan and the execution add to them."""
    return {"headsRetired": 0, "objectsDeleted": 0, "bytesFreed": 0, "bytesKept": 0,
            "slices": 0, "maxSliceMs": 0.0, "maxSliceSteps": 0, "headsKept": 0,
            "objectsKept": 0, "bodiesMarked": 0, "coldHeads": 0, "child": False,
            "observations": 0, "waits": 0, "cacheBytes": 0, "skipped": [],
            "packsWritten": 0, "packsDeleted": 0, "objectsPacked": 0, "deltas": 0,
            "packBytes": 0, "looseRemoved": 0, "headsPacked": 0,
            "slowestByPhase": {},  # phase -> its longest slice, ms: what holds the loop
            "slowestCpuByPhase": {}}  # phase -> most CPU one of its slices took, ms


class SlicedJob:
    """The slicing every phase of a collection shares; `stats` holds the figures of the run."""

    def __init__(self, *, max_steps: int = MAX_STEPS, deadline: float | None = None) -> None:
        """`deadline` (monotonic): stop (CollectionStopped) at the first pause past it, never
        while a helper thread works for the job."""
        self.max_steps = max(2, max_steps)
        self.deadline = deadline
        self.phase = "scan"
        self.progress: dict[str, int] = {"done": 0, "total": 0}
        self.stats = new_stats()
        self._in_thread = False
        self._slice_start = time.monotonic()
        self._slice_cpu = time.thread_time()
        self._slice_steps = 0

    def _open_slice(self) -> None:
        self._slice_start = time.monotonic()
        self._slice_cpu = time.thread_time()
        self._slice_steps = 0

    def _close_slice(self) -> None:
        ms = (time.monotonic() - self._slice_start) * 1000.0
        # The loop thread's own CPU in the slice: on a loaded machine the wall time of a slice is
        # mostly waiting for a core, and only this part is work the loop could have been spared.
        cpu = (time.thread_time() - self._slice_cpu) * 1000.0
        s = self.stats
        s["slices"] += 1
        s["maxSliceMs"] = max(s["maxSliceMs"], round(ms, 3))
        by_phase = s["slowestByPhase"]
        by_phase[self.phase] = max(by_phase.get(self.phase, 0.0), round(ms, 3))
        cpu_phase = s["slowestCpuByPhase"]
        cpu_phase[self.phase] = max(cpu_phase.get(self.phase, 0.0), round(cpu, 3))
        s["maxSliceSteps"] = max(s["maxSliceSteps"], self._slice_steps)

    def _tick(self, n: int = 1) -> bool:
        """Count work; True when the slice is spent (then the caller pauses)."""
        self._slice_steps += n
        return (self._slice_steps >= self.max_steps
                or time.monotonic() - self._slice_start >= SLICE_SECONDS)

    def _slice_spent(self) -> bool:
        return time.monotonic() - self._slice_start >= SLICE_SECONDS

    def _pause(self) -> Slices[None]:
        self._close_slice()
        if self.deadline is not None and not self._in_thread and time.monotonic() >= self.deadline:
            raise CollectionStopped()
        yield {"phase": self.phase, **self.progress}
        self._open_slice()

    def _fresh_slice(self, need: int) -> Slices[None]:
        """Pause first if `need` more steps would overrun this slice."""
        if self._slice_steps and self._slice_steps + need > self.max_steps:
            yield from self._pause()

    def _off_loop(self, fn: Callable[..., T], *args: Any) -> Slices[T]:
        """Run a blocking call (an fsync) in a thread, pausing between short waits; its error, if
        any, is raised here."""
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the job below
                box["error"] = exc

        worker = threading.Thread(target=run, name="turnback-collect-sync", daemon=True)
        worker.start()
        self._in_thread = True
        try:
            while True:
                worker.join(0.002)
                if not worker.is_alive():
                    break
                yield from self._pause()
        finally:
            self._in_thread = False
        if "error" in box:
            raise box["error"]
        return cast(T, box["value"])
