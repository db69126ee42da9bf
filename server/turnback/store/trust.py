"""Trust only your own: a folder or file turnback believes must be this user's, writable by nobody
else, of the right kind (folder, regular file) and not a symbolic link. Decided by `lstat` (or by
`fstat` of a descriptor opened with O_NOFOLLOW), never by following a link.

Why: another user who can plant a store, a `turnback.toml` or a hook log where turnback looks would
read what the agent was told (a hook logs its payload) or steer it (`[hooks] block = true`).

"Writable by others": the other-write bit, or the group-write bit unless the entry is not `private`
and its group is this process's own (with per-user groups, umask 002, that group is the user alone).
turnback makes its own files 0600 and folders 0700, so store files are `private`; the user's own
files (`turnback.toml`, the store's `config.toml`) and the folders the upward walk passes are not.

The rule itself (`fault`, `entry_ok`) is in `owned.py`, which is all the hook's walk compiles;
this module says why, and refuses. Standard library only (the error type is imported to raise).
"""

from __future__ import annotations

import os
import stat

from .ownership.owned import entry_ok, fault  # noqa: F401 - the rule, re-exported for every opener

# What a hook reads or writes in a store, checked before each event (`place_problem`).
STORE_FILES = ("FORMAT", "agents/state.json", "agents/lock", "agents/hook.log", "agents/spool",
               "agents/spool.replaying")


def check(path, what: str, *, private: bool = True, folder: bool = False) -> str | None:
    """The sentence saying why `path` is refused, or None when it is trusted or absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"the {what} {path} cannot be looked at ({exc.strerror or exc}); refusing to use it"
    return explain(st, path, what, private=private, folder=folder)


def explain(st, path, what: str, *, private: bool = True, folder: bool = False) -> str | None:
    why = fault(st, private)
    if why is None and (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)):
        return None
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    reason = {"link": "is a symbolic link",
              "owner": f"belongs to {_user(st.st_uid)}, not to you ({_user(os.geteuid())})",
              "others": f"can be written by every user (mode {mode})",
              "group": f"can be written by its group (gid {st.st_gid}, mode {mode})",
              None: f"is not a {'folder' if folder else 'regular file'}"}[why]
    return f"the {what} {path} {reason}; refusing to use it"


def markers_problem(root) -> str | None:
    """Why a folder's turnback markers (`turnback.toml`, the store and its FORMAT) are refused."""
    store = os.path.join(root, ".turnback")
    return (check(os.path.join(root, "turnback.toml"), "configuration", private=False)
            or check(store, "store", folder=True)
            or check(os.path.join(store, "FORMAT"), "store file"))


def place_problem(root, store) -> str | None:
    """Why a workspace's configuration, store and hook files cannot be trusted, or None."""
    root, store = os.fspath(root), os.fspath(store)
    return (check(os.path.join(root, "turnback.toml"), "configuration", private=False)
            or check(store, "store", folder=True)
            or check(os.path.join(store, "agents"), "agent folder", folder=True)
            or next((p for p in (check(os.path.join(store, n), "store file") for n in STORE_FILES)
                     if p), None)
            or check(os.path.join(store, "config.toml"), "configuration", private=False))


def require(path, what: str, *, private: bool = True, folder: bool = False) -> None:
    """Raise `untrusted` unless `path` is absent or trusted."""
    problem = check(path, what, private=private, folder=folder)
    if problem is not None:
        refuse(problem, path)


def require_fd(fd: int, path, what: str, *, private: bool = True) -> None:
    """The check on what a descriptor opened with O_NOFOLLOW reached (no race with a rename)."""
    problem = explain(os.fstat(fd), path, what, private=private)
    if problem is not None:
        refuse(problem, path)


def require_store(store) -> None:
    """The store, when there is one, is a private folder of yours with a trusted FORMAT."""
    require(store, "store", folder=True)
    require(os.path.join(os.fspath(store), "FORMAT"), "store file")


def require_workspace(root, store) -> None:
    """What every opener checks first: the workspace folder is yours (and nobody else's to write),
    and so is its store."""
    require(os.path.realpath(os.fspath(root)), "workspace folder", private=False, folder=True)
    require_store(store)


def require_place(root, store) -> None:
    problem = place_problem(root, store)
    if problem is not None:
        refuse(problem, store)


def refuse(problem: str, path) -> None:
    from ..errors import Untrusted

    raise Untrusted(problem, data={"path": os.fspath(path)})


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"
