"""The seam's composite operations: replace a file atomically, publish one exclusively.

Durability is decided here once: temp file in the same folder, write, fsync, rename, fsync of the
folder. A crash at any instant leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import errno as _errno
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from . import anchored
from .layer import tick as _tick
from .ops import StrPath, append, create, discard, drop_cached, fsync, fsync_dir, link, rename, temp_path


def _write_all(fd: int, data: bytes | Iterable[bytes]) -> None:
    if isinstance(data, (bytes, bytearray, memoryview)):
        append(fd, data)
    else:
        for chunk in data:
            if chunk:
                append(fd, chunk)


def write_atomic(path: StrPath, data: bytes | Iterable[bytes], *, mode: int = 0o600,
                 sync: bool = True, drop_cache: bool = False) -> None:
    """Replace `path` with `data` so that a crash leaves the old file or the new one, never a mix.

    Temp file in the same folder, write, fsync, rename over the target, fsync the folder. With
    sync=False the two fsyncs are skipped (the caller batches durability). The temp file is removed
    if anything fails before the rename. `drop_cache` (with sync): see `drop_cached`.
    """
    tmp = temp_path(path)
    fd = create(tmp, mode)
    try:
        try:
            _write_all(fd, data)
            if sync:
                fsync(fd)
                if drop_cache:
                    drop_cached(fd)
        finally:
            os.close(fd)
        rename(tmp, path)
    except BaseException:
        discard(tmp)
        raise
    if sync:
        fsync_dir(Path(path).parent)


def write_temp(path: StrPath, data: bytes | Iterable[bytes], *, mode: int = 0o600) -> Path:
    """Write `data` to a fresh temp file next to `path` and return its name, unsynced and not renamed:
    for a caller that makes many files durable in one pass (`syncfs_or_fsync`) before it renames
    each into place. The temp file is removed if anything fails."""
    tmp = temp_path(path)
    fd = create(tmp, mode)
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except BaseException:
        discard(tmp)
        raise
    return tmp


def create_exclusive(path: StrPath, data: bytes, *, mode: int = 0o600) -> bool:
    """Publish a new file with `data` only if `path` does not exist yet; False if it does.

    The bytes go to a synced temp file first; the final name never shows a partial record. Three ways
    to publish it, best first: a hard link (fails if the name exists, so it is the compare-and-swap),
    `renameat2(RENAME_NOREPLACE)` where the file system has no hard links, and else an exclusive
    create of an empty placeholder that the temp file is then renamed over. In the last case a crash
    can leave a 0-byte file under the final name, never a partial one; readers treat a 0-byte record
    as an unfinished publication (`is_placeholder`).
    """
    p = Path(path)
    if os.path.lexists(p):
        return False
    tmp = temp_path(p)
    fd = create(tmp, mode)
    try:
        try:
            append(fd, data)
            fsync(fd)
        finally:
            os.close(fd)
        try:
            link(tmp, p)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in _NO_LINK_ERRNOS:
                raise
            if not _publish_without_link(tmp, p):
                return False
    finally:
        discard(tmp)
    fsync_dir(p.parent)
    return True


_NO_LINK_ERRNOS = (_errno.EPERM, _errno.ENOTSUP, _errno.EOPNOTSUPP, _errno.EXDEV, _errno.EMLINK)


def _publish_without_link(tmp: Path, p: Path) -> bool:
    """Move the complete temp file to `p` unless `p` exists; False if it does."""
    try:
        rename_noreplace(tmp, p)
        return True
    except FileExistsError:
        return False
    except NotImplementedError:
        pass
    try:
        placeholder = create(p, 0o600)  # claims the name; empty, so never a partial record
    except FileExistsError:
        return False
    os.close(placeholder)
    rename(tmp, p)
    return True


def is_placeholder(path: StrPath) -> bool:
    """A 0-byte regular file left by a publication that crashed before its rename (see above)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return st.st_size == 0 and (st.st_mode & 0o170000) == 0o100000


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
_libc_renameat2 = None
_renameat2_loaded = False


def _load_renameat2():
    """libc's renameat2, looked up on first use (a short command never pays for ctypes)."""
    global _libc_renameat2, _renameat2_loaded
    if not _renameat2_loaded:
        _renameat2_loaded = True
        if sys.platform.startswith("linux"):
            import ctypes

            try:  # the process's own symbols include libc's: no library search (ldconfig) needed
                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                               ctypes.c_uint]
                _libc_renameat2 = fn
            except (OSError, AttributeError):
                _libc_renameat2 = None
    return _libc_renameat2


def rename_noreplace(src: StrPath, dst: StrPath) -> None:
    """Rename that fails with FileExistsError instead of replacing `dst` (Linux renameat2).

    NotImplementedError where the system or the file system does not offer it (nothing changed)."""
    renameat2 = _load_renameat2()
    if renameat2 is None:
        raise NotImplementedError("renameat2 is not available")
    _tick("rename", dst, src)
    with anchored.at_pair(src, dst) as (src_at, src_name, dst_at, dst_name):
        rc = renameat2(_AT_FDCWD if src_at is None else src_at, os.fsencode(src_name),
                             _AT_FDCWD if dst_at is None else dst_at, os.fsencode(dst_name),
                             _RENAME_NOREPLACE)
    if rc == 0:
        return
    import ctypes

    err = ctypes.get_errno()
    if err == _errno.EEXIST:
        raise FileExistsError(err, os.strerror(err), str(dst))
    if err in (_errno.EINVAL, _errno.ENOSYS, _errno.ENOTSUP, _errno.EOPNOTSUPP):
        raise NotImplementedError(os.strerror(err))
    raise OSError(err, os.strerror(err), str(dst))

