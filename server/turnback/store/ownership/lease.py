"""The lease: a time-limited claim on a heads store, renewed on a timer, checked before every mutation.

The epoch only grows. Every acquisition bumps it, and writers stamp it into what they publish, so a
stale writer is fenced out by `check()` and is recognisable on disk. The epoch is also enforced:
`fenced()` holds the record's flock while it re-checks ownership and the caller publishes, so a
takeover (which bumps the epoch under that lock) falls wholly before or wholly after a publication;
an owner that stalled past its expiry and resumes after a takeover is refused instead of publishing
at its old epoch.

Lease expiry compares wall-clock times written by different processes: hosts sharing a store must
agree on the time within a small fraction of the TTL. The clock is injectable (`clock=`), so tests move
time instead of sleeping.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from ...errors import CorruptStore, NotOwner
from ..records import write_record
from .holder import (LEASE_FILE, LEASE_LOCK, Clock, _Anchored, _epoch_floor, _holder_gone, _locked,
                     _other_machine_data, _owner, _read, _read_with_key, _release, _stat_key,
                     _unreachable)
from .host import _host, _identity, _own_start_time


class Lease(_Anchored):
    """A time-limited claim on a heads store. Renew it on a timer, check it before every mutation."""

    kind = "heads"

    def __init__(self, store_dir: str | os.PathLike, owner_id: str, ttl: float, epoch: int, expires: float,
                 clock: Clock = time.time):
        self.store_dir = Path(store_dir)
        self.owner_id = owner_id
        self.ttl = ttl
        self.epoch = epoch
        self.expires = expires
        self.clock = clock
        self.pid = os.getpid()
        self.host = _host()
        # The record the last check read, by its stat, and what it said (ours, at that moment).
        self._seen: tuple[tuple | None, dict | None] = (None, None)
        self._anchor_store()

    @property
    def path(self) -> Path:
        return self.store_dir / LEASE_FILE

    @classmethod
    def acquire(cls, store_dir: str | os.PathLike, *, ttl: float = 30.0,
                owner_id: str | None = None, clock: Clock = time.time,
                force: bool = False) -> "Lease":
        """Take the lease, bumping the epoch; NotOwner if someone else holds it unexpired.

        `force` takes it from a live holder too (an explicit, confirmed takeover only)."""
        store_dir = Path(store_dir)
        owner_id = owner_id or uuid.uuid4().hex
        with _locked(store_dir / LEASE_LOCK):
            try:
                rec = _read(store_dir / LEASE_FILE, "lease")
            except CorruptStore:
                rec = None  # a damaged lease proves no one's claim; the epoch floor below still holds
                epoch_floor = _epoch_floor(store_dir)
            else:
                epoch_floor = 0
            now = clock()
            if rec and not force and not rec.get("released") and rec.get("expires", 0) > now \
                    and rec.get("id") != owner_id and not _holder_gone(rec):
                raise NotOwner(
                    f"the store is leased by process {rec.get('pid')} on {rec.get('host')} "
                    f"until {time.ctime(rec['expires'])}",
                    data={"owner": _owner(rec), "expires": rec["expires"], "epoch": rec.get("epoch"),
                          **_other_machine_data(rec)})
            epoch = max(int(rec.get("epoch", 0)) if rec else 0, epoch_floor) + 1
            lease = cls(store_dir, owner_id, ttl, epoch, now + ttl, clock)
            lease._write()
            return lease

    def _write(self, *, released: bool = False) -> None:
        write_record(self.path, "lease", {
            "id": self.owner_id, **_identity(), "pid": self.pid, "epoch": self.epoch,
            "started": _own_start_time(),
            "expires": 0.0 if released else self.expires, "ttl": self.ttl, "released": released})

    def _refuse(self, rec: dict | None, why: str) -> NotOwner:
        return NotOwner(f"this process no longer owns the store: {why}",
                        data={"owner": _owner(rec) if rec else None, "epoch": self.epoch,
                              "current_epoch": rec.get("epoch") if rec else None})

    def _still_ours(self, rec: dict | None) -> None:
        if rec is None:
            raise self._refuse(rec, "the lease record is gone")
        if rec.get("id") != self.owner_id or rec.get("epoch") != self.epoch:
            raise self._refuse(rec, f"taken over at epoch {rec.get('epoch')}")
        if rec.get("released"):
            raise self._refuse(rec, "the lease was released")

    def check(self) -> None:
        """Cheap fencing check before a mutation: NotOwner if the record is not ours now. The
        record is read again unless it is provably the one the last check read and found ours
        (`_read_with_key`): a stat instead of an open, a read and a decode, on every request."""
        self._check_anchors()
        try:
            key = _stat_key(self.path)
            seen_key, seen_rec = self._seen  # one tuple: a watchdog thread may check at once
            if key is not None and key == seen_key:
                rec = seen_rec
            else:
                key, rec = _read_with_key(self.path)
        except CorruptStore:
            key, rec = None, None
        except OSError as exc:
            raise _unreachable(self, exc) from None
        self._seen = (None, None)
        self._still_ours(rec)
        assert rec is not None  # _still_ours refuses none
        if rec["expires"] <= self.clock():
            raise self._refuse(rec, "the lease expired")
        self._seen = (key, rec)

    @contextlib.contextmanager
    def fenced(self) -> Iterator[None]:
        """Hold the lease lock, check the lease, and let the caller publish inside the block: no
        takeover can fall between the check and the write (a takeover needs the same lock)."""
        self._check_anchors()  # before the lock file is opened (created) by path
        with _locked(self.store_dir / LEASE_LOCK):
            self.check()
            yield

    def renew(self) -> None:
        """Extend the expiry. Works after a lapse only if no one took the lease meanwhile."""
        self._check_anchors()
        with _locked(self.store_dir / LEASE_LOCK):
            try:
                rec = _read(self.path, "lease")
            except CorruptStore:
                rec = None
            self._still_ours(rec)
            self.expires = self.clock() + self.ttl
            self._write()

    def release(self) -> None:
        """Give the lease up (the epoch stays, so the next owner still counts up from it)."""
        _release(self, LEASE_LOCK, "lease")

    def owner_info(self) -> dict:
        return {"id": self.owner_id, "pid": self.pid, "host": self.host, "epoch": self.epoch,
                "expires": self.expires, "kind": "lease"}
