"""Read the current disk image of one workspace file into the object store, without ever following a
symbolic link and without blocking on special files.

`read_image` is the only way capture reads workspace bytes. Its answer is a status, not an exception,
for everything the file system can legitimately throw at us (the file vanished, is a link, is too big,
is a FIFO, cannot be read); errors from the *store* side (disk full while writing an object) and
invalid paths (outside the fence) are raised, because they are not facts about the file.

How the bytes are read (and why not twice)
------------------------------------------
We open the file ourselves with `O_NOFOLLOW | O_NONBLOCK` (a symlink fails with ELOOP, a FIFO does not
block the open), `fstat` the descriptor, refuse non-regular files and enforce `max_bytes` on the
fstat'ed size before reading a byte. Then:

* up to `IN_MEMORY_LIMIT` (32 MiB, above the default capture limit of 16 MiB) the bytes are read from
  that same descriptor and handed to `ObjectStore.put` — one read, one hash (inside the store);
* above it, holding the file in memory would be wasteful, and the store only streams from a path, so we
  call `ObjectStore.put_file(path)` (which also opens with O_NOFOLLOW) after our checks, and then
  confirm by `fstat` of our still-open descriptor and `lstat` of the path that the file is the same
  inode with the same size, mtime and ctime as before. A mismatch means the path was swapped or the
  file written meanwhile, and the read is retried. The one residual hazard of that path: if the name
  is swapped for a FIFO in the microseconds between our lstat and the store's open, the store's
  blocking open would wait for a writer; it never reads through a link.

In both cases a file that changes while it is being read (detected by the before/after stat) is read
again, up to `ATTEMPTS` times; a file that never holds still is reported `unreadable` with detail
"changing", not stored as a possibly torn image.
"""

from __future__ import annotations

import errno as _errno
import os
import stat as _stat
from dataclasses import dataclass
from typing import Literal

from ..errors import InvalidParams, SymlinkRefused, TooLarge
from ..store import fs
from ..workspace.fence import Workspace

Status = Literal["ok", "absent", "too-large", "unreadable", "symlink", "not-a-file", "git-internal"]
GIT_DETAIL = "inside a .git folder (or a worktree's .git file): Git's own data is never captured"

IN_MEMORY_LIMIT = 32 << 20
ATTEMPTS = 3
_CHUNK = 1 << 20

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))


@dataclass(frozen=True)
class ImageStat:
    """The facts the stat cache keys on, as seen on the open descriptor."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, st: os.stat_result) -> "ImageStat":
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass(frozen=True)
class ImageRead:
    """The outcome of reading one file. `digest` is set only for `ok`; `size` and `stat` whenever the
    file was opened; `errno` and `detail` explain `unreadable` (and refusals)."""

    rel: str
    status: Status
    digest: str | None = None
    size: int | None = None
    stat: ImageStat | None = None
    errno: int | None = None
    detail: str | None = None
    mode: int | None = None  # permission bits (S_IMODE) of the file read, for `ok`

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino == b.st_ino and a.st_dev == b.st_dev and a.st_size == b.st_size
            and a.st_mtime_ns == b.st_mtime_ns and a.st_ctime_ns == b.st_ctime_ns)


def _unreadable(rel: str, exc: OSError, st: os.stat_result | None = None) -> ImageRead:
    code = exc.errno
    name = _errno.errorcode.get(code, str(code)) if code is not None else "error"
    return ImageRead(rel, "unreadable", stat=ImageStat.of(st) if st else None,
                     size=st.st_size if st else None, errno=code,
                     detail=f"{name}: {exc.strerror or exc}")


def read_image(ws: Workspace, rel: str, objects, *, max_bytes: int,
               check_parents: bool = True) -> ImageRead:
    """Capture the current bytes of `rel` into `objects`; never follows a symbolic link.

    `check_parents=False` skips the root-down lstat of the parent folders; only for callers that
    have just walked those folders themselves without following links (the sweep).
    """
    ws.check_rel(rel)
    if ws.git_internal(rel):
        return ImageRead(rel, "git-internal", detail=GIT_DETAIL)
    if check_parents:
        try:
            ws.check_components(rel)
        except SymlinkRefused as exc:
            if exc.data.get("reason") == "not-a-directory":
                return ImageRead(rel, "absent", detail=exc.message)
            return ImageRead(rel, "symlink", detail=_link_detail(rel, exc.data.get("component")))
    path = ws.root / rel
    last: ImageRead | None = None
    for _ in range(ATTEMPTS):
        result = _attempt(rel, path, objects, max_bytes)
        if result is not None:
            return result
        last = ImageRead(rel, "unreadable", detail="changing: the file changed on every read attempt")
    assert last is not None
    return last


def _link_detail(rel: str, component: str | None) -> str:
    """What a symlink gap adds to its reason's words, which already say "a symbolic link; turnback
    never follows or restores links": nothing when the path is the link, else which folder is."""
    if not component or component == rel:
        return ""
    return f"its folder {component!r} is the link"


def _attempt(rel: str, path, objects, max_bytes: int) -> ImageRead | None:
    """One read; None when the file changed underneath and the caller should try again."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return ImageRead(rel, "absent")
    except NotADirectoryError:
        return ImageRead(rel, "absent")
    except OSError as exc:
        if exc.errno == _errno.ELOOP:
            return ImageRead(rel, "symlink")  # the reason's words (model/gaps.py) say all there is
        if exc.errno in (_errno.ENXIO, _errno.EOPNOTSUPP):  # a socket, or a FIFO on some systems
            return ImageRead(rel, "not-a-file", detail=os.strerror(exc.errno))
        return _unreadable(rel, exc)
    try:
        try:
            before = os.fstat(fd)
        except OSError as exc:
            return _unreadable(rel, exc)
        info = ImageStat.of(before)
        if not _stat.S_ISREG(before.st_mode):
            kind = "a folder" if _stat.S_ISDIR(before.st_mode) else "not a regular file"
            return ImageRead(rel, "not-a-file", stat=info, detail=kind)
        if before.st_size > max_bytes:
            return ImageRead(rel, "too-large", size=before.st_size, stat=info,
                             detail=f"{before.st_size} bytes is over the limit of {max_bytes}")
        if before.st_size <= IN_MEMORY_LIMIT:
            return _read_in_memory(rel, fd, before, objects, max_bytes)
        return _read_via_store(rel, path, fd, before, objects, max_bytes)
    finally:
        os.close(fd)


def _read_in_memory(rel, fd, before, objects, max_bytes) -> ImageRead | None:
    chunks: list[bytes] = []
    total = 0
    limit = min(max_bytes, IN_MEMORY_LIMIT)
    expected = before.st_size
    try:
        while True:
            # A buffer of the file's size, and no read more to see its end (`fs.read_size`;
            # the fstat below catches a change meanwhile).
            want = min(fs.read_size(total, expected, _CHUNK), limit + 1 - total)
            b = os.read(fd, want)
            if not b:
                break
            chunks.append(b)
            total += len(b)
            if len(b) < want and total == expected:
                break
            if total > limit:
                if total > max_bytes:
                    return ImageRead(rel, "too-large", size=total, stat=ImageStat.of(before),
                                     detail=f"grew past the limit of {max_bytes} bytes while read")
                return None  # grew past the in-memory limit meanwhile: start over (store path)
        after = os.fstat(fd)
    except OSError as exc:
        return _unreadable(rel, exc, before)
    if not _same(before, after) or total != before.st_size:
        return None
    data = b"".join(chunks)
    digest = objects.put(data)  # store errors propagate: they are not facts about this file
    return ImageRead(rel, "ok", digest=digest, size=total, stat=ImageStat.of(before),
                     mode=_stat.S_IMODE(before.st_mode))


def _read_via_store(rel, path, fd, before, objects, max_bytes) -> ImageRead | None:
    try:
        now = os.lstat(path)
    except OSError:
        return None  # renamed or removed since our open: look again
    if not _same(before, now):
        return None
    try:
        digest, size = objects.put_file(path, max_bytes=max_bytes)
    except TooLarge as exc:
        return ImageRead(rel, "too-large", size=exc.data.get("size"), stat=ImageStat.of(before),
                         detail=exc.message)
    except InvalidParams:
        return None  # no longer a regular file at that name: look again
    except OSError as exc:
        if exc.errno == _errno.ELOOP:
            return ImageRead(rel, "symlink", detail="it became one while it was being read")
        if isinstance(exc, FileNotFoundError) and exc.filename == str(path):
            return None
        if exc.filename == str(path):
            return _unreadable(rel, exc, before)
        raise  # the store's own I/O failed
    try:
        after_fd = os.fstat(fd)
        after_name = os.lstat(path)
    except OSError:
        return None
    if not (_same(before, after_fd) and _same(before, after_name)) or size != before.st_size:
        return None
    return ImageRead(rel, "ok", digest=digest, size=size, stat=ImageStat.of(before),
                     mode=_stat.S_IMODE(before.st_mode))
