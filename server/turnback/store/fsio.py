"""The file-system seam: every mutation turnback makes goes through this module.

Two reasons for one seam. Durability is decided in one place (temp file, fsync, rename, fsync of the
folder), and tests can fail or kill the process at the Nth mutating operation to prove that a crash at
any instant leaves either the old state or the new one.

Each mutating system call counts as one operation: create, write, fsync, fsync_dir, rename, link,
symlink, unlink, mkdir, rmdir, truncate, chmod, utime, syncfs. A fault plan raises `FaultInjected` (or exits the process
with CRASH_EXIT) *before* the operation numbered `fail_at` (or `crash_at`) runs; numbering starts at 1
when the plan is installed. Without a plan the cost is one global lookup per operation.

Fault models (all in `FaultPlan`, so every loop uses the same seam):
- fail at operation N (`fail_at`), or from N on (`sticky`, like a device that went away);
- a full disk (`disk_full_at`): from operation N on, creates, writes, fsyncs, mkdirs and links fail
  with ENOSPC while unlinks, renames and rmdirs still succeed, as on a real full file system;
- a crash at operation N (`crash_at`): the process exits with CRASH_EXIT. Plain, that is process
  death (unsynced data survives in the page cache); with `lose_unsynced` it is a power cut: every
  write not followed by an fsync of its file and every name change not followed by an fsync of its
  folder is undone first (`store/crashfs.py`), so ordering is proven against power loss too.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Union

from . import anchored
from .anchored import fence_root  # noqa: F401  (registered by the fence and the store)

CRASH_EXIT = 86
TEMP_MARK = ".tbtmp."  # every temp file name contains this; fsck and sweeps recognise it

StrPath = Union[str, "os.PathLike[str]"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class FaultInjected(OSError):
    """Raised by a fault plan in place of a real I/O error."""


class FaultPlan:
    """Fail (raise) or crash (exit) at one numbered mutating operation; see the module doc.

    With `sticky=True` every operation from `fail_at` on fails. `faulted` counts the operations the
    plan actually failed (a loop that faulted nothing proves nothing)."""

    def __init__(self, fail_at: int | None = None, crash_at: int | None = None,
                 errno: int = _errno.EIO, *, sticky: bool = False, disk_full_at: int | None = None,
                 lose_unsynced: bool = False):
        self.fail_at = fail_at
        self.crash_at = crash_at
        self.errno = errno
        self.sticky = sticky
        self.disk_full_at = disk_full_at
        self.count = 0
        self.faulted = 0
        self._lock = threading.Lock()
        self.log: list[str] = []
        self.unsynced = None
        if lose_unsynced:
            from .crashfs import UnsyncedJournal
            self.unsynced = UnsyncedJournal()

    def tick(self, op: str, path: object, src: object = None) -> None:
        # One at a time: helper threads (readers, the pack's writer) do file-system work too, and
        # each operation must get its own number.
        with self._lock:
            self.count += 1
            self.log.append(f"{op} {path}")
            n = self.count
            if self.crash_at is not None and n == self.crash_at:
                self.crash()
            at = self.fail_at
            if at is not None and (n == at or (self.sticky and n > at)):
                self.faulted += 1
                raise FaultInjected(self.errno, f"injected fault at operation {n} ({op})",
                                    str(path))
            if self.disk_full_at is not None and n >= self.disk_full_at and op in SPACE_OPS:
                self.faulted += 1
                raise FaultInjected(_errno.ENOSPC, f"injected full disk at operation {n} ({op})",
                                    str(path))
            if self.unsynced is not None:
                self.unsynced.before(op, path, src)

    def crash(self) -> None:
        """Stop here, as a power cut would (with `lose_unsynced`) or as a killed process."""
        if self.unsynced is not None:
            self.unsynced.lose_unsynced()
        # Flush nothing, run no handlers: as close to a power cut as a process can get.
        os._exit(CRASH_EXIT)


# What a full disk refuses; unlink, rename and rmdir free or keep space and still succeed.
SPACE_OPS = frozenset({"create", "write", "fsync", "fsync_dir", "mkdir", "link", "symlink",
                       "truncate", "chmod", "utime", "syncfs"})

_plan: FaultPlan | None = None


def _tick(op: str, path: object, src: object = None) -> None:
    if _plan is not None:
        _plan.tick(op, path, src)


@contextlib.contextmanager
def faults(fail_at: int | None = None, crash_at: int | None = None, *,
           errno: int = _errno.EIO, sticky: bool = False, disk_full_at: int | None = None,
           lose_unsynced: bool = False) -> Iterator[FaultPlan]:
    """Install a fault plan for the duration of the block; yields it (`.count`, `.faulted`, `.log`)."""
    global _plan
    previous = _plan
    plan = FaultPlan(fail_at, crash_at, errno, sticky=sticky, disk_full_at=disk_full_at,
                     lose_unsynced=lose_unsynced)
    _plan = plan
    try:
        yield plan
    finally:
        _plan = previous


def install(plan: FaultPlan | None) -> None:
    """Install (or with None, remove) a plan without a block; for long-lived processes under test."""
    global _plan
    _plan = plan


def install_from_env(environ: dict | None = None) -> FaultPlan | None:
    """Honour TURNBACK_CRASH_AT=N / TURNBACK_FAIL_AT=N / TURNBACK_DISK_FULL_AT=N (and
    TURNBACK_FAULT_STICKY=1, TURNBACK_CRASH_MODEL=lose-unsynced) so a test can fault a subprocess."""
    env = os.environ if environ is None else environ
    crash = env.get("TURNBACK_CRASH_AT")
    fail = env.get("TURNBACK_FAIL_AT")
    full = env.get("TURNBACK_DISK_FULL_AT")
    if not crash and not fail and not full:
        return None
    plan = FaultPlan(fail_at=int(fail) if fail else None, crash_at=int(crash) if crash else None,
                     sticky=env.get("TURNBACK_FAULT_STICKY") == "1",
                     disk_full_at=int(full) if full else None,
                     lose_unsynced=env.get("TURNBACK_CRASH_MODEL") == "lose-unsynced")
    install(plan)
    return plan


# ---------------------------------------------------------------- primitive operations


def temp_path(path: StrPath) -> Path:
    """A fresh temp name next to `path` (same folder, hence same file system, so rename is atomic)."""
    p = Path(path)
    return p.with_name(f".{p.name}{TEMP_MARK}{os.urandom(6).hex()}")


def is_temp_name(name: str) -> bool:
    return TEMP_MARK in name


def create(path: StrPath, mode: int = 0o600) -> int:
    """Create a new file exclusively (never through a symlink); return a write fd."""
    _tick("create", path)
    with anchored.at(path) as (at, name):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode,
                     dir_fd=at)
    try:
        os.fchmod(fd, mode)  # the umask must not decide the permissions of store files
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_for_append(path: StrPath, mode: int = 0o600) -> int:
    """Open (creating if needed) for appending; never follows a symlink. Counts as a create."""
    _tick("create", path)
    with anchored.at(path) as (at, name):
        return os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC, mode,
                       dir_fd=at)


def _fileno(fd_or_file) -> int:
    return fd_or_file if isinstance(fd_or_file, int) else fd_or_file.fileno()


def append(fd_or_file, data: bytes) -> None:
    """Write all of `data` at the fd's position (the end, for O_APPEND fds)."""
    fd = _fileno(fd_or_file)
    _tick("write", fd)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


write = append


def fsync(fd_or_file) -> None:
    fd = _fileno(fd_or_file)
    _tick("fsync", fd)
    os.fsync(fd)


def drop_cached(fd: int) -> None:
    """Give a synced file's pages back to the kernel (advice: a failure changes nothing).

    A big object just written is cold: what reads it again (a restore, the repack) is rare and
    not waiting. Kept in the page cache, it pushes out what the user's own programs read; and the
    next write must find new pages, where a page just given back is reused at once. Measured on
    this project's VM: 1 MiB written into new pages 2.9 ms, into pages given back 0.13 ms, the
    advice itself 0.02 ms (docs/performance.md, "capture on save")."""
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except (OSError, AttributeError):  # not every system takes the advice
        pass


def fsync_dir(path: StrPath) -> None:
    """Make the names in a folder durable (new, renamed and removed entries)."""
    _tick("fsync_dir", path)
    with anchored.at(path) as (at, name):
        fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=at)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rename(src: StrPath, dst: StrPath) -> None:
    """Atomically replace dst with src (POSIX rename). The caller syncs the folder."""
    _tick("rename", dst, src)
    with anchored.at_pair(src, dst) as (src_at, src_name, dst_at, dst_name):
        os.replace(src_name, dst_name, src_dir_fd=src_at, dst_dir_fd=dst_at)


def link(src: StrPath, dst: StrPath) -> None:
    """Hard link; fails with FileExistsError if dst exists, which makes it an atomic exclusive publish."""
    _tick("link", dst, src)
    with anchored.at_pair(src, dst) as (src_at, src_name, dst_at, dst_name):
        os.link(src_name, dst_name, src_dir_fd=src_at, dst_dir_fd=dst_at, follow_symlinks=False)


def symlink(target: str, path: StrPath) -> None:
    _tick("symlink", path)
    with anchored.at(path) as (at, name):
        os.symlink(target, name, dir_fd=at)


def unlink(path: StrPath, missing_ok: bool = False) -> None:
    _tick("unlink", path)
    try:
        with anchored.at(path) as (at, name):
            os.unlink(name, dir_fd=at)
    except FileNotFoundError:
        if not missing_ok:
            raise


def mkdir(path: StrPath, mode: int = 0o700, parents: bool = True, exist_ok: bool = True,
          sync: bool = True) -> None:
    """Create a folder (and missing parents), each with `mode` exactly; with `sync`, durably."""
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        if not exist_ok:
            raise FileExistsError(_errno.EEXIST, "folder exists", str(p))
        return
    if parents and not p.parent.is_dir():
        mkdir(p.parent, mode, parents=True, exist_ok=True, sync=sync)
    _tick("mkdir", p)
    try:
        with anchored.at(p) as (at, name):
            os.mkdir(name, mode, dir_fd=at)
    except FileExistsError:
        if not exist_ok or not p.is_dir() or p.is_symlink():
            raise
        return
    _fchmod_dir(p, mode)  # the umask must not decide it either
    if sync:
        fsync_dir(p.parent)


def _fchmod_dir(p: Path, mode: int) -> None:
    """Set a new folder's mode through a descriptor opened without following links: a folder swapped
    for a link since the mkdir is refused (ELOOP/ENOTDIR), never chmodded through."""
    with anchored.at(p) as (at, name):
        fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=at)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def rmdir(path: StrPath) -> None:
    _tick("rmdir", path)
    with anchored.at(path) as (at, name):
        os.rmdir(name, dir_fd=at)


def truncate(path_or_fd, size: int) -> None:
    _tick("truncate", path_or_fd)
    if isinstance(path_or_fd, int):
        os.truncate(path_or_fd, size)
        return
    fd = _open_at(path_or_fd, os.O_WRONLY)
    try:
        os.truncate(fd, size)
    finally:
        os.close(fd)


def chmod(path: StrPath, mode: int, *, sync: bool = False) -> None:
    """Set an existing entry's permission bits; with `sync`, durably (an fsync of that file: a
    power cut loses a mode change no fsync of its inode made durable)."""
    _tick("chmod", path)
    try:  # never chmod through a link: through a descriptor opened without following one
        fd = _open_at(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno not in (_errno.ENXIO, _errno.EOPNOTSUPP, _errno.EACCES) or _O_PATH is None:
            raise
        if sync:
            raise
        _chmod_by_o_path(path, mode)  # a socket (or a file we may not read): no readable fd
        return
    try:
        os.fchmod(fd, mode)
        if sync:
            fsync(fd)
    finally:
        os.close(fd)


_O_PATH = getattr(os, "O_PATH", None)


def _chmod_by_o_path(path: StrPath, mode: int) -> None:
    """chmod an entry that cannot be opened for reading, as glibc's fchmodat(AT_SYMLINK_NOFOLLOW)
    does: an O_PATH|O_NOFOLLOW descriptor, refused if it is a link, changed through /proc."""
    fd = _open_at(path, _O_PATH)
    try:
        import stat as _stat

        if _stat.S_ISLNK(os.fstat(fd).st_mode):
            raise OSError(_errno.ELOOP, "refusing to chmod a symbolic link", str(path))
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)


def utime(path: StrPath, times: tuple[float, float] | None = None) -> None:
    _tick("utime", path)
    with anchored.at(path) as (at, name):
        os.utime(name, times, dir_fd=at, follow_symlinks=False)


def _open_at(path: StrPath, flags: int) -> int:
    """Open an existing entry below a fenced root without following any link on the way."""
    with anchored.at(path) as (at, name):
        return os.open(name, flags | _NOFOLLOW | _CLOEXEC, dir_fd=at)


# ---------------------------------------------------------------- composite operations


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


def discard(path: StrPath) -> None:
    """Best-effort cleanup after a failure; must never mask the original error."""
    try:
        unlink(path, missing_ok=True)
    except OSError:
        pass


# ---------------------------------------------------------------- batched durability

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
    if _load_syncfs() is None:
        raise NotImplementedError("syncfs is not available")
    _tick("syncfs", path)
    fd = _open_at(path, os.O_RDONLY)
    try:
        if _libc_syncfs(fd) != 0:
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


# ---------------------------------------------------------------- reading helpers (not counted)


def open_read(path: StrPath) -> int:
    """Open for reading without following a link (none at all below a fenced root)."""
    return _open_at(path, os.O_RDONLY)


def read_file(path: StrPath) -> bytes:
    return read_file_and_stat(path)[0]


def read_file_and_stat(path: StrPath) -> tuple[bytes, os.stat_result]:
    """`read_file`, with the stat of the very file read (taken on its descriptor)."""
    fd = open_read(path)
    try:
        st = os.fstat(fd)
        return b"".join(iter_read(fd, st.st_size)), st
    finally:
        os.close(fd)


READ_CHUNK = 1 << 20


def read_size(total: int, expected: int, chunk: int = READ_CHUNK) -> int:
    """How much to ask of the next read of a file `expected` bytes long (its fstat size) after
    `total`: one byte past the expected end, so that a short read ending there is its end. A fixed
    1 MiB request allocates a 1 MiB buffer however small the file: an mmap and a munmap each time
    (past glibc's mmap threshold), whose TLB shootdowns stall every other thread of the process."""
    return chunk if total > expected else min(chunk, expected - total + 1)


def iter_read(fd: int, expected: int, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """A regular file's bytes from its offset to its end, in reads sized by `read_size`. A read
    shorter than asked that ends at `expected` is the end (no read more to see it); one that does
    not, or a file that grew, reads on until a read returns nothing."""
    total = 0
    while True:
        want = read_size(total, expected, chunk)
        b = os.read(fd, want)
        if not b:
            return
        yield b
        total += len(b)
        if len(b) < want and total == expected:
            return


install_from_env()
