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
        self.loop_thread = threading.get_ident()
        self.stop = threading.Event()

    def start(self) -> None:
        self.loop.call_soon(self._beat)
        threading.Thread(target=self._watch, name="turnback-stall-tracer", daemon=True).start()

    def _beat(self) -> None:
        self.last = time.monotonic()
        if not self.stop.is_set():
            self.loop.call_later(BEAT, self._beat)

    def _watch(self) -> None:
        since = None  # the beat a reported hold began after
        while not self.stop.wait(self.threshold / 4):
            last = self.last
            held = time.monotonic() - last
            if held >= self.threshold and since != last:  # a new hold: its stack, while held
                since = last
                frame = sys._current_frames().get(self.loop_thread)
                stack = "".join(traceback.format_stack(frame)) if frame is not None else "?"
                log.warning("the loop has been held %.0f ms so far, at:\n%s", held * 1000, stack)
            elif since is not None and since != last:
                log.warning("the loop was held about %.0f ms in all", (last - since) * 1000)
                since = None
