"""Paths resolved from a fenced root without following any link: the openat-style half of the seam.

`workspace/fence.py` checks a path component by component before each write; between that check and
the write, a racing process could swap a checked folder for a symbolic link. This module closes that
window for good: a root registered with `fence_root` (the workspace root, the folder holding the
store) is opened afresh for each operation, every folder below it is opened with
`O_NOFOLLOW | O_DIRECTORY` relative to the one above, and the operation itself runs on the last
folder's descriptor (`dir_fd=`). A folder that is a link at that instant fails the walk (ELOOP or
ENOTDIR), so nothing can be redirected, whatever happens between check and use.

Callers keep passing paths: `at(path)` finds the nearest registered root above the path and does the
walk. A path under no registered root (tests' scratch files) is used as it is. The store is walked
from the workspace root when it lives inside it, so a `.turnback` moved away and linked back
mid-session is refused (the store's *parent* is what `Store.open` registers).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _CLOEXEC

_roots: set[str] = set()
SUPPORTED = os.open in os.supports_dir_fd and bool(_NOFOLLOW) and bool(_DIRECTORY)


# folder -> its outermost registered root (or None): the store's reads open thousands of files in a
# few folders, and walking each one's path up again was a fifth of an open's cost
_root_of_folder: dict[str, str | None] = {}


def fence_root(path: str | os.PathLike) -> None:
    """Resolve every later path below `path` from it without following links (idempotent)."""
    if SUPPORTED:
        _roots.add(os.path.normpath(os.path.abspath(os.fspath(path))))
        _root_of_folder.clear()


def root_of(path: str) -> str | None:
    """The outermost registered root above `path`, or None. Outermost, so that a store registered
    inside a workspace is still reached from the workspace root, through no link at all."""
    folder = os.path.dirname(path)
    try:
        return _root_of_folder[folder]
    except KeyError:
        pass
    found = None
    cur = folder
    while True:
        if cur in _roots:
            found = cur
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    if len(_root_of_folder) > 4096:
        _root_of_folder.clear()
    _root_of_folder[folder] = found
    return found


def open_parent(path: str | os.PathLike) -> tuple[int | None, str]:
    """(descriptor of the parent folder reached without links, final name), or (None, path) for a
    path under no registered root. The caller closes the descriptor."""
    p = os.path.normpath(os.path.abspath(os.fspath(path)))
    root = root_of(p) if _roots else None
    if root is None:
        return None, p
    folder = os.path.dirname(p)  # normalised, and root is one of its ancestors (or itself)
    below = "." if folder == root else folder[len(root.rstrip(os.sep)) + 1:]
    fd = os.open(root, _DIR_FLAGS)
    try:
        if below != ".":
            nxt = _openat2_dir(fd, below)
            if nxt is None:  # no openat2 here: one O_NOFOLLOW open per folder
                for name in below.split(os.sep):
                    nxt = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
            else:
                os.close(fd)
                fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, os.path.basename(p)


# Linux 5.6+: openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH) resolves the whole relative path in one
# system call with the same guarantee as the walk (no link anywhere, never above the root).
_OPENAT2_NR = {"x86_64": 437, "aarch64": 437, "arm64": 437}.get(os.uname().machine)
_RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x04, 0x08
_openat2 = None
_openat2_loaded = False


def _setup_openat2():
    """Look openat2 up on first use: a short command (an agent hook) never pays for ctypes."""
    global _openat2, _openat2_loaded
    _openat2_loaded = True
    if _OPENAT2_NR is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:  # the process's own symbols include libc's: no library search (ldconfig) needed
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                    ("resolve", ctypes.c_uint64)]

    syscall.restype = ctypes.c_long
    how = OpenHow(_DIR_FLAGS, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_BENEATH)
    size = ctypes.c_size_t(ctypes.sizeof(how))

    def openat2(dir_fd: int, rel: str) -> int:
        fd = syscall(_OPENAT2_NR, ctypes.c_int(dir_fd), ctypes.c_char_p(os.fsencode(rel)),
                     ctypes.byref(how), size)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), rel)
        return fd

    root = os.open("/", _DIR_FLAGS)
    try:  # probe once: an old kernel answers ENOSYS, a sandbox may refuse it
        os.close(openat2(root, "."))
    except OSError:
        return
    finally:
        os.close(root)
    _openat2 = openat2


def _openat2_dir(dir_fd: int, rel: str) -> int | None:
    if not _openat2_loaded:
        _setup_openat2()
    if _openat2 is None:
        return None
    return _openat2(dir_fd, rel)


@contextlib.contextmanager
def at_pair(src: str | os.PathLike, dst: str | os.PathLike):
    """`at` for two paths (rename, link): one walk when they share a folder, as temp files do."""
    a = os.path.abspath(os.fspath(src))
    b = os.path.abspath(os.fspath(dst))
    if os.path.dirname(a) == os.path.dirname(b):
        with at(a) as (fd, name):
            yield fd, name, fd, (b if fd is None else os.path.basename(b))
        return
    with at(a) as (src_fd, src_name), at(b) as (dst_fd, dst_name):
        yield src_fd, src_name, dst_fd, dst_name


@contextlib.contextmanager
def at(path: str | os.PathLike) -> Iterator[tuple[int | None, str]]:
    """`open_parent` as a block: yields (dir_fd or None, name) and closes the descriptor."""
    fd, name = open_parent(path)
    try:
        yield fd, name
    finally:
        if fd is not None:
            os.close(fd)

