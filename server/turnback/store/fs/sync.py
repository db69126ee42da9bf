"""Batched durability: many files or folders made durable in one pass (syncfs where it pays).

One syncfs() per file system beats an fsync per file past a few dozen files
(docs/performance.md); below that, plain fsyncs. Folder entries need their folders synced:
`sync_folders`, or `folder_syncs` + `sync_step` for a caller that does it a step at a time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from .layer import tick as _tick
from .ops import StrPath, _open_at, fsync, fsync_dir

_SYNCFS_MIN = 16  # below this many files, plain fsyncs are cheaper than syncing a whole file system
_libc_syncfs = None
_syncfs_loaded = False


def _load_syncfs():
    """libc's syncfs, looked up on first use among the symbols the interpreter already loaded (the
    process's own libc): `ctypes.util.find_library` runs ldconfig and imports shutil and bz2, which a
    command line's settle, now syncing its batch with syncfs, should not pay for."""
    global _libc_syncfs, _syncfs_loaded
    if not _syncfs_loaded:
        _syncfs_loaded = True
        if sys.platform.startswith("linux"):
            import ctypes

            for name in (None, "libc.so.6"):
                try:
                    found = ctypes.CDLL(name, use_errno=True).syncfs
                except (OSError, AttributeError):
                    continue
                found.argtypes = [ctypes.c_int]
                _libc_syncfs = found
                break
    return _libc_syncfs


def syncfs_or_fsync(paths: Iterable[StrPath], *, at_least: int = _SYNCFS_MIN) -> None:
    """Make the contents of many files durable in one pass.

    On Linux with `at_least` files or more, one syncfs() per file system; otherwise one fsync per
    file. Folder entries are not covered: the caller still syncs the folders it renamed into
    (`sync_folders`).
    """
    paths = list(paths)
    if not paths:
        return
    if len(paths) >= at_least and _load_syncfs() is not None:
        _syncfs_each(paths)
        return
    for p in paths:
        fd = _open_at(p, os.O_RDONLY)
        try:
            fsync(fd)
        finally:
            os.close(fd)


def sync_folders(folders: Iterable[StrPath], *, at_least: int = _SYNCFS_MIN) -> None:
    """Make the names in these folders durable: with `at_least` folders or more on Linux, one
    syncfs() per file system (which also makes every file's contents durable), otherwise one
    fsync per folder."""
    for step in folder_syncs(sorted({Path(f) for f in folders}), syncfs_from=at_least):
        sync_step(step)


def _syncfs_each(paths: list) -> None:
    """One syncfs() per file system these paths are on."""
    done: set[int] = set()
    for p in paths:
        dev = os.stat(p, follow_symlinks=False).st_dev
        if dev in done:
            continue
        syncfs_at(p)
        done.add(dev)


def syncfs_at(path: StrPath) -> None:
    """One syncfs() of the file system holding `path` (a file or a folder): every write, name and
    permission change on it is durable once it returns. NotImplementedError where there is none."""
    syncfs = _load_syncfs()
    if syncfs is None:
        raise NotImplementedError("syncfs is not available")
    _tick("syncfs", path)
    fd = _open_at(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def folder_syncs(folders: Iterable[StrPath], *, syncfs_from: int) -> list[tuple[str, list]]:
    """The steps that make the names in many folders durable, for `sync_step` to run one by one:
    ("fsync_dir", [folder]) for each when there are fewer than `syncfs_from` (or no syncfs here),
    else ("syncfs", the folders on one file system) for each file system they are on."""
    folders = list(folders)
    if len(folders) < syncfs_from or _load_syncfs() is None:
        return [("fsync_dir", [f]) for f in folders]
    by_dev: dict[int, list] = {}
    for f in folders:
        by_dev.setdefault(os.stat(f, follow_symlinks=False).st_dev, []).append(f)
    return [("syncfs", group) for group in by_dev.values()]


def sync_step(step: tuple[str, list]) -> None:
    kind, group = step
    (syncfs_at if kind == "syncfs" else fsync_dir)(group[0])

