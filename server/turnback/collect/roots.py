"""Roots besides heads: journal pins, transaction intents, recovery records, the live state.

Every reader here is read-only. The rule for records that carry digests is deliberately blunt: walk
the record recursively and pin every string that is an object digest (32 lowercase hex). That covers
every operation shape the reducer knows (`image` before/after, `seen` images, step `result`s,
`instructions` snapshots) and any shape added later, at the price of perhaps keeping an object that a
string merely happens to name, which is harmless.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..store import fsio, journal as journal_mod
from ..store.digest import is_digest
from ..store.records import read_record


def digests_in(value, out: set[str]) -> set[str]:
    """Every object digest mentioned anywhere in a decoded CBOR value (keys included)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if is_digest(v):
                out.add(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return out


def _record_files(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder)
                      if e.name.endswith(".cbor") and not fsio.is_temp_name(e.name)
                      and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []


def journal_files(store) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(store.journal_dir)
                      if (e.name.endswith(".wal") or journal_mod.is_evidence(e.name))
                      and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []


def journal_signature(store) -> tuple:
    """Cheap identity of the journals' contents: names and sizes (journals only grow or reset)."""
    out = []
    for p in journal_files(store):
        try:
            out.append((p.name, os.stat(p).st_size))
        except FileNotFoundError:
            continue
    return tuple(out)


def journal_pins(store) -> set[str]:
    """Every digest any journal's good frames mention (the live journal and any left by an earlier
    session of this store). A torn tail is ignored, as replay ignores it."""
    pins: set[str] = set()
    for p in journal_files(store):
        try:
            # a damaged journal kept as evidence pins what every readable frame of it names
            frames = (journal_mod.salvage_frames(p) if journal_mod.is_evidence(p.name)
                      else journal_mod.scan(p).frames)
        except FileNotFoundError:
            continue
        for frame in frames:
            digests_in(frame, pins)
    return pins


def record_names(store) -> tuple:
    return (tuple(p.name for p in _record_files(store.txn_dir)),
            tuple(p.name for p in _record_files(store.recovery_dir)))


def intents(store) -> list[tuple[Path, dict]]:
    """Transaction intent records (`txn/`): their backups, targets and new body are roots."""
    return [(p, read_record(p, "intent")) for p in _record_files(store.txn_dir)]


def recoveries(store) -> list[tuple[Path, dict]]:
    """Recovery records (`recovery/`): their backups are roots until the user resolves them."""
    return [(p, read_record(p, "recovery")) for p in _record_files(store.recovery_dir)]


def sidecar_body(store) -> str | None:
    """The body named by a plain file store's sidecar record (its one durable state), if any."""
    rec = read_record(store.sidecar_path, "sidecar", missing_ok=True)
    if rec is None:
        return None
    body = rec.get("body")
    return body if is_digest(body) else None
