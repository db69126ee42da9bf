"""Reading and writing workspace files for restores: fenced, verified, and through the seam."""

from __future__ import annotations

import os
import stat as statmod

from ..errors import CorruptStore, SymlinkRefused
from ..model.images import ABSENT, Image
from ..store import fsio

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted at a path must not hang the planner


def disk_image(ws, rel: str, hasher, *, max_bytes: int) -> tuple[Image | None, str | None]:
    """The digest of what is on disk now, without storing it: (image, None) or (None, gap reason).
    Inside `.git` the answer is always the gap `git-internal`: no plan ever writes there."""
    if ws.git_internal(rel):
        return None, "git-internal"
    try:
        ws.check_components(rel)
    except SymlinkRefused as exc:
        return None, exc.data.get("reason", "symlink") if exc.data.get("reason") != "race" else "symlink"
    path = ws.abs_path(rel)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except FileNotFoundError:
        return ABSENT, None
    except OSError as exc:
        return None, "symlink" if exc.errno == 40 else "unreadable"  # ELOOP: the target is a link
    try:
        st = os.fstat(fd)
        if not statmod.S_ISREG(st.st_mode):
            return None, "not-a-file"
        if st.st_size > max_bytes:
            return None, "too-large"
        h = hasher.stream()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            h.update(chunk)
        return h.hexdigest(), None
    except OSError:
        return None, "unreadable"
    finally:
        os.close(fd)


def read_text(ws, rel: str, *, max_bytes: int) -> str | None:
    """A workspace file's text as it is now; None when it is absent, unreadable, not a regular file,
    too large, or reached through a symbolic link (nothing is ever followed out of the workspace)."""
    data = read_bytes(ws, rel, max_bytes=max_bytes)
    return None if data is None else data.decode("utf-8", "replace")


def read_bytes(ws, rel: str, *, max_bytes: int) -> bytes | None:
    """A workspace file's bytes as they are now, under the same refusals as `read_text`."""
    try:
        ws.check_components(rel)
        fd = os.open(ws.abs_path(rel), os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except (OSError, SymlinkRefused):
        return None
    try:
        st = os.fstat(fd)
        if not statmod.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def disk_images_job(ws, rels, hasher, *, max_bytes: int):
    """`disk_image` of many paths as a job: it yields after each file, so hashing a large plan never
    holds a server's loop for long. Returns {rel: (image, problem)}."""
    out = {}
    for rel in rels:
        out[rel] = disk_image(ws, rel, hasher, max_bytes=max_bytes)
        yield ("hash", len(out))
    return out


def drain(job):
    """Run a job to its end at once and return its value."""
    try:
        while True:
            next(job)
    except StopIteration as done:
        return done.value


def current_mode(ws, rel: str) -> int | None:
    try:
        st = os.lstat(ws.abs_path(rel))
    except FileNotFoundError:
        return None
    return statmod.S_IMODE(st.st_mode) if statmod.S_ISREG(st.st_mode) else None


def put_image(ws, objects, rel: str, image: Image, *, mode: int | None = None) -> None:
    """Make the disk hold `image` at rel: write it (temp + fsync + rename + folder fsync) with the
    permission bits `mode` (None: the file's own, else the umask's), or delete it.

    The components are checked just before the write, so a link planted since planning is refused;
    the bytes are verified against their digest while they are streamed, and a mismatch aborts
    before the rename, so a corrupt object is never restored."""
    if ws.git_internal(rel):
        raise SymlinkRefused(f"{rel!r} is inside .git; turnback never restores Git's own data",
                             data={"path": rel, "reason": "git-internal"})
    ws.check_components(rel)
    path = ws.abs_path(rel)
    if image == ABSENT:
        if os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                raise CorruptStore(f"{rel} is a folder now; refusing to delete it", data={"path": rel})
            fsio.unlink(path)
            fsio.fsync_dir(path.parent)
        return
    if not objects.has(image):
        raise CorruptStore(f"the image {image} of {rel} is missing from the store",
                           data={"path": rel, "digest": image})
    ws.ensure_parent_dirs(rel)
    if mode is None:  # unknown (a format-1 image): keep what the file has, as before modes
        mode = current_mode(ws, rel)
    if mode is None:
        mode = ws.dir_mode & 0o666  # what a new file gets under the user's umask
    # The mode is set on the temp file's descriptor before the rename, never by path afterwards: a
    # path can be swapped for a link the moment after the rename, and chmod follows links.
    fsio.write_atomic(path, objects.iter_chunks(image), mode=mode)


def put_mode(ws, rel: str, mode: int) -> None:
    """Change only the permission bits of rel, whose bytes are already right (a chmod alone is a
    change): fenced like a write, set on a descriptor opened without following a link, and fsynced,
    so a power cut cannot lose it once the transaction moves on."""
    if ws.git_internal(rel):
        raise SymlinkRefused(f"{rel!r} is inside .git; turnback never restores Git's own data",
                             data={"path": rel, "reason": "git-internal"})
    ws.check_components(rel)
    fsio.chmod(ws.abs_path(rel), mode, sync=True)

