"""The PID lock: ownership of a plain file store by one live process on this machine.

A lock from another machine is never judged stale automatically (its processes cannot be seen);
`takeover(confirm=True)` takes the store from it explicitly.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from ...errors import CorruptStore, NotOwner
from ..records import write_record
from .holder import (PID_FILE, PID_LOCK, _Anchored, _locked, _other_machine_data, _owner, _read,
                     _release, _unreachable)
from .host import _earlier_boot, _host, _identity, _own_start_time, process_alive, same_machine


class PidLock(_Anchored):
    """Ownership of a plain file store by one live process."""

    kind = "pid"

    def __init__(self, store_dir: str | os.PathLike, owner_id: str, epoch: int):
        self.store_dir = Path(store_dir)
        self.owner_id = owner_id
        self.epoch = epoch
        self.pid = os.getpid()
        self.host = _host()
        self.create_time = _own_start_time()
        self._anchor_store()

    @property
    def path(self) -> Path:
        return self.store_dir / PID_FILE

    @classmethod
    def acquire(cls, store_dir: str | os.PathLike, *, owner_id: str | None = None,
                force: bool = False) -> "PidLock":
        """Take the lock; NotOwner while a live process holds it. A lock from another machine is
        never judged stale automatically (its processes cannot be seen); `force` overrides that
        (an explicit, confirmed takeover only)."""
        store_dir = Path(store_dir)
        owner_id = owner_id or uuid.uuid4().hex
        with _locked(store_dir / PID_LOCK):
            try:
                rec = _read(store_dir / PID_FILE, "pidlock")
            except CorruptStore:
                rec = None
            if rec and not force and rec.get("id") != owner_id and _pid_held(rec):
                raise NotOwner(
                    f"the store is locked by process {rec.get('pid')} on {rec.get('host')}",
                    data={"owner": _owner(rec), "epoch": rec.get("epoch"), **_other_machine_data(rec)})
            lock = cls(store_dir, owner_id, (int(rec.get("epoch", 0)) if rec else 0) + 1)
            lock._write()
            return lock

    def _write(self, *, released: bool = False) -> None:
        write_record(self.path, "pidlock", {
            "id": self.owner_id, "pid": self.pid, **_identity(), "host": self.host,
            "create_time": self.create_time, "epoch": self.epoch, "released": released})

    @contextlib.contextmanager
    def fenced(self) -> Iterator[None]:
        """Hold the lock file's flock while checking and publishing (see Lease.fenced)."""
        self._check_anchors()
        with _locked(self.store_dir / PID_LOCK):
            self.check()
            yield

    def check(self) -> None:
        self._check_anchors()
        try:
            rec = _read(self.path, "pidlock")
        except CorruptStore:
            rec = None
        except OSError as exc:
            raise _unreachable(self, exc) from None
        if rec is None or rec.get("id") != self.owner_id or rec.get("epoch") != self.epoch \
                or rec.get("released"):
            raise NotOwner("this process no longer owns the store",
                           data={"owner": _owner(rec) if rec else None, "epoch": self.epoch})

    def renew(self) -> None:
        """Nothing to extend for a PID lock; kept so both kinds share one interface."""
        self.check()

    def release(self) -> None:
        _release(self, PID_LOCK, "pidlock")

    def owner_info(self) -> dict:
        return {"id": self.owner_id, "pid": self.pid, "host": self.host, "epoch": self.epoch,
                "create_time": self.create_time, "kind": "pid"}


def _pid_held(rec: dict) -> bool:
    if rec.get("released"):
        return False
    if not same_machine(rec):
        return True
    if _earlier_boot(rec):
        return False
    return process_alive(int(rec.get("pid", -1)), float(rec.get("create_time", 0.0)))
