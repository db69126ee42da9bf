"""Progress of a long job on the command line: `turnback turn begin` in a workspace of 250,000 files
reads them all once, for a minute on a slow disk; a person at a terminal sees how far it got.

Only on a terminal (stderr is a TTY), only after the job has run for a second, at most twice a
second, on one line that is cleared at the end; a hook or a script sees nothing. The server reports
the same values as `$/progress` (lsp/progress.py)."""

from __future__ import annotations

import sys
import time

FIRST_AFTER = 1.0
EVERY = 0.5


def shown(job, stream=None):
    """`job`, passing every value through, with a progress line on `stream` (stderr) if a TTY."""
    stream = stream or sys.stderr
    if not hasattr(job, "send") or not getattr(stream, "isatty", lambda: False)():
        return (yield from job) if hasattr(job, "send") else job
    start = time.monotonic()
    last = start + FIRST_AFTER - EVERY
    printed = False
    try:
        while True:
            try:
                value = next(job)
            except StopIteration as done:
                return done.value
            now = time.monotonic()
            walked, hashed = getattr(value, "walked", None), getattr(value, "hashed", None)
            if walked is not None and now - last >= EVERY and now - start >= FIRST_AFTER:
                last = now
                stream.write(f"\rturnback: {walked:,} files looked at, {hashed:,} read")
                stream.flush()
                printed = True
            yield value
    finally:
        if printed:
            stream.write("\r\033[K")
            stream.flush()
        job.close()
