"""The stat cache: what a sweep saw of each file, apart from the walk so it can be read alone.

The stat cache
--------------
`StatCache` maps a workspace path to what we saw when we last hashed it: (size, mtime_ns, ctime_ns,
inode, digest, observed_ns). A file whose lstat still shows the same size, mtime, ctime and inode is
taken from the cache without being read. ctime cannot be set from user space, so restoring an mtime
with `touch -d` after a same-size write still counts as a change. The cache lives in the store's
`cache/` folder as one small self-checking CBOR file; missing, torn or corrupt, it loads empty — it
only costs a full re-hash, it never loses anything.

The "racy git" problem
----------------------
A stat cache is fooled by a file written twice within one timestamp tick: we hash it after the first
write, the second write (same size) leaves mtime unchanged, and the cache would call it clean. Git
solves this by comparing each index entry's mtime with the index file's own mtime: an entry whose mtime
is not strictly older than the moment the index was written is "racily clean" and is re-hashed. We do
the same, per entry rather than per file: each entry records `observed_ns`, a clock reading taken
*before* the file was opened, and an entry counts as clean only if its mtime is strictly older than
`observed_ns - RACY_MARGIN_NS`. Per entry, because entries are written at different times (a sweep
interrupted half way, a single-file capture) and one cache-wide stamp would wrongly bless entries that
were never re-examined. The margin covers what "strictly older" cannot: the kernel stamps files from a
coarse clock that can lag `time.time_ns()` by a tick, and some file systems keep 1 s (HFS+) or 2 s
(FAT) timestamps. Cost: a file modified in the two seconds before a sweep is hashed once more at the
next sweep. Not covered: a network file system whose server clock runs more than the margin behind
ours.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from ..store import fs
from .reader import ImageStat
from .sealed import seal, unseal

RACY_MARGIN_NS = 2_000_000_000
_MAGIC = b"TBSC"
_VERSION = 2  # 2: packed entries (StatCache.encode); version 1 files still load


class CacheEntry(NamedTuple):
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    digest: str
    observed_ns: int


_KEY = struct.Struct(">QqqQ")  # size, mtime_ns, ctime_ns, inode: what a stat must match
_REST = struct.Struct(">B16sq")  # racily clean?, the raw digest, observed_ns


class StatCache:
    """rel -> CacheEntry. Rebuildable: deleting the file loses nothing but time.

    Kept packed: one 57-byte string per path (the stat fields it keys on, whether it is racily
    clean, the digest, when it was observed) instead of a tuple of six objects, which was most of a
    live owner's memory at 250,000 files; `fresh` compares the packed stat fields at once."""

    def __init__(self, entries: dict[str, CacheEntry] | None = None):
        self.entries: dict[str, bytes | CacheEntry] = {}
        for rel, e in (entries or {}).items():
            self.put(rel, e)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, rel: object) -> bool:
        return rel in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def get(self, rel: str) -> CacheEntry | None:
        e = self.entries.get(rel)
        if e is None or isinstance(e, CacheEntry):
            return e
        size, mtime, ctime, ino = _KEY.unpack_from(e)
        _racy, raw, observed = _REST.unpack_from(e, _KEY.size)
        return CacheEntry(size, mtime, ctime, ino, raw.hex(), observed)

    def put(self, rel: str, e: CacheEntry) -> None:
        try:
            raw = bytes.fromhex(e.digest)
        except ValueError:
            raw = b""
        if len(raw) != 16:
            self.entries[rel] = e  # not a digest of ours: kept as it is (fresh() still judges it)
            return
        racy = e.mtime_ns >= e.observed_ns - RACY_MARGIN_NS
        self.entries[rel] = _KEY.pack(e.size, e.mtime_ns, e.ctime_ns, e.ino) + _REST.pack(
            racy, raw, e.observed_ns)

    def record(self, rel: str, stat: ImageStat, digest: str, observed_ns: int) -> None:
        """Remember that `rel`, with this stat, hashed to `digest`; `observed_ns` must be a clock
        reading taken before the file was opened (see the racy-git note in the module docstring)."""
        self.put(rel, CacheEntry(stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino, digest,
                                 observed_ns))

    def drop(self, rel: str) -> None:
        self.entries.pop(rel, None)

    def fresh(self, rel: str, st: os.stat_result) -> str | None:
        """The cached digest if `st` matches the entry and the entry is not racily clean."""
        e = self.entries.get(rel)
        if e is None:
            return None
        if isinstance(e, CacheEntry):
            if (e.size, e.mtime_ns, e.ctime_ns, e.ino) != (st.st_size, st.st_mtime_ns,
                                                           st.st_ctime_ns, st.st_ino):
                return None
            return None if e.mtime_ns >= e.observed_ns - RACY_MARGIN_NS else e.digest
        if e[:32] != _KEY.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino):
            return None
        if e[32]:
            return None  # racily clean: modified too close to when we looked; look again
        return e[33:49].hex()

    # ------------------------------------------------------------------ persistence

    def encode(self) -> bytes:
        """Version 2: the paths, then every packed entry back to back (57 bytes each, in the same
        order), so loading 250,000 entries builds no list per entry (version 1 did, and its peak
        stayed resident in a live owner). An entry that is not a digest of ours goes in `other`."""
        rels, packed, other = [], [], {}
        for rel, e in self.entries.items():
            if isinstance(e, bytes):
                rels.append(rel)
                packed.append(e)
            else:
                other[rel] = list(e)
        return seal(_MAGIC, _VERSION, {"rels": rels, "packed": b"".join(packed), "other": other})

    @classmethod
    def decode(cls, data: bytes) -> "StatCache":
        """Decode (version 2, or 1 as older turnbacks wrote it); ValueError on anything unexpected."""
        try:
            doc = unseal(_MAGIC, _VERSION, data, "a stat cache")
        except ValueError as exc:
            if "version" not in str(exc):
                raise
            return cls._decode_v1(unseal(_MAGIC, 1, data, "a stat cache"))
        rels, packed, other = doc.get("rels"), doc.get("packed"), doc.get("other", {})
        size = _KEY.size + _REST.size
        if not isinstance(rels, list) or not isinstance(packed, bytes) \
                or len(packed) != size * len(rels) or not isinstance(other, dict):
            raise ValueError("entries do not match their paths")
        cache = cls()
        entries = cache.entries
        for i, rel in enumerate(rels):
            if not isinstance(rel, str):
                raise ValueError(f"bad path {rel!r}")
            entries[rel] = packed[i * size:(i + 1) * size]
        for rel, v in cls._checked(other).items():
            cache.put(rel, v)
        return cache

    @classmethod
    def _decode_v1(cls, doc: dict) -> "StatCache":
        raw = doc.get("entries")
        if not isinstance(raw, dict):
            raise ValueError("no entries")
        cache = cls()
        for rel, e in cls._checked(raw).items():
            cache.put(rel, e)
        return cache

    @staticmethod
    def _checked(raw: dict) -> dict[str, CacheEntry]:
        entries = {}
        for rel, v in raw.items():
            if (not isinstance(rel, str) or not isinstance(v, list) or len(v) != 6
                    or not all(type(x) is int for x in v[:4]) or not isinstance(v[4], str)
                    or type(v[5]) is not int):
                raise ValueError(f"bad entry {rel!r}")
            entries[rel] = CacheEntry(*v)
        return entries

    @classmethod
    def load(cls, path: Path | str) -> "StatCache":
        """Load the cache file; a missing, unreadable or corrupt file gives an empty cache."""
        try:
            data = fs.read_file(path)
            return cls.decode(data)
        except Exception:  # noqa: BLE001 - rebuildable: any failure means "start empty"
            return cls()

    def save(self, path: Path | str) -> None:
        """Replace the cache file atomically (private mode, no fsync: it is rebuildable)."""
        p = Path(path)
        fs.mkdir(p.parent, mode=0o700, parents=True, exist_ok=True, sync=False)
        fs.write_atomic(p, self.encode(), mode=0o600, sync=False)


class KeptCache:
    """A workbench's stat cache between its sweeps: whole for a full walk; while a healthy watcher
    names the dirty paths, spilled to its file after each full walk and held only for the paths
    swept since (a live owner at 250,000 files spent 62 MiB holding all of it, and a dirty sweep
    asks about a handful of paths: one it does not find is read and hashed again). The next full
    walk, or the close, loads the file and lays the recent entries over it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.cache: StatCache | None = None
        self.partial = False  # `cache` holds only what changed since the file was saved

    def for_sweep(self, full: bool) -> StatCache:
        if self.cache is None:
            self.cache, self.partial = StatCache.load(self.path), False
        elif full and self.partial:
            self.cache = self._merged()
        return self.cache

    def after_full_walk(self, spill: bool) -> None:
        self.cache.save(self.path)
        if spill:
            self.cache, self.partial = StatCache(), True

    def save(self) -> None:
        if self.cache is None:
            return
        if self.partial:
            self.cache, self.partial = self._merged(), False
        self.cache.save(self.path)

    def _merged(self) -> StatCache:
        whole = StatCache.load(self.path)
        whole.entries.update(self.cache.entries)
        return whole
