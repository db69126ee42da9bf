"""Which machine, which boot, which process: what an ownership record says about its holder.

A machine is identified by its machine id (`/etc/machine-id`) beside the host name, and a boot by the
boot id: a renamed host still recognises its own processes, and a record from an earlier boot of the
same machine is provably stale. A process is its pid and its start time (a reused pid is another
process).
"""

from __future__ import annotations

import os
import socket

CREATE_TIME_SLACK = 0.5  # seconds; psutil derives start times from boot time plus ticks


def _host() -> str:
    return socket.gethostname()


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
