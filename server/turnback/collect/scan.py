"""Observing heads: the small immutable facts a collection decides on.

One observation per head record, the same shape whether it was made in this process or in the batch
child (`collect/child.py`), so the parent can warm its cache from either:

    [seq, ino, record_size, created, turn_count, fork_point, settled, body, body_size]   readable head
    [seq, ino, None, "why it could not be read"]                                         broken head

`ino` is the record file's inode as listed by the folder scan (head records are immutable and published
by a hard link of a fresh file, so a different inode means a different record); `body_size` is the size
of the body object, or -1 when it is missing. Nothing here reads a body: a cold scan reads only the
tiny head records.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from ..errors import TurnbackError
from ..store import fsio
from ..store.heads import KIND as HEAD_KIND, HeadRecord, head_name
from ..store.records import decode_record

_NAME_LEN = len(head_name(0))


class HeadFacts(NamedTuple):
    seq: int
    ino: int
    size: int  # bytes of the head record
    created: float
    turn_count: int
    fork_point: str
    settled: bool
    body: str
    body_size: int  # bytes of the body object, -1 if it is missing

    def to_obs(self) -> list:
        return list(self)


def list_heads(heads_dir: str | os.PathLike) -> dict[int, int]:
    """seq -> inode of every head record, from one folder listing (no stat per file on Linux)."""
    out: dict[int, int] = {}
    try:
        with os.scandir(heads_dir) as it:
            for e in it:
                n = e.name
                if len(n) == _NAME_LEN and n.endswith(".cbor") and n[:12].isdigit():
                    out[int(n[:12])] = e.inode()
    except FileNotFoundError:
        pass
    return out


def observe(store_path: str | os.PathLike, seq: int, ino: int) -> list:
    """One observation of head `seq` (see the module docstring for its shape)."""
    root = Path(store_path)
    path = root / "heads" / head_name(seq)
    try:
        data = fsio.read_file(path)
        body = decode_record(data, path=str(path), kind=HEAD_KIND)
        rec = HeadRecord.from_body(body, path=str(path))
        if rec.seq != seq:
            return [seq, ino, None, f"the record says seq {rec.seq}"]
    except FileNotFoundError:
        return [seq, ino, None, "gone"]
    except (TurnbackError, OSError) as exc:
        return [seq, ino, None, getattr(exc, "message", None) or str(exc)]
    try:
        body_size = os.stat(root / "objects" / rec.body[:2] / rec.body[2:],
                            follow_symlinks=False).st_size
    except FileNotFoundError:
        body_size = -1
    return [seq, ino, len(data), float(rec.created), rec.turn_count, rec.fork_point, rec.settled,
            rec.body, body_size]


def facts_of(obs: list) -> HeadFacts | None:
    """The facts of a readable observation, or None for a broken one. Validates the shape, since an
    observation may come from another process."""
    if not isinstance(obs, list) or len(obs) not in (4, 9) or not isinstance(obs[0], int):
        raise ValueError(f"not an observation: {obs!r:.80}")
    if len(obs) == 4:
        return None
    seq, ino, size, created, tc, fp, settled, body, body_size = obs
    if not (isinstance(ino, int) and isinstance(size, int) and isinstance(created, (int, float))
            and isinstance(tc, int) and isinstance(fp, str) and isinstance(settled, bool)
            and isinstance(body, str) and isinstance(body_size, int)):
        raise ValueError(f"not an observation: {obs!r:.80}")
    return HeadFacts(seq, ino, size, float(created), tc, fp, settled, body, body_size)


def observe_many(store_path: str | os.PathLike, seqs=None) -> list[list]:
    """Observations of `seqs` (default: every head), in seq order. The batch child's whole job."""
    listed = list_heads(Path(store_path) / "heads")
    wanted = sorted(listed) if seqs is None else sorted(set(seqs))
    return [observe(store_path, s, listed.get(s, 0)) for s in wanted]
