"""Session records: the sessions of a store that are not the live one, and the forks between them.

The live session is whatever the current head (or the sidecar record) names; its lineage travels
inside its published state. Every other session of the store has a small record here:

    sessions/<sessionId>.cbor     kind "session": a parked or frozen session and the body digest of
                                  its last state (a root for the collector), or a worktree fork that
                                  lives in another folder's store (no body here, its path instead)
    sessions/fork.<branch>.cbor   kind "fork": the bracket of one fork (phase "begun" until the branch
                                  is committed and the parent frozen, then "complete"), with the report
                                  the user confirmed

Records are written through the seam (temp + fsync + rename), so each one is old or new after a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidParams
from . import fs
from .records import read_record, write_record

SESSION_KIND = "session"
FORK_KIND = "fork"
FORK_PREFIX = "fork."


def _folder(store) -> Path:
    return Path(store.path) / "sessions"


def _check_id(session_id: str) -> str:
    store_path_safe = isinstance(session_id, str) and session_id and "/" not in session_id \
        and not session_id.startswith(".") and session_id != FORK_PREFIX[:-1]
    if not store_path_safe:
        raise InvalidParams(f"invalid session id {session_id!r}")
    return session_id


def session_path(store, session_id: str) -> Path:
    return _folder(store) / f"{_check_id(session_id)}.cbor"


def fork_path(store, branch_id: str) -> Path:
    return _folder(store) / f"{FORK_PREFIX}{_check_id(branch_id)}.cbor"


def _ensure(store) -> Path:
    folder = _folder(store)
    if not folder.is_dir():
        fs.mkdir(folder)  # stores made before sessions existed
    return folder


def write_session(store, record: dict) -> None:
    _ensure(store)
    write_record(session_path(store, record["sessionId"]), SESSION_KIND, record)


def read_session(store, session_id: str) -> dict | None:
    return read_record(session_path(store, session_id), SESSION_KIND, missing_ok=True)


def remove_session(store, session_id: str) -> None:
    fs.unlink(session_path(store, session_id), missing_ok=True)


def write_fork(store, record: dict) -> None:
    _ensure(store)
    write_record(fork_path(store, record["branchId"]), FORK_KIND, record)


def remove_fork(store, branch_id: str) -> None:
    fs.unlink(fork_path(store, branch_id), missing_ok=True)


def _names(store) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(_folder(store))
                      if e.name.endswith(".cbor") and not fs.is_temp_name(e.name)
                      and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []


def sessions(store) -> list[dict]:
    """Every session record, oldest name first (read-only)."""
    out = []
    for name in _names(store):
        if not name.startswith(FORK_PREFIX):
            rec = read_record(_folder(store) / name, SESSION_KIND, missing_ok=True)
            if rec is not None:
                out.append(rec)
    return out


def forks(store) -> list[dict]:
    """Every fork record (begun or complete), oldest first (read-only)."""
    out = []
    for name in _names(store):
        if name.startswith(FORK_PREFIX):
            rec = read_record(_folder(store) / name, FORK_KIND, missing_ok=True)
            if rec is not None:
                out.append(rec)
    return sorted(out, key=lambda r: r.get("created", 0.0))


def names_signature(store) -> tuple:
    """Cheap identity of the records (the collector looks again only when it changes)."""
    out = []
    for name in _names(store):
        try:
            out.append((name, os.stat(_folder(store) / name).st_mtime_ns))
        except FileNotFoundError:
            continue
    return tuple(out)


def parked_bodies(store) -> list[tuple[str, str]]:
    """(sessionId, body digest) of every session whose last state is kept here: collection roots."""
    out = []
    for rec in sessions(store):
        body = rec.get("body")
        if isinstance(body, str):
            out.append((rec["sessionId"], body))
    for rec in forks(store):
        body = rec.get("parentBody")
        if isinstance(body, str):
            out.append((rec.get("parentId", ""), body))
    return out
