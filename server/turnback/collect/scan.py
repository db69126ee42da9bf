"""Observing heads: the small immutable facts a collection decides on.

One observation per head record, the same shape whether it was made in this process or in the batch
child (`collect/child.py`), so the parent can warm its cache from either:

    [seq, mtime_ns, record_size, created, turn_count, fork_point, settled, body, body_size]  readable
    [seq, mtime_ns, None, "why it could not be read"]                                        broken

`mtime_ns` and `record_size` are the record file's, as the folder scan stats them: head records are
immutable, so a cached entry is reused while a record of that seq with that size and modification time
exists (a copied store keeps both, so its cache stays warm). `body_size` is the raw size of the body
object (what reading it returns, the same loose or packed, so a repack does not change it), or -1
when it is missing. Nothing here reads a body: a cold scan reads only the tiny head records (and
an envelope's header, or a pack index already in memory, for the size).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from ..errors import TurnbackError
from ..store import fs
from ..store.objects import headpack
from ..store.heads import KIND as HEAD_KIND, HeadRecord, head_name
from ..store.records import decode_record

_NAME_LEN = len(head_name(0))


class HeadFacts(NamedTuple):
    seq: int
    mtime_ns: int  # of the head record file
    size: int  # bytes of the head record
    created: float
    turn_count: int
    fork_point: str
    settled: bool
    body: str
    body_size: int  # bytes of the body object, -1 if it is missing

    def to_obs(self) -> list:
        return list(self)


def list_heads(heads_dir: str | os.PathLike[str]) -> dict[int, tuple[int, int]]:
    """seq -> (size, mtime_ns) of every head record: one folder listing and one lstat per record,
    then the pack of old heads (a packed head keeps its loose file's size and time, so a cached
    entry stays good when it is packed). RecordError when the pack is damaged."""
    out: dict[int, tuple[int, int]] = {}
    try:
        with os.scandir(heads_dir) as it:
            for e in it:
                n = e.name
                if len(n) == _NAME_LEN and n.endswith(".cbor") and n[:12].isdigit():
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out[int(n[:12])] = (st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        pass
    for seq, entry in headpack.read(heads_dir).items():
        out.setdefault(seq, (len(entry.data), entry.mtime_ns))
    return out


def observe(store_path: str | os.PathLike, seq: int, stamp: tuple[int, int] | None = None,
            objects=None) -> list:
    """One observation of head `seq` (see the module docstring for its shape); `objects` is the
    store's object space (opened here when not given)."""
    root = Path(store_path)
    path = root / "heads" / head_name(seq)
    where = str(path)
    try:
        try:
            mtime_ns, data = _read_loose(path)
        except FileNotFoundError:
            entry = headpack.read(root / "heads").get(seq)
            if entry is None:
                return [seq, 0, None, "gone"]
            mtime_ns, data = entry
            where = f"{headpack.path_in(root / 'heads')} (head {seq})"
        body = decode_record(data, path=where, kind=HEAD_KIND)
        rec = HeadRecord.from_body(body, path=where)
        if rec.seq != seq:
            return [seq, mtime_ns, None, f"the record says seq {rec.seq}"]
    except (TurnbackError, OSError) as exc:
        return [seq, stamp[1] if stamp else 0, None, getattr(exc, "message", None) or str(exc)]
    if objects is None:
        objects = _objects_of(root)
    size = objects.stat(rec.body)
    body_size = -1 if size is None else size
    return [seq, mtime_ns, len(data), float(rec.created), rec.turn_count, rec.fork_point, rec.settled,
            rec.body, body_size]


def _read_loose(path: Path) -> tuple[int, bytes]:
    fd = fs.open_read(path)
    try:
        mtime_ns = os.fstat(fd).st_mtime_ns
        return mtime_ns, b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
    finally:
        os.close(fd)


def facts_of(obs: list) -> HeadFacts | None:
    """The facts of a readable observation, or None for a broken one. Validates the shape, since an
    observation may come from another process."""
    if not isinstance(obs, list) or len(obs) not in (4, 9) or not isinstance(obs[0], int):
        raise ValueError(f"not an observation: {obs!r:.80}")
    if len(obs) == 4:
        return None
    seq, mtime_ns, size, created, tc, fp, settled, body, body_size = obs
    if not (isinstance(mtime_ns, int) and isinstance(size, int) and isinstance(created, (int, float))
            and isinstance(tc, int) and isinstance(fp, str) and isinstance(settled, bool)
            and isinstance(body, str) and isinstance(body_size, int)):
        raise ValueError(f"not an observation: {obs!r:.80}")
    return HeadFacts(seq, mtime_ns, size, float(created), tc, fp, settled, body, body_size)


def observe_many(store_path: str | os.PathLike, seqs=None) -> list[list]:
    """Observations of `seqs` (default: every head), in seq order. The batch child's whole job."""
    listed = list_heads(Path(store_path) / "heads")
    wanted = sorted(listed) if seqs is None else sorted(set(seqs))
    objects = _objects_of(Path(store_path))
    return [observe(store_path, s, listed.get(s), objects) for s in wanted]


def _objects_of(root: Path):
    """The object space of the store at `root`, for sizes only (its seed is not needed for them)."""
    from ..store.objects.digest import Hasher
    from ..store.objects.objectstore import ObjectStore

    return ObjectStore(root / "objects", Hasher(0))
