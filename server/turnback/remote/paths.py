"""Where a store's owner listens, and whether that place can be trusted.

The socket lives in the store, `<store>/run/owner.sock`, in a folder of mode 0700. A Unix socket's
name must fit `sun_path` (about 107 bytes on Linux); when the store's path is too long, the socket
lives in `$XDG_RUNTIME_DIR/turnback/` (else `/tmp/turnback-UID/`) under a name derived from the store
path, and `<store>/run/socket.path` records where. Standard library only (the thin client uses it).
"""

from __future__ import annotations

import os
import stat

RUN_DIR = "run"
SOCKET_NAME = "owner.sock"
POINTER_NAME = "socket.path"
SUN_PATH_MAX = 107  # Linux: 108 bytes including the terminating NUL


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


def fits(path: str) -> bool:
    return len(os.fsencode(path)) <= SUN_PATH_MAX


def preferred_socket(store: str) -> str:
    """Where an owner of `store` binds: in the store when the name fits, else the runtime folder."""
    inside = os.path.join(run_dir(store), SOCKET_NAME)
    if fits(inside):
        return inside
    import hashlib  # only for long store paths: the thin client rarely needs it

    base = os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/turnback-{os.getuid()}"
    name = hashlib.sha256(os.fsencode(store)).hexdigest()[:24] + ".sock"
    return os.path.join(base, "turnback", name) if os.environ.get("XDG_RUNTIME_DIR") \
        else os.path.join(base, name)


def recorded_socket(store: str) -> str | None:
    """The socket path an owner of `store` announced: the one in the store, else the recorded one."""
    inside = os.path.join(run_dir(store), SOCKET_NAME)
    if os.path.lexists(inside):
        return inside
    try:
        with open(pointer_path(store), encoding="utf-8") as fp:
            recorded = fp.read().strip()
    except OSError:
        return None
    return recorded or None


def check_private(path: str) -> None:
    """Refuse a socket (or its folder) that another user owns or that others may open."""
    uid = os.getuid()
    for what, where, want in (("folder", os.path.dirname(path), stat.S_ISDIR),
                              ("socket", path, stat.S_ISSOCK)):
        st = os.lstat(where)
        if not want(st.st_mode):
            raise UnsafeSocket(f"the owner's {what} {where} is not a {what}; refusing to use it")
        if st.st_uid != uid:
            raise UnsafeSocket(f"the owner's {what} {where} belongs to user {st.st_uid}, not to "
                               f"you ({uid}); refusing to use it")
        if st.st_mode & 0o077:
            raise UnsafeSocket(f"the owner's {what} {where} is open to other users (mode "
                               f"{stat.S_IMODE(st.st_mode):04o}); refusing to use it")
