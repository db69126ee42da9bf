"""The pre-turn sweep: walk the workspace, hash only what changed since the last look.

`iter_sweep` is a generator so the caller can interleave it with an event loop: it yields a
`SweepProgress` after every `budget_files` units of work and returns (as the StopIteration value) a
`SweepResult`. `sweep` runs it to completion. The walk uses `os.scandir`, never follows a symbolic link
(a link, to a file or a folder, is a capture gap), prunes ignored folders before descending, and skips
turnback's store and every `.git` folder.

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
import stat
import struct
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..model.known import one_mode
from ..store import fsio
from ..workspace.fence import Workspace
from .ignore import IgnoreRules
from .parallel import ParallelReader
from .reader import ImageStat, read_image
from .sealed import seal, unseal

RACY_MARGIN_NS = 2_000_000_000
_MAGIC = b"TBSC"
_VERSION = 2  # 2: packed entries (StatCache.encode); version 1 files still load
_HASH_UNIT = 1 << 20  # a hashed file costs one budget unit per MiB on top of its walk unit
# A step also ends after this long, whatever its units: what a unit costs varies tenfold (a stat, an
# object confirmed by reading it back, a pack block cut), and on a loop a step is the least it holds.
STEP_SECONDS = 0.002


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
            data = fsio.read_file(path)
            return cls.decode(data)
        except Exception:  # noqa: BLE001 - rebuildable: any failure means "start empty"
            return cls()

    def save(self, path: Path | str) -> None:
        """Replace the cache file atomically (private mode, no fsync: it is rebuildable)."""
        p = Path(path)
        fsio.mkdir(p.parent, mode=0o700, parents=True, exist_ok=True, sync=False)
        fsio.write_atomic(p, self.encode(), mode=0o600, sync=False)


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


# ---------------------------------------------------------------------- the walk


@dataclass(frozen=True)
class SweepProgress:
    walked: int
    hashed: int


@dataclass
class SweepResult:
    images: dict[str, str] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)  # permission bits of each file in `images`
    absent: set[str] = field(default_factory=set)
    gaps: list[tuple[str, str]] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)  # every folder looked into (not ignored, no link)
    hashed: int = 0
    walked: int = 0
    scope: set[str] | None = None  # None: the whole workspace; else the only paths looked at


def _printable(rel: str) -> str:
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _editor_lock(name: str) -> bool:
    """Emacs marks a buffer with unsaved changes by a dangling link `.#NAME`: editor state, not a file
    of the project, so it is no capture gap (and, being a link, it is never followed either)."""
    return name.startswith(".#")


class _Present(set):
    def __init__(self, cache: StatCache):
        super().__init__()
        self.cache = cache

    def add(self, rel: str) -> None:
        if rel in self.cache:
            set.add(self, rel)


def _under(rel: str, folders: set[str]) -> bool:
    cut = rel.rfind("/")
    while cut > 0:
        rel = rel[:cut]
        if rel in folders:
            return True
        cut = rel.rfind("/")
    return False


def iter_sweep(ws: Workspace, objects, cache: StatCache, *, max_bytes: int,
               rules: IgnoreRules | None = None, budget_files: int = 64,
               verify_objects: bool = True) -> Generator[SweepProgress, None, SweepResult]:
    """Walk the workspace; hash what the cache cannot vouch for; update `cache` in place.

    Budget: every directory entry examined costs one unit, a hashed file one more per MiB; after
    `budget_files` units the generator yields. With `verify_objects`, a cached digest whose object is
    no longer in the store (collected meanwhile) is re-hashed rather than trusted.

    `images` holds every regular file that was read or vouched for; `gaps` every path that could not
    be captured (`too-large`, `unreadable`, `symlink`); `absent` every cached path that no longer
    exists. A path that is now ignored, or sits under a symlinked or unreadable folder, is neither
    absent nor an image, and its cache entry is dropped. FIFOs, sockets and devices are skipped.
    """
    if rules is None:
        rules = IgnoreRules(ws)
    rules.invalidate()
    budget_files = max(1, budget_files)
    started = time.time_ns()  # before any file is opened: the racy-git reference point
    res = SweepResult()
    # Non-folder entries that exist but are not images (ignored files, links, gaps). A cached path
    # that is neither an image nor in here, and not under a shadowed folder, is absent: that includes
    # a file that has become a folder or a FIFO, since the file itself is gone. Only cached paths
    # can be absent, so only they are kept (a first checkpoint of 250,000 files keeps none).
    present = _Present(cache)
    shadowed: set[str] = set()  # folders whose contents we do not look at (ignored, links, unreadable)
    units = 0
    stack = [""]
    pool: ParallelReader | None = None  # started once this sweep proves to be a big read
    step_end = time.perf_counter() + STEP_SECONDS
    settle = getattr(objects, "iter_settle", None)
    try:
        while stack:
            folder = stack.pop()
            where = ws.root / folder if folder else ws.root
            try:
                with os.scandir(where) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except (FileNotFoundError, NotADirectoryError):
                if not folder:
                    raise
                continue  # vanished since it was listed: whatever was cached under it is absent
            except OSError:
                if not folder:
                    raise
                res.gaps.append((folder, "unreadable"))
                shadowed.add(folder)
                continue
            for entry in entries:
                units += 1
                rel = entry.name if not folder else f"{folder}/{entry.name}"
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    present.add(rel)
                    res.gaps.append((_printable(rel), "unreadable"))  # a name no URI can carry
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_link = not is_dir and entry.is_symlink()
                    is_file = not is_dir and not is_link and entry.is_file(follow_symlinks=False)
                except OSError:
                    present.add(rel)
                    res.gaps.append((rel, "unreadable"))
                    continue
                if is_dir:
                    if ws.in_store(rel) or rules.match(rel, True):
                        shadowed.add(rel)
                    else:
                        stack.append(rel)
                        res.folders.add(rel)  # a folder is part of the tree (model/images.py)
                elif is_link:
                    present.add(rel)
                    if not rules.match(rel, False) and not _editor_lock(entry.name):
                        res.gaps.append((rel, "symlink"))
                    shadowed.add(rel)  # if it used to be a folder, its old contents are not "absent"
                elif is_file:
                    present.add(rel)
                    if not rules.match(rel, False):
                        if pool is None and ParallelReader.wanted(objects, res.hashed):
                            pool = ParallelReader(ws, objects, max_bytes=max_bytes)
                        units += _visit_file(ws, objects, cache, entry, rel, res, present, started,
                                             max_bytes, verify_objects, pool)
                if pool is not None:
                    units += _take(pool.done(block=False, max_groups=1), cache, res, present,
                                   started)
                    while pool.full:  # bounded: wait for the workers, a short slice at a time
                        units += _take(pool.done(block=True, max_groups=1), cache, res, present,
                                       started)
                        if settle is not None:
                            yield from settle()
                        yield SweepProgress(res.walked, res.hashed)
                        step_end = time.perf_counter() + STEP_SECONDS
                if settle is not None:
                    yield from settle()  # the pack's compressing thread, waited for in slices
                if units >= budget_files or time.perf_counter() >= step_end:
                    units = 0
                    yield SweepProgress(res.walked, res.hashed)
                    step_end = time.perf_counter() + STEP_SECONDS
        while pool is not None and len(pool):  # the last reads still in the workers
            units += _take(pool.done(block=True, max_groups=1), cache, res, present, started)
            if settle is not None:
                yield from settle()
            yield SweepProgress(res.walked, res.hashed)
    finally:
        if pool is not None:
            pool.close()
    for rel in list(cache):
        if rel in res.images:
            continue
        if rel not in present and not _under(rel, shadowed):
            res.absent.add(rel)
        cache.drop(rel)
    return res


def _visit_file(ws, objects, cache, entry, rel, res, present, started, max_bytes, verify,
                pool=None) -> int:
    """Look at one regular file; returns the extra budget units spent hashing."""
    res.walked += 1
    try:
        st = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        present.discard(rel)
        return 0
    except OSError:
        res.gaps.append((rel, "unreadable"))
        cache.drop(rel)
        return 0
    if st.st_size > max_bytes:
        res.gaps.append((rel, "too-large"))
        cache.drop(rel)
        return 0
    res.modes[rel] = one_mode(st.st_mode & 0o7777)  # shared ints: model/known.py
    digest = cache.fresh(rel, st)
    if digest is not None and (not verify or objects.has(digest)):
        res.images[rel] = digest
        return 0
    if pool is not None and pool.takes(st.st_size):
        pool.submit(rel, st.st_size)  # its result comes back through _take
        return 1
    return _apply(rel, read_image(ws, rel, objects, max_bytes=max_bytes, check_parents=False),
                  cache, res, present, started)


def _take(done, cache, res, present, started) -> int:
    return sum(_apply(rel, got, cache, res, present, started) for rel, got in done)


def _apply(rel, got, cache, res, present, started) -> int:
    """Record one read's outcome; returns the budget units it cost."""
    if got.status == "ok":
        assert got.digest is not None and got.stat is not None
        res.hashed += 1
        res.images[rel] = got.digest
        cache.record(rel, got.stat, got.digest, started)
        return 1 + (got.size or 0) // _HASH_UNIT
    cache.drop(rel)
    if got.status == "absent":
        present.discard(rel)  # deleted between the listing and the open
    elif got.status in ("too-large", "unreadable", "symlink"):
        res.gaps.append((rel, got.status))
    return 1


def sweep(ws: Workspace, objects, cache: StatCache, *, max_bytes: int,
          rules: IgnoreRules | None = None, budget_files: int = 64,
          verify_objects: bool = True) -> SweepResult:
    """Run `iter_sweep` to completion."""
    gen = iter_sweep(ws, objects, cache, max_bytes=max_bytes, rules=rules,
                     budget_files=budget_files, verify_objects=verify_objects)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def _folders_below(ws: Workspace, top: str, rules: IgnoreRules, res: SweepResult) -> int:
    """A dirty folder and every folder below it (a `mkdir -p` raises one event for its top): they
    are in the tree now. Returns the entries looked at (budget units)."""
    units, stack = 0, [top]
    while stack:
        folder = stack.pop()
        res.folders.add(folder)
        res.scope.add(folder + "/")
        try:
            with os.scandir(ws.root / folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            units += 1
            rel = f"{folder}/{entry.name}"
            try:
                if entry.is_dir(follow_symlinks=False) and not ws.in_store(rel) \
                        and not rules.match(rel, True):
                    stack.append(rel)
            except OSError:
                continue
    return units


def iter_dirty(ws: Workspace, objects, cache: StatCache, dirty: set[str], *, max_bytes: int,
               rules: IgnoreRules, budget_files: int = 64,
               verify_objects: bool = True) -> Generator[SweepProgress, None, SweepResult]:
    """The sweep of a healthy watcher: look at the `dirty` paths only (see capture/watcher.py).

    The result covers exactly `result.scope` (the paths looked at); the recorder leaves every other
    path as it was. Same rules as `iter_sweep` for what each path is: an image, absent, a gap, or
    neither (ignored, a folder, a FIFO). A path whose parent folder is now a link or gone is absent
    only if it is gone; the fence in `read_image` refuses to read through a linked folder.
    """
    started = time.time_ns()
    res = SweepResult(scope=set())
    units = 0
    step_end = time.perf_counter() + STEP_SECONDS
    for rel in sorted(dirty):
        units += 1
        if ws.in_store(rel) or rules.ignored(rel, False):
            continue
        res.scope.add(rel)
        if not rules.ignored(rel, True):
            res.scope.add(rel + "/")  # the folder at rel, if there is or was one, was looked at too
        try:
            st = os.lstat(ws.root / rel)
        except (FileNotFoundError, NotADirectoryError):
            if rel in cache:  # as in the walk; a known path that is gone the recorder sees anyway
                res.absent.add(rel)
            cache.drop(rel)
            continue
        except OSError:
            res.gaps.append((rel, "unreadable"))
            continue
        if stat.S_ISLNK(st.st_mode):
            cache.drop(rel)
            if not _editor_lock(rel.rsplit("/", 1)[-1]):
                res.gaps.append((rel, "symlink"))
            continue
        if not stat.S_ISREG(st.st_mode):
            res.scope.discard(rel)  # a folder (its files have their own events) or a FIFO
            cache.drop(rel)
            if stat.S_ISDIR(st.st_mode) and not rules.ignored(rel, True):
                units += _folders_below(ws, rel, rules, res)
            continue
        res.walked += 1
        if st.st_size > max_bytes:
            res.gaps.append((rel, "too-large"))
            cache.drop(rel)
            continue
        # As the walk does: without the bits, a chmod alone was no change to a live owner (issue
        # 43, E), and every change it folded in forgot the file's bits.
        res.modes[rel] = one_mode(st.st_mode & 0o7777)
        digest = cache.fresh(rel, st)
        if digest is not None and (not verify_objects or objects.has(digest)):
            res.images[rel] = digest
            continue
        got = read_image(ws, rel, objects, max_bytes=max_bytes, check_parents=True)
        if got.status == "ok":
            res.hashed += 1
            res.images[rel] = got.digest
            cache.record(rel, got.stat, got.digest, started)
            units += 1 + (got.size or 0) // _HASH_UNIT
        else:
            cache.drop(rel)
            if got.status in ("too-large", "unreadable", "symlink"):
                res.gaps.append((rel, got.status))
        if units >= budget_files or time.perf_counter() >= step_end:
            units = 0
            yield SweepProgress(res.walked, res.hashed)
            step_end = time.perf_counter() + STEP_SECONDS
    return res
