"""Naming what holds the loop: `TURNBACK_LOOP_TRACE=MS` makes a serving process log the loop
thread's stack whenever the loop has not run for MS milliseconds (once per hold, with how long it
lasted), to its log or, with `TURNBACK_LOOP_TRACE_FILE=PATH`, appended to that file (a bench's
server has no stderr). A diagnostic for the `responsiveness` scenario's outliers, off by default: the
loop touches a timestamp every 5 ms, and a daemon thread looks at it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import traceback

log = logging.getLogger("turnback.stalls")
BEAT = 0.005


_running: "StallTracer | None" = None


def start_from_env(loop: asyncio.AbstractEventLoop) -> "StallTracer | None":
    """The tracer `TURNBACK_LOOP_TRACE` asks for, started once per loop (a server that becomes the
    owner again calls this again)."""
    global _running
    if _running is not None and _running.loop is loop and not _running.stop.is_set():
        return _running
    try:
        ms = float(os.environ.get("TURNBACK_LOOP_TRACE") or 0)
    except ValueError:
        return None
    if ms <= 0:
        return None
    path = os.environ.get("TURNBACK_LOOP_TRACE_FILE")
    if path and not any(isinstance(h, logging.FileHandler) for h in log.handlers):
        log.addHandler(logging.FileHandler(path))
    _running = StallTracer(loop, ms / 1000.0)
    _running.start()
    return _running


class StallTracer:
    def __init__(self, loop: asyncio.AbstractEventLoop, threshold: float):
        self.loop, self.threshold = loop, threshold
        self.last = time.monotonic()
        # (made on the loop's thread: a first hold is measured from here, not the thread's start)
        self.cpu_last, self.proc_last = time.thread_time(), time.process_time()
        # The last hold as the beat that ended it measured it: (began, ended, thread CPU, process CPU)
        self.ended: tuple[float, float, float, float] | None = None
        self.loop_thread = threading.get_ident()
        self.stop = threading.Event()
        self.cpu_clock: int | None
        try:  # the loop thread's own CPU clock: a hold that is waiting (a core, a lock, the disk)
            self.cpu_clock = time.pthread_getcpuclockid(self.loop_thread)  # differs from work
        except (AttributeError, OSError):
            self.cpu_clock = None

    def _cpu(self) -> float:
        return time.clock_gettime(self.cpu_clock) if self.cpu_clock is not None else 0.0

    def start(self) -> None:
        self.loop.call_soon(self._beat)
        threading.Thread(target=self._watch, name="turnback-stall-tracer", daemon=True).start()

    def _beat(self) -> None:
        now, cpu, proc = time.monotonic(), time.thread_time(), time.process_time()
        if now - self.last >= self.threshold:
            # The hold's own CPU, read on the loop's thread as it ends: the watcher reports later
            # (it waits for the GIL), when the loop may be in its next slice already.
            self.ended = (self.last, now, cpu - self.cpu_last, proc - self.proc_last)
        self.cpu_last, self.proc_last = cpu, proc
        self.last = now
        if not self.stop.is_set():
            self.loop.call_later(BEAT, self._beat)

    def _watch(self) -> None:
        since = None  # the beat a reported hold began after
        cpu_at = proc_at = 0.0
        samples: list[str] = []
        while not self.stop.wait(self.threshold / 4):
            last = self.last
            held = time.monotonic() - last
            if held >= self.threshold and since != last:  # a new hold: its stack, while held
                since = last
                cpu_at, proc_at = self.cpu_last, self.proc_last
                frame = sys._current_frames().get(self.loop_thread)
                stack = "".join(traceback.format_stack(frame)) if frame is not None else "?"
                log.warning("the loop has been held %.0f ms so far, at:\n%s", held * 1000, stack)
                samples = [_where(frame)]
                others: dict[str, int] = {}
            elif since is not None and since == last:  # still held: where it is now
                frames = sys._current_frames()
                samples.append(_where(frames.get(self.loop_thread)))
                for where, n in _others(frames, self.loop_thread).items():
                    others[where] = others.get(where, 0) + n
            elif since is not None:
                counted: dict[str, int] = {}
                for where in samples:
                    counted[where] = counted.get(where, 0) + 1
                ended = self.ended
                if ended is not None and ended[0] == since:  # measured by the beat that ended it
                    wall, cpu, proc = ended[1] - ended[0], ended[2], ended[3]
                else:
                    wall, cpu = last - since, max(0.0, self._cpu() - cpu_at)
                    proc = max(0.0, time.process_time() - proc_at)
                log.warning("the loop was held about %.0f ms in all (CPU: its thread's %.0f ms, the"
                            " process's %.0f ms); sampled every %.0f ms at: %s",
                            wall * 1000, cpu * 1000, proc * 1000, self.threshold / 4 * 1000,
                            "; ".join(f"{n}x {w}" for w, n in counted.items()))
                if others:
                    log.warning("  other threads meanwhile: %s",
                                "; ".join(f"{n}x {w}" for w, n in others.items()))
                since = None


def _where(frame) -> str:
    """The innermost three frames of ours (turnback's), innermost first."""
    out: list[str] = []
    while frame is not None and len(out) < 3:
        name = frame.f_code.co_filename
        if "turnback" in name:
            out.append(f"{name.rsplit('turnback/', 1)[-1]}:{frame.f_lineno}:{frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(out) or "?"


def _others(frames: dict, loop_thread: int) -> dict[str, int]:
    """Where the other threads with a frame of ours are (one of them may hold the interpreter)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    out: dict[str, int] = {}
    for ident, frame in frames.items():
        if ident == loop_thread or ident == threading.get_ident():
            continue
        where = _where(frame)
        if where != "?":
            key = f"[{names.get(ident, ident)}] {where}"
            out[key] = out.get(key, 0) + 1
    return out
