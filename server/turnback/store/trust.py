"""Trust only your own: whether a folder or file turnback is about to believe is yours alone.

Another user who can plant a store, a `turnback.toml` or a hook log where turnback looks could read
what the agent was told (a hook writes the payload to the log) or steer what it does (`[hooks] block
= true`). So before anything is read from or written to a workspace's markers, its store, its
configuration, its hook log, its agent record, its locks or its spool, the entry is checked here: it
must be owned by this process's user, not be writable by other users, be what it should be (a folder,
a regular file) and not be a symbolic link. Every check is an `lstat` (or an `fstat` of a descriptor
opened with `O_NOFOLLOW`): no link is ever followed to decide.

"Writable by others" means the other-write bit, or the group-write bit unless the entry is not
`private` and its group is this process's own group (with per-user groups, the Debian default with
umask 002, that group is the user alone). turnback creates its own files 0600 and folders 0700, so
every store file is `private`; the user's own files (`turnback.toml`, the store's `config.toml`) and
the folders the upward walk passes may be group-writable to the user's own group.

Standard library only, and no turnback module at import time: the hook's fast path walks with it
(`hooks/fast.py`); the error type is imported only when a refusal is raised.
"""

from __future__ import annotations

import os
import stat

# The entries of a store a hook reads or writes, checked before each event (`require_place`).
STORE_FILES = ("FORMAT", "agents/state.json", "agents/lock", "agents/hook.log", "agents/spool",
               "agents/spool.replaying")
USER_FILES = ("config.toml",)  # written by hand: group-writable to the user's own group is fine


def fault(st: os.stat_result, *, private: bool = True) -> str | None:
    """What makes an entry untrustworthy (`link`, `owner`, `others`, `group`), or None."""
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if st.st_uid != os.geteuid():
        return "owner"
    if st.st_mode & stat.S_IWOTH:
        return "others"
    if st.st_mode & stat.S_IWGRP and (private or st.st_gid != os.getegid()):
        return "group"
    return None


def folder_ok(path: str) -> bool:
    """Whether the upward walk may look into (and past) this folder: yours, and nobody else's to
    write. A folder that is not, or that cannot be looked at, ends the walk."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and fault(st, private=False) is None


def check(path, what: str, *, private: bool = True, folder: bool = False) -> str | None:
    """The sentence saying why `path` is refused, or None when it is trusted or absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"the {what} {path} cannot be looked at ({exc.strerror or exc}); refusing to use it"
    return explain(st, path, what, private=private, folder=folder)


def explain(st: os.stat_result, path, what: str, *, private: bool = True,
            folder: bool = False) -> str | None:
    why = fault(st, private=private)
    if why is None:
        right = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
        if right:
            return None
        why = "kind"
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    reason = {
        "link": "is a symbolic link",
        "owner": f"belongs to {_user(st.st_uid)}, not to you ({_user(os.geteuid())})",
        "others": f"can be written by every user (mode {mode})",
        "group": f"can be written by its group (gid {st.st_gid}, mode {mode})",
        "kind": f"is not a {'folder' if folder else 'regular file'}",
    }[why]
    return f"the {what} {path} {reason}; refusing to use it"


def require(path, what: str, *, private: bool = True, folder: bool = False) -> None:
    """Raise `untrusted` unless `path` is absent or trusted."""
    problem = check(path, what, private=private, folder=folder)
    if problem is not None:
        refuse(problem, path)


def require_fd(fd: int, path, what: str, *, private: bool = True) -> None:
    """The same check on what a descriptor opened with O_NOFOLLOW actually reached (no race with
    a rename between the check and the open)."""
    problem = explain(os.fstat(fd), path, what, private=private)
    if problem is not None:
        refuse(problem, path)


def place_problem(root, store) -> str | None:
    """Why a workspace's markers, store and hook files cannot be trusted, or None."""
    root, store = os.fspath(root), os.fspath(store)
    checks = [(os.path.join(root, "turnback.toml"), "configuration", False, False),
              (store, "store", True, True),
              (os.path.join(store, "agents"), "agent folder", True, True)]
    checks += [(os.path.join(store, name), "store file", True, False) for name in STORE_FILES]
    checks += [(os.path.join(store, name), "configuration", False, False) for name in USER_FILES]
    for path, what, private, folder in checks:
        problem = check(path, what, private=private, folder=folder)
        if problem is not None:
            return problem
    return None


def require_place(root, store) -> None:
    problem = place_problem(root, store)
    if problem is not None:
        refuse(problem, store)


def require_store(store) -> None:
    """The store, when there is one, is a private folder of yours with a trusted FORMAT."""
    store = os.fspath(store)
    for problem in (check(store, "store", folder=True),
                    check(os.path.join(store, "FORMAT"), "store file")):
        if problem is not None:
            refuse(problem, store)


def require_workspace(root, store) -> None:
    """What every opener checks first: the workspace folder is yours (and nobody else's to write),
    and so is its store."""
    problem = check(os.path.realpath(os.fspath(root)), "workspace folder", private=False,
                    folder=True)
    if problem is not None:
        refuse(problem, root)
    require_store(store)


def refuse(problem: str, path) -> None:
    from ..errors import Untrusted

    raise Untrusted(problem, data={"path": os.fspath(path)})


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"
