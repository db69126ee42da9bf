"""Fault plans: a layer over the file-system seam that fails, fills or crashes at one operation.

Each mutating operation of the seam is numbered from 1 when the plan is installed
(`store/fs/layer.py` names them). A plan raises `FaultInjected` (or exits the process with
CRASH_EXIT) *before* the operation numbered `fail_at` (or `crash_at`) runs.

Fault models (all in `FaultPlan`, so every loop uses the same seam):
- fail at operation N (`fail_at`), or from N on (`sticky`, like a device that went away);
- a full disk (`disk_full_at`): from operation N on, creates, writes, fsyncs, mkdirs and links fail
  with ENOSPC while unlinks, renames and rmdirs still succeed, as on a real full file system;
- a crash at operation N (`crash_at`): the process exits with CRASH_EXIT. Plain, that is process
  death (unsynced data survives in the page cache); with `lose_unsynced` it is a power cut: every
  write not followed by an fsync of its file and every name change not followed by an fsync of its
  folder is undone first (`crashfs.py`), so ordering is proven against power loss too.
"""

from __future__ import annotations

import errno as _errno
import os
import threading
from collections.abc import Mapping

CRASH_EXIT = 86

# What a full disk refuses; unlink, rename and rmdir free or keep space and still succeed.
SPACE_OPS = frozenset({"create", "write", "fsync", "fsync_dir", "mkdir", "link", "symlink",
                       "truncate", "chmod", "utime", "syncfs"})


class FaultInjected(OSError):
    """Raised by a fault plan in place of a real I/O error."""


class FaultPlan:
    """Fail (raise) or crash (exit) at one numbered mutating operation; see the module doc.

    With `sticky=True` every operation from `fail_at` on fails. `faulted` counts the operations the
    plan actually failed (a loop that faulted nothing proves nothing)."""

    def __init__(self, fail_at: int | None = None, crash_at: int | None = None,
                 errno: int = _errno.EIO, *, sticky: bool = False, disk_full_at: int | None = None,
                 lose_unsynced: bool = False):
        self.fail_at = fail_at
        self.crash_at = crash_at
        self.errno = errno
        self.sticky = sticky
        self.disk_full_at = disk_full_at
        self.count = 0
        self.faulted = 0
        self._lock = threading.Lock()
        self.log: list[str] = []
        self.unsynced = None
        if lose_unsynced:
            from .crashfs import UnsyncedJournal
            self.unsynced = UnsyncedJournal()

    def tick(self, op: str, path: object, src: object = None) -> None:
        # One at a time: helper threads (readers, the pack's writer) do file-system work too, and
        # each operation must get its own number.
        with self._lock:
            self.count += 1
            self.log.append(f"{op} {path}")
            n = self.count
            if self.crash_at is not None and n == self.crash_at:
                self.crash()
            at = self.fail_at
            if at is not None and (n == at or (self.sticky and n > at)):
                self.faulted += 1
                raise FaultInjected(self.errno, f"injected fault at operation {n} ({op})",
                                    str(path))
            if self.disk_full_at is not None and n >= self.disk_full_at and op in SPACE_OPS:
                self.faulted += 1
                raise FaultInjected(_errno.ENOSPC, f"injected full disk at operation {n} ({op})",
                                    str(path))
            if self.unsynced is not None:
                self.unsynced.before(op, path, src)

    def crash(self) -> None:
        """Stop here, as a power cut would (with `lose_unsynced`) or as a killed process."""
        if self.unsynced is not None:
            self.unsynced.lose_unsynced()
        # Flush nothing, run no handlers: as close to a power cut as a process can get.
        os._exit(CRASH_EXIT)



def plan_from_env(env: Mapping[str, str]) -> FaultPlan | None:
    """The plan TURNBACK_CRASH_AT=N / TURNBACK_FAIL_AT=N / TURNBACK_DISK_FULL_AT=N (and
    TURNBACK_FAULT_STICKY=1, TURNBACK_CRASH_MODEL=lose-unsynced) ask for, if any: how a test faults a
    subprocess. Imports nothing of the seam: the seam's hook loads this (`store/fs/layer.py`)."""
    crash = env.get("TURNBACK_CRASH_AT")
    fail = env.get("TURNBACK_FAIL_AT")
    full = env.get("TURNBACK_DISK_FULL_AT")
    if not crash and not fail and not full:
        return None
    return FaultPlan(fail_at=int(fail) if fail else None, crash_at=int(crash) if crash else None,
                     sticky=env.get("TURNBACK_FAULT_STICKY") == "1",
                     disk_full_at=int(full) if full else None,
                     lose_unsynced=env.get("TURNBACK_CRASH_MODEL") == "lose-unsynced")
