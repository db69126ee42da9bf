"""Who owns a store, and taking it: the entry points the workbench, the faces and the hooks call.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ...errors import CorruptStore, InvalidParams
from .holder import LEASE_FILE, PID_FILE, Clock, _holder_gone, _owner, _read
from .host import same_machine
from .lease import Lease
from .pidlock import PidLock, _pid_held


def relocated(holder: Lease | PidLock, store_dir: str | os.PathLike) -> Lease | PidLock:
    """The same ownership (id, epoch) of the same store found at another path: to release it there
    after the folders it was opened in were renamed."""
    if isinstance(holder, Lease):
        return Lease(store_dir, holder.owner_id, holder.ttl, holder.epoch, holder.expires, holder.clock)
    moved = PidLock(store_dir, holder.owner_id, holder.epoch)
    moved.create_time = holder.create_time
    return moved


def open_ownership(store_dir: str | os.PathLike, kind: str, **kwargs) -> Lease | PidLock:
    """Acquire the right ownership for a store kind ("heads" -> Lease, "pid" -> PidLock)."""
    if kind == "heads":
        return Lease.acquire(store_dir, **kwargs)
    if kind == "pid":
        return PidLock.acquire(store_dir, **kwargs)
    raise InvalidParams(f"unknown store kind {kind!r}")


def who_owns(store_dir: str | os.PathLike, kind: str, *, clock: Clock = time.time) -> dict | None:
    """Read-only probe: the current owner's {id, pid, host, epoch, ...}, or None if free."""
    store_dir = Path(store_dir)
    try:
        if kind == "heads":
            rec = _read(store_dir / LEASE_FILE, "lease")
            held = rec is not None and bool(rec) and not rec.get("released") \
                and rec.get("expires", 0) > clock()
        elif kind == "pid":
            rec = _read(store_dir / PID_FILE, "pidlock")
            held = rec is not None and bool(rec) and _pid_held(rec)
        else:
            raise InvalidParams(f"unknown store kind {kind!r}")
    except CorruptStore:
        return None
    if not held or rec is None:
        return None
    return {**_owner(rec), "epoch": rec.get("epoch"), "expires": rec.get("expires"), "kind": kind,
            "machine": rec.get("machine"), "sameMachine": same_machine(rec)}


def last_owner(store_dir: str | os.PathLike, kind: str) -> dict | None:
    """Read-only: who last held the store, held or not, and whether that process still runs
    (`alive`: True, False when it provably exited on this machine, None when it cannot be told: a
    holder on another machine). None when there is no readable record or it was released."""
    store_dir = Path(store_dir)
    try:
        rec = _read(store_dir / (LEASE_FILE if kind == "heads" else PID_FILE),
                    "lease" if kind == "heads" else "pidlock")
    except CorruptStore:
        return None
    if not rec or rec.get("released"):
        return None
    if kind == "heads":
        alive = None if not same_machine(rec) else not _holder_gone(rec)
    else:
        alive = None if not same_machine(rec) else _pid_held(rec)
    return {**_owner(rec), "alive": alive}


def takeover(store_dir: str | os.PathLike, kind: str, *, confirm: bool, **kwargs) -> Lease | PidLock:
    """Take the store from whoever holds it, live or not, on this machine or another: only with
    `confirm=True` (the user said yes to a prompt naming the holder). The epoch grows, so anything
    the old holder publishes afterwards is refused (see `fenced`)."""
    if confirm is not True:
        raise InvalidParams("a takeover must be confirmed (confirm: true)", data={"field": "confirm"})
    return open_ownership(store_dir, kind, force=True, **kwargs)
