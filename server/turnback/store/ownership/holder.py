"""What a lease and a PID lock share: their records, the flock that serialises changing them, the
folders they anchor, and what a refusal says.

Read-modify-write of an ownership record is serialised across processes by `fcntl.flock` on a
separate lock file (the record itself is replaced by rename, so its inode changes and cannot carry a
lock). Readers never take the lock: records are replaced atomically, so a read sees the old or the new.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ...errors import CorruptStore, NotOwner
from .. import fs
from ..fs import anchored
from ..records import decode_record, read_record
from . import locks
from .host import _earlier_boot, process_alive, same_machine

LEASE_FILE, LEASE_LOCK = "lease.cbor", "lease.lock"
PID_FILE, PID_LOCK = "pid.lock", "pid.flock"
LOCK_SECONDS = 10.0  # the record's flock is held for milliseconds; a holder this long is stopped


Clock = Callable[[], float]


class StoreMoved(NotOwner):
    """A folder this owner opened is no longer at its path (renamed, replaced or removed)."""

    code = "workspace-moved"


def identity(path: str | os.PathLike) -> tuple[int, int] | None:
    """The (st_dev, st_ino) of a folder, or None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class _Anchored:
    """What every holder shares: the identities of the folders it opened, checked before writing."""

    store_dir: Path
    anchors: dict

    def _anchor_store(self) -> None:
        self.anchors = {}
        found = identity(self.store_dir)
        if found is not None:
            self.anchors[str(self.store_dir)] = found

    def anchor(self, path: str | os.PathLike) -> None:
        """Remember the folder at `path` (the workspace root): if it stops being there, so does
        this ownership."""
        found = identity(path)
        if found is not None:
            self.anchors[str(path)] = found

    def moved(self) -> str | None:
        """The first anchored folder whose path no longer names it, or None."""
        for path, ident in self.anchors.items():
            if identity(path) != ident:
                return path
        return None

    def _check_anchors(self) -> None:
        path = self.moved()
        if path is not None:
            raise StoreMoved(f"this process no longer owns the store it opened: {path} was renamed, "
                             "replaced or removed under it", data={"path": path, "owner": None,
                                                                   "reason": "moved"})

@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    fd = fs.open_for_append(lock_path)
    try:
        locks.acquire(fd, LOCK_SECONDS, what=f"ownership lock {lock_path}")
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _read(path: Path, kind: str) -> dict | None:
    """The ownership record, or None if missing. A damaged record counts as missing for takeover
    purposes only under the lock (see callers); it is never silently trusted."""
    return read_record(path, kind, missing_ok=True)


RACY_SECONDS = 0.05  # a record modified this close to its read may change again unseen by stat


def _stat_key(path: Path) -> tuple | None:
    """What identifies one version of a record file, without following a link; None if absent."""
    try:
        with anchored.at(path) as (at, name):
            st = os.stat(name, dir_fd=at, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return _key_of(st)


def _key_of(st: os.stat_result) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _read_with_key(path: Path) -> tuple[tuple | None, dict | None]:
    """The lease record, and the stat key under which a later check may trust it unread. Records
    are replaced whole (temp and rename: a new inode); the key is None (always read again) when
    the file changed within RACY_SECONDS of this read, as git does for its index: the kernel's
    timestamps are coarse, and a write in the same tick would leave the stat as it was."""
    try:
        data, st = fs.read_file_and_stat(path)
    except FileNotFoundError:
        return None, None
    rec = decode_record(data, path=str(path), kind="lease")
    fresh_since = time.time_ns() - int(RACY_SECONDS * 1e9)
    racy = max(st.st_mtime_ns, st.st_ctime_ns) >= fresh_since
    key = None if racy else _key_of(st)
    return key, rec


def _owner(rec: dict) -> dict:
    return {"id": rec.get("id"), "pid": rec.get("pid"), "host": rec.get("host")}


def _other_machine_data(rec: dict) -> dict:
    """What a refusal says about a holder on another machine: takeover must be explicit."""
    if same_machine(rec):
        return {}
    return {"otherMachine": True, "machine": rec.get("machine"),
            "takeover": "turnback takeover (or turnback/ownership/takeover with confirm: true)"}

def _unreachable(holder, exc: OSError) -> NotOwner:
    """The ownership record cannot be reached without following a link (the store was moved away
    and linked back, say): the store at this path is not the one we own, so we stop writing."""
    return NotOwner(f"this process no longer owns the store at {holder.store_dir}: its ownership "
                    f"record cannot be reached safely ({exc.strerror or exc})",
                    data={"owner": None, "epoch": holder.epoch, "path": str(holder.store_dir)})


def _release(holder, lock_name: str, kind: str) -> None:
    """Mark the record released, if it is still this holder's (same id and epoch); else leave it.
    A store no longer at its path is left alone (the record there is another store's)."""
    if holder.moved() is not None:
        return
    with _locked(holder.store_dir / lock_name):
        try:
            rec = _read(holder.path, kind)
        except CorruptStore:
            return
        if rec and rec.get("id") == holder.owner_id and rec.get("epoch") == holder.epoch \
                and not rec.get("released"):
            holder._write(released=True)

def _holder_gone(rec: dict) -> bool:
    """A lease whose holder ran on this host and provably no longer runs (pid and start time) holds
    nothing: waiting out its expiry would only lock the user out after a crash. The takeover still
    bumps the epoch, so nothing the dead holder left half-written can be published later."""
    started = rec.get("started")
    if not same_machine(rec):
        return False
    if _earlier_boot(rec):
        return True
    if not isinstance(started, (int, float)):
        return False
    pid = rec.get("pid")
    return isinstance(pid, int) and not process_alive(pid, started)


def _epoch_floor(store_dir: Path) -> int:
    """After a damaged lease record, never reuse an epoch already stamped into a published head."""
    from ..heads import HeadStore  # local: heads does not depend on ownership

    heads = HeadStore(store_dir / "heads")
    floor = 0
    for seq in heads.loose_seqs()[-16:]:
        try:
            floor = max(floor, heads.read(seq).epoch)
        except CorruptStore:
            continue
    return floor
