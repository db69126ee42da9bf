"""Who may write a store: a lease (stores with heads) or a PID lock (plain file stores).

Read-modify-write of an ownership record is serialised across processes by `fcntl.flock` on a
separate lock file (the record itself is replaced by rename, so its inode changes and cannot carry a
lock). Readers never take the lock: records are replaced atomically, so a read sees the old or the new.

The epoch only grows. Every acquisition bumps it, and writers stamp it into what they publish, so a
stale writer is fenced out by `check()` and is recognisable on disk.

The epoch is also enforced: `fenced()` holds the same flock while it re-checks ownership and the
caller publishes, so a takeover (which bumps the epoch under that lock) falls wholly before or wholly
after a publication; an owner that stalled past its expiry and resumes after a takeover is refused
instead of publishing at its old epoch.

Lease expiry compares wall-clock times written by different processes: hosts sharing a store must
agree on the time within a small fraction of the TTL. The clock is injectable (`clock=`), so tests move
time instead of sleeping. flock over network file systems is only as good as the server's lock support.

An owner also notices when the folders it opened are no longer at their paths (a workspace renamed or
replaced under it): a holder remembers the identity (`st_dev`, `st_ino`) of its store folder, and of
any folder it `anchor`s (the workspace root), and every check, renewal and release compares them
first. A changed identity raises `StoreMoved` before anything is written by path, so the new store
made at the old path is never touched.

A machine is identified by its machine id (`/etc/machine-id`) beside the host name, and a boot by the
boot id: a renamed host still recognises its own processes, and a record from an earlier boot of the
same machine is provably stale. A holder on another machine is never judged gone automatically;
`takeover(confirm=True)` takes the store from it explicitly.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import CorruptStore, InvalidParams, NotOwner
from .fs import anchored
from . import fs, locks
from .records import decode_record, read_record, write_record

LEASE_FILE, LEASE_LOCK = "lease.cbor", "lease.lock"
PID_FILE, PID_LOCK = "pid.lock", "pid.flock"
CREATE_TIME_SLACK = 0.5  # seconds; psutil derives start times from boot time plus ticks
LOCK_SECONDS = 10.0  # the record's flock is held for milliseconds; a holder this long is stopped


Clock = Callable[[], float]


def _host() -> str:
    return socket.gethostname()


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


def _read_id(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            text = fh.read(256).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text or None


_MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
_BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


def machine_id() -> str | None:
    """A stable id of this machine that survives a change of host name (None if none is readable)."""
    for path in _MACHINE_ID_FILES:
        found = _read_id(path)
        if found:
            return found
    return None


def boot_id() -> str | None:
    """The id of this boot of the machine (Linux); None elsewhere."""
    return _read_id(_BOOT_ID_FILE)


def _identity() -> dict:
    return {"host": _host(), "machine": machine_id(), "boot": boot_id()}


def same_machine(rec: dict) -> bool:
    """Whether a record was written on this machine: by machine id when both sides have one, else by
    host name (records of format 1 carry no machine id)."""
    theirs, ours = rec.get("machine"), machine_id()
    if isinstance(theirs, str) and ours:
        return theirs == ours
    return rec.get("host") == _host()


def _earlier_boot(rec: dict) -> bool:
    """The record was written on this machine during an earlier boot: its processes are all gone."""
    theirs, ours = rec.get("boot"), boot_id()
    return isinstance(theirs, str) and bool(ours) and theirs != ours


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


# ---------------------------------------------------------------- lease


class Lease(_Anchored):
    """A time-limited claim on a heads store. Renew it on a timer, check it before every mutation."""

    kind = "heads"

    def __init__(self, store_dir: Path, owner_id: str, ttl: float, epoch: int, expires: float,
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


def _own_start_time() -> float:
    """This process's start time as psutil reports it (what `process_alive` compares with). Every
    lease write stamps it, so a command run without an owner paid psutil's import for it; on Linux
    it is read from /proc, as psutil reads it: boot time plus the start in clock ticks."""
    try:
        with open("/proc/self/stat", "rb") as f:
            ticks = int(f.read().rpartition(b")")[2].split()[19])  # field 22, starttime
        with open("/proc/stat", "rb") as f:
            boot = next(float(line.split()[1]) for line in f if line.startswith(b"btime"))
        return ticks / os.sysconf("SC_CLK_TCK") + boot
    except (OSError, ValueError, IndexError, StopIteration):
        import psutil

        return psutil.Process(os.getpid()).create_time()


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
    from .heads import HeadStore  # local: heads does not depend on ownership

    heads = HeadStore(store_dir / "heads")
    floor = 0
    for seq in heads.loose_seqs()[-16:]:
        try:
            floor = max(floor, heads.read(seq).epoch)
        except CorruptStore:
            continue
    return floor


# ---------------------------------------------------------------- PID lock


def process_alive(pid: int, create_time: float) -> bool:
    """True if a process with this pid and this start time runs on this host."""
    import psutil  # local: only a lease held by another process needs it

    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) > CREATE_TIME_SLACK:
            return False  # the pid was reused by a later process
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # cannot tell: assume it lives rather than steal


class PidLock(_Anchored):
    """Ownership of a plain file store by one live process."""

    kind = "pid"

    def __init__(self, store_dir: Path, owner_id: str, epoch: int):
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


# ---------------------------------------------------------------- entry points


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
            held = bool(rec) and not rec.get("released") and rec.get("expires", 0) > clock()
        elif kind == "pid":
            rec = _read(store_dir / PID_FILE, "pidlock")
            held = bool(rec) and _pid_held(rec)
        else:
            raise InvalidParams(f"unknown store kind {kind!r}")
    except CorruptStore:
        return None
    if not held:
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
