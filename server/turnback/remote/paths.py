"""Where a store's owner listens, and whether that place can be trusted.

The socket lives in the store, `<store>/run/owner.sock`, in a folder of mode 0700 that must be the
user's own. When that name does not fit `sun_path` (about 107 bytes on Linux), or something that is
not a socket of this user's is in the way, the owner binds in a folder of its own making instead: a
fresh folder with a random name (created exclusively, mode 0700) under `$XDG_RUNTIME_DIR` when that is
the user's private folder, else under the system's temporary folder. Nobody can pre-empt such a name,
and another user's folder of any name is never used. `<store>/run/socket.path` records where; a client
believes it only when the run folder and the record are the user's own and nobody else may write
them, and connects only to a socket (in a folder) of the user's own that nobody else may open.
Standard library only (the thin client and the hook's fast path use it).
"""

from __future__ import annotations

import os
import stat

RUN_DIR = "run"
SOCKET_NAME = "owner.sock"
POINTER_NAME = "socket.path"
PRIVATE_PREFIX = "turnback-"  # a private socket folder: PRIVATE_PREFIX + random hex
SUN_PATH_MAX = 107  # Linux: 108 bytes including the terminating NUL
MAX_POINTER = 4096


class UnsafeSocket(Exception):
    """A socket path owned by someone else or open to others: never connected to, never replaced."""


def store_dir(workspace, store=None) -> str:
    if store is not None:
        return os.path.abspath(os.fspath(store))
    return os.path.join(os.path.realpath(os.fspath(workspace)), ".turnback")


def run_dir(store: str) -> str:
    return os.path.join(store, RUN_DIR)


def pointer_path(store: str) -> str:
    return os.path.join(run_dir(store), POINTER_NAME)


def inside_socket(store: str) -> str:
    return os.path.join(run_dir(store), SOCKET_NAME)


def fits(path: str) -> bool:
    return len(os.fsencode(path)) <= SUN_PATH_MAX


def preferred_socket(store: str) -> str | None:
    """The socket in the store, when its name fits; None when the owner must bind elsewhere."""
    inside = inside_socket(store)
    return inside if fits(inside) else None


def private_bases() -> list[str]:
    """Folders a private socket folder may be made in, best first: the user's runtime folder when it
    is really theirs and closed to others, then the temporary folders (made private by the random
    folder inside them, never by their own mode)."""
    import tempfile  # only for an owner that binds outside its store

    bases = []
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        try:
            st = os.lstat(xdg)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() \
                and not st.st_mode & 0o077:
            bases.append(xdg)
    for base in (tempfile.gettempdir(), "/tmp"):
        if base not in bases and os.path.isdir(base):
            bases.append(base)
    # room for "/turnback-<16 hex>/owner.sock" and the bind's staging name
    return [b for b in bases if fits(os.path.join(b, PRIVATE_PREFIX + "0" * 16, SOCKET_NAME))]


def _check_ours(where: str, st: os.stat_result, what: str, others: int) -> None:
    uid = os.getuid()
    if st.st_uid != uid:
        raise UnsafeSocket(f"the owner's {what} {where} belongs to user {st.st_uid}, not to you "
                           f"({uid}); refusing to use it")
    if st.st_mode & others:
        raise UnsafeSocket(f"the owner's {what} {where} is open to other users (mode "
                           f"{stat.S_IMODE(st.st_mode):04o}); refusing to use it")


def trusted_socket(store: str) -> str | None:
    """The socket path an owner of `store` announced: the recorded one, else the one in the store;
    None when there is neither. UnsafeSocket when the run folder or the record is not the user's own
    or others may write it: what they say is never believed."""
    run = run_dir(store)
    try:
        st = os.lstat(run)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnsafeSocket(f"the store's run folder {run} cannot be read: {exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        return None  # no owner can listen there, so none is recorded (nothing to connect to)
    _check_ours(run, st, "run folder", 0o077)
    pointer = pointer_path(store)
    try:
        fd = os.open(pointer, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        inside = inside_socket(store)
        return inside if os.path.lexists(inside) else None
    except OSError as exc:
        raise UnsafeSocket(f"the socket record {pointer} cannot be read safely ({exc.strerror}); "
                           "refusing to believe it") from None
    try:
        pst = os.fstat(fd)
        if not stat.S_ISREG(pst.st_mode):
            raise UnsafeSocket(f"the socket record {pointer} is not a regular file; refusing it")
        _check_ours(pointer, pst, "socket record", 0o022)
        recorded = os.read(fd, MAX_POINTER + 1)
    finally:
        os.close(fd)
    path = os.fsdecode(recorded.strip())
    if not path or len(recorded) > MAX_POINTER or not os.path.isabs(path) or "\0" in path:
        raise UnsafeSocket(f"the socket record {pointer} does not name a socket path; refusing it")
    return path


def recorded_socket(store: str) -> str | None:
    """Like `trusted_socket`, but an untrusted record reads as no record (the hook's fast path then
    takes its slow path, which says what is wrong)."""
    try:
        return trusted_socket(store)
    except UnsafeSocket:
        return None


def check_private(path: str) -> None:
    """Refuse a socket (or its folder) that another user owns or that others may open."""
    for what, where, want in (("folder", os.path.dirname(path), stat.S_ISDIR),
                              ("socket", path, stat.S_ISSOCK)):
        st = os.lstat(where)
        if not want(st.st_mode):
            raise UnsafeSocket(f"the owner's {what} {where} is not a {what}; refusing to use it")
        _check_ours(where, st, what, 0o077)


def owner_gone(pid: int | None) -> str | None:
    """Why waiting on process `pid` is pointless (stopped, or exited), or None (running, or not
    knowable here). The hooks' and the command line's lean clients both ask it (/proc/PID/stat),
    so the two faces give an owner up alike."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return f"the owner (pid {pid}) has exited"
    except OSError:
        return None
    state = stat[stat.rfind(b")") + 2:][:1]
    if state in (b"T", b"t"):
        return f"the owner (pid {pid}) is stopped"
    if state in (b"Z", b"X"):
        return f"the owner (pid {pid}) has exited"
    return None
