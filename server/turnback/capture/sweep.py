"""The pre-turn sweep: walk the workspace, hash only what changed since the last look.

`iter_sweep` is a generator so the caller can interleave it with an event loop: it yields a
`SweepProgress` after every `budget_files` units of work and returns (as the StopIteration value) a
`SweepResult`. `sweep` runs it to completion. The walk uses `os.scandir`, never follows a symbolic link
(a link, to a file or a folder, is a capture gap), prunes ignored folders before descending, and skips
turnback's store and every `.git` folder.

The stat cache that lets a sweep skip unchanged files, and why it is safe against racy writes, are
`capture/statcache.py`.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Generator
from dataclasses import dataclass, field

from ..model.known import one_mode
from ..workspace.fence import Workspace
from .ignore import IgnoreRules
from .parallel import ParallelReader
from .reader import read_image
from .statcache import StatCache

_HASH_UNIT = 1 << 20  # a hashed file costs one budget unit per MiB on top of its walk unit
# A step also ends after this long, whatever its units: what a unit costs varies tenfold (a stat, an
# object confirmed by reading it back, a pack block cut), and on a loop a step is the least it holds.
STEP_SECONDS = 0.002


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
            # A folder (its files have their own events) or a FIFO: no file at rel, so a file the
            # session knew there is gone, as the walk finds it (rel stays in scope; issue 43's long
            # run, seed 5010: a turn that put a folder in a file's place lost the file's removal,
            # and a rewind removed the folder without bringing the file back).
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
