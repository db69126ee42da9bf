"""File locks with a budget: every `flock` turnback waits on gives up in bounded time.

A process that holds a lock and is stopped (SIGSTOP, a suspended terminal) or wedged would otherwise
hold every waiter with it: a hook's agent, a stopping owner. So a waiter polls a non-blocking `flock`
and raises `lock-timeout` once its budget is spent, or at once when `stop()` says its process is
shutting down. Polling loses the kernel's queueing, which `flock` never promised anyway.

Standard library only (the hook's process uses it).
"""

from __future__ import annotations

import fcntl
import time

FIRST_WAIT = 0.002  # seconds; doubled up to MAX_WAIT while the lock stays held
MAX_WAIT = 0.05
NOTE_AFTER = 0.2  # a wait this long is worth a line in a log (`on_wait`); shorter ones are routine


def acquire(fd: int, budget: float, *, what: str, on_wait=None, stop=None) -> None:
    """Take an exclusive flock on `fd` within `budget` seconds, or raise LockTimeout. `on_wait` is
    called once if the wait passes NOTE_AFTER (to log who waits); `stop()` true ends the wait."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    start = time.monotonic()
    deadline = start + budget
    pause = FIRST_WAIT
    while True:
        now = time.monotonic()
        if on_wait is not None and now - start >= NOTE_AFTER:
            on_wait, note = None, on_wait
            note()
        left = deadline - now
        if left <= 0 or (stop is not None and stop()):
            from ...errors import LockTimeout

            why = "the process is stopping" if stop is not None and stop() else \
                f"another process held it for {budget:g} s"
            raise LockTimeout(f"could not take the {what}: {why}", data={"lock": what})
        time.sleep(min(pause, left))
        pause = min(pause * 2, MAX_WAIT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
