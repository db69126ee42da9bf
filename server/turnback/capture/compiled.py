"""Ignore patterns as pathspec compiled them, kept between commands in the store's `cache/` folder.

A command that opens the store (a `turnback turn begin` without an owner) compiles the default ignore
list and every `.gitignore` it meets; importing pathspec (and the typing_extensions it pulls in) and
compiling cost a good part of such a command's start (docs/performance.md, "A turn at the cost of a
process start"). The compiled form of one line, `(regex, flags, include)` per pattern (each regex
already made to match the probed path itself, see `ignore._Rules`), depends only
on the line and on pathspec's code, so it is kept keyed by the line, under a mark of the installed
pathspec (its file's size and time: an upgrade starts the cache afresh). A line not in the cache is
compiled by pathspec as before, and the cache file is written again when a command closes the store.

The file is a self-checking CBOR file (`sealed.py`) written atomically without a sync: missing, torn,
corrupt or of another pathspec, it loads as empty and costs one compile per line, never a wrong rule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..store import fs
from .sealed import seal, unseal

_MAGIC = b"TBIX"
_VERSION = 2  # 2: patterns kept as `_Rules` matches them (`_itself`)
FILE_NAME = "ignore-compiled.cbor"
MAX_LINES = 4096  # a workspace with more distinct rule lines than this compiles the rest each time

# line -> [(pattern, flags, include)], the same for every store of this process
_known: dict[str, tuple[tuple[str, int, bool], ...]] = {}
_loaded: set[str] = set()  # the cache files read by this process
_dirty = False
_mark_cache: list | None = None


def _mark() -> list:
    """Which pathspec compiled the cache: its package file's size and modification time, found
    without importing it."""
    global _mark_cache
    if _mark_cache is None:
        from importlib.util import find_spec

        try:
            spec = find_spec("pathspec")
            origin = spec.origin if spec else None
            st = os.stat(origin) if origin else None
            _mark_cache = [origin, st.st_size, st.st_mtime_ns] if st else []
        except (ImportError, OSError, ValueError):
            _mark_cache = []
    return _mark_cache


def load(path: Path | str) -> None:
    """Read a store's cache once per process (into the process's own)."""
    key = os.fspath(path)
    if key in _loaded:
        return
    _loaded.add(key)
    try:
        doc = unseal(_MAGIC, _VERSION, fs.read_file(key), "compiled ignore patterns")
        if doc.get("pathspec") != _mark() or not _mark():
            return
        for line, patterns in doc["lines"].items():
            if isinstance(line, str) and line not in _known:
                _known[line] = tuple((str(p), int(f), bool(i)) for p, f, i in patterns)
    except Exception:  # noqa: BLE001 - rebuildable: any failure means "compile again"
        return


def save(path: Path | str) -> None:
    """Write the cache if this process compiled a line it did not hold (no sync: rebuildable)."""
    global _dirty
    if not _dirty or not _mark():
        return
    lines = dict(list(_known.items())[-MAX_LINES:])
    doc = {"pathspec": _mark(), "lines": {k: [list(p) for p in v] for k, v in lines.items()}}
    p = Path(path)
    fs.mkdir(p.parent, mode=0o700, parents=True, exist_ok=True)
    fs.write_atomic(p, seal(_MAGIC, _VERSION, doc), mode=0o600, sync=False)
    _dirty = False


def patterns(line: str) -> list[tuple[re.Pattern, bool]]:
    """The line's patterns as (compiled regex, include): from the cache, or compiled by pathspec
    (a line pathspec cannot parse has none, as git skips it)."""
    global _dirty
    known = _known.get(line)
    if known is None:
        known = _compile(line)
        _known[line] = known
        _dirty = True
    return [(re.compile(p, f), include) for p, f, include in known]


def _compile(line: str) -> tuple[tuple[str, int, bool], ...]:
    import pathspec

    try:
        found = pathspec.GitIgnoreSpec.from_lines([line]).patterns
    except Exception:  # noqa: BLE001 - pathspec raises several types for one bad line
        return ()
    return tuple((_itself(p.regex), p.regex.flags, bool(p.include)) for p in found
                 if p.include is not None and p.regex is not None)


def _itself(regex: re.Pattern) -> str:
    """The pattern made to match the probed path itself, as git does (ignore.py, `_Rules`): a
    pattern ending in a `ps_d` group (the slash after a matched folder) must end the probe."""
    if "ps_d" in regex.groupindex:
        return f"(?:{regex.pattern})\\Z"
    return regex.pattern
