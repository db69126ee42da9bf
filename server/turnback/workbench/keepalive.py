"""Keeping the lease of a command-line job alive through one long step.

The command line runs a job to its end at once (`Workbench.run`) and renews the lease between its
steps. One step can still outlive the lease: a first checkpoint of 250,000 files on a loaded
machine (a pack's last block, its fsync on a shared disk) ran a step past 20 s, the lease (30 s)
expired, and minutes of work ended in `not-owner`. A watchdog thread renews the lease when the job
has not done so for half its life. The server needs none: its loop renews on a timer.

Architecture invariant: the watchdog never changes the workbench's state. A renewal it finds taken
(another process owns the store now) is only noted; the job's own thread renews next, gets the same
refusal, and turns the workbench into an observer the usual way.
"""

from __future__ import annotations

import threading
import time

from ..errors import NotOwner


class Keepalive:
    """`with Keepalive(owner, ttl) as keep:` around a job; `keep.renewed()` after each renewal the
    job makes itself; `keep.lost` once a renewal of the watchdog was refused."""

    def __init__(self, owner, ttl: float):
        self.owner = owner
        self.after = ttl / 2  # the job's own renewals come every third of it
        self.lost = False
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Keepalive":
        if self.owner is not None:
            self._thread = threading.Thread(target=self._watch, name="turnback-lease-keepalive",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def renewed(self) -> None:
        self._last = time.monotonic()

    def _watch(self) -> None:
        while not self._stop.wait(max(0.05, self.after - (time.monotonic() - self._last))):
            if time.monotonic() - self._last < self.after:
                continue  # the job renewed meanwhile
            try:
                self.owner.renew()  # the lease lock (flock) orders it with the job's publication
            except NotOwner:
                self.lost = True
                return
            except Exception:  # noqa: BLE001 - the job's own renewal will say what is wrong
                self._stop.wait(1.0)
                continue
            self._last = time.monotonic()
