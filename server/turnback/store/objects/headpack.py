"""The pack of old heads: one file, `heads/packed.cbor`, holding head records the collector kept.

A loose head is a file of a few hundred bytes, and a file costs a whole block on disk (4 KiB here): a
long session's 300 kept heads were 1.2 MiB of a 6.5 MiB store. So the collector moves kept heads
that are no longer among the newest (`heads.LOOSE_NEWEST`) into this one file, rewritten whole by
temp + fsync + rename + folder fsync, and only then unlinks their loose copies. Each entry keeps the
loose file's exact bytes (a checksummed head record of its own) and its modification time, so a head
reads, and the collector's cache stamps it, the same loose or packed.

Write-once per generation, one writer (the collector, under the store's ownership); a crash leaves the
old pack or the new one, and a head both loose and packed (between the rename and the unlinks) reads
from its loose copy, which is the same bytes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import NamedTuple

from ...errors import RecordError
from .. import fs
from ..records import decode_record, encode_record

NAME = "packed.cbor"
KIND = "headpack"


class Packed(NamedTuple):
    mtime_ns: int  # the loose file's, when it was packed
    data: bytes  # the loose file's bytes: a head record


_lock = threading.Lock()
_parsed: dict[str, tuple[tuple[int, int, int], dict[int, Packed]]] = {}  # path -> (its stat key, its entries)


def path_in(heads_dir: str | os.PathLike[str]) -> Path:
    return Path(heads_dir) / NAME


def read(heads_dir: str | os.PathLike[str]) -> dict[int, Packed]:
    """seq -> entry of the pack in `heads_dir` ({} when there is none). Parsed once per generation of
    the file (its inode, size and mtime); RecordError when it is damaged."""
    p = path_in(heads_dir)
    try:
        st = os.stat(p, follow_symlinks=False)
    except FileNotFoundError:
        return {}
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _parsed.get(str(p))
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        data, st = fs.read_file_and_stat(p)
    except FileNotFoundError:
        return {}
    entries = _decode(data, str(p))
    with _lock:
        _parsed[str(p)] = ((st.st_ino, st.st_size, st.st_mtime_ns), entries)
    return entries


def _decode(data: bytes, where: str) -> dict[int, Packed]:
    body = decode_record(data, path=where, kind=KIND)
    rows = body.get("heads")
    out: dict[int, Packed] = {}
    if not isinstance(rows, list):
        raise RecordError(f"corrupt record {where}: no list of heads", data={"path": where})
    for row in rows:
        if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], int) and row[0] >= 1
                and isinstance(row[1], int) and isinstance(row[2], bytes) and row[0] not in out):
            raise RecordError(f"corrupt record {where}: a malformed or repeated entry",
                              data={"path": where})
        out[row[0]] = Packed(row[1], row[2])
    return out


def write(heads_dir: str | os.PathLike[str], entries: dict[int, Packed]) -> None:
    """Replace the pack with `entries` (removed when empty), durably."""
    p = path_in(heads_dir)
    if not entries:
        if os.path.lexists(p):
            fs.unlink(p)
            fs.fsync_dir(p.parent)
        return
    rows = [[seq, e.mtime_ns, e.data] for seq, e in sorted(entries.items())]
    fs.write_atomic(p, encode_record(KIND, {"heads": rows}))
