"""The disk images a plan's preparation hashed, reused by its commit while nothing touched them.

A confirmed rewind, Redo or restore derives its plan twice (prepare, then commit, which compares the
plan's hash) and then backs up every file it overwrites: without this memo each disk image was read
and hashed two or three times. An entry is trusted only while the file's stat identity is unchanged
(device, inode, size, mode, mtime and ctime: ctime cannot be set from user space, so a same-size
write with its mtime put back still differs) and the file was not racily clean when hashed (its
mtime or ctime within the margin before the clock reading taken before it was opened: a write in the
same timestamp tick as the one hashed could leave every field as it was; docs/capture.md's racy-git
note). Through an owner, a path the watcher saw an event for since is dropped too (`refresh`).
"""

from __future__ import annotations

import os
import time

# A file system with sub-10 ms timestamps (ext4, xfs, btrfs, tmpfs) stamps from a clock that lags
# by at most a tick: 100 ms covers it. Whole-10 ms timestamps (FAT, HFS+, old ext) get the sweep's 2 s.
FINE_MARGIN_NS = 100_000_000
COARSE_MARGIN_NS = 2_000_000_000
MAX_ENTRIES = 100_000  # a bound on what a plan keeps (about 25 MB): past it the memo starts again


def identity(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns)


def racy(st: os.stat_result, observed_ns: int) -> bool:
    """Changed too close to `observed_ns` for its stat to vouch for its bytes."""
    fine = st.st_ctime_ns % 10_000_000 or st.st_mtime_ns % 10_000_000
    margin = FINE_MARGIN_NS if fine else COARSE_MARGIN_NS
    return max(st.st_mtime_ns, st.st_ctime_ns) >= observed_ns - margin


class DiskMemo:
    """rel -> (stat identity, image) of files read and hashed whole, trusted as the module says."""

    def __init__(self, watcher=None):
        self.entries: dict[str, tuple[tuple, str]] = {}
        self.watcher = watcher  # a callable giving the live watcher, or None
        self.generation = 0
        self.hits = 0  # for tests and the bench: images reused instead of read

    @staticmethod
    def clock() -> int:
        """The reading to take before a file is opened (the racy reference)."""
        return time.time_ns()

    def lookup(self, rel: str, st: os.stat_result) -> str | None:
        e = self.entries.get(rel)
        if e is None or e[0] != identity(st):
            return None
        self.hits += 1
        return e[1]

    def record(self, rel: str, st: os.stat_result, image: str, observed_ns: int) -> None:
        if racy(st, observed_ns):
            self.entries.pop(rel, None)
            return
        if len(self.entries) >= MAX_ENTRIES:
            self.entries.clear()
        self.entries[rel] = (identity(st), image)

    def refresh(self) -> None:
        """Before a plan is derived or committed: forget the paths the watcher saw change since the
        last refresh (all of them when it cannot say which)."""
        watcher = self.watcher() if self.watcher is not None else None
        if watcher is None:
            return
        changed, self.generation = watcher.changed_after(self.generation)
        if changed is None:
            self.entries.clear()
        else:
            for rel in changed:
                self.entries.pop(rel, None)

    def clear(self) -> None:
        self.entries.clear()
