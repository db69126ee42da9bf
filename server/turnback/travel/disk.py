"""Reading and writing workspace files for restores: fenced, verified, and through the seam."""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass

from ..errors import CorruptStore, SymlinkRefused
from ..model.images import ABSENT, FOLDER, Image, folder_path, is_digest, is_folder_key
from ..store import fs
from ..store.objects.interfaces import ObjectReader

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted at a path must not hang the planner


def disk_image(ws, rel: str, hasher, *, max_bytes: int,
               memo=None) -> tuple[Image | None, str | None]:
    """The digest of what is on disk now, without storing it: (image, None) or (None, gap reason).
    Inside `.git` the answer is always the gap `git-internal`: no plan ever writes there. A folder
    key (model/images.py) answers FOLDER or ABSENT. With a `memo` (travel/diskmemo.py), a file it
    hashed before and that nothing touched since is not read again."""
    if is_folder_key(rel):
        return folder_image(ws, rel)
    if ws.git_internal(rel):
        return None, "git-internal"
    try:
        ws.check_components(rel)
    except SymlinkRefused as exc:
        return None, exc.data.get("reason", "symlink") if exc.data.get("reason") != "race" else "symlink"
    path = ws.abs_path(rel)
    observed = 0
    if memo is not None:
        observed = memo.clock()  # before the open: the racy reference
        known = _memo_lookup(memo, rel, path)
        if known is not None:
            return known, None
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
        for chunk in fs.iter_read(fd, st.st_size):
            h.update(chunk)
        digest = h.hexdigest()
        if memo is not None:
            memo.record(rel, st, digest, observed)
        return digest, None
    except OSError:
        return None, "unreadable"
    finally:
        os.close(fd)


def _memo_lookup(memo, rel: str, path) -> Image | None:
    """The memo's image of a regular file whose stat identity is unchanged (an lstat: a link is
    never one), without opening it."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return memo.lookup(rel, st) if statmod.S_ISREG(st.st_mode) else None


def folder_image(ws, key: str) -> tuple[Image | None, str | None]:
    """What is at a folder key's path now: FOLDER, ABSENT, or a gap (a link, a file in its place)."""
    rel = folder_path(key)
    if ws.git_internal(rel):
        return None, "git-internal"
    try:
        ws.check_components(rel)
    except SymlinkRefused as exc:
        return None, "symlink" if exc.data.get("reason") in (None, "race") else exc.data["reason"]
    try:
        st = os.lstat(ws.abs_path(rel))
    except FileNotFoundError:
        return ABSENT, None
    except OSError:
        return None, "unreadable"
    if statmod.S_ISDIR(st.st_mode):
        return FOLDER, None
    return None, "symlink" if statmod.S_ISLNK(st.st_mode) else "not-a-folder"


def empties_after(ws, key: str, going: set) -> bool:
    """Whether the folder at `key` holds nothing once every path in `going` (file paths and folder
    keys a plan removes) is gone: only then can a plan remove the folder itself."""
    top = ws.abs_path(folder_path(key))
    for dirpath, dirnames, filenames in os.walk(top):
        here = os.path.relpath(dirpath, ws.root).replace(os.sep, "/")
        for name in filenames:
            if f"{here}/{name}" not in going:
                return False
        for name in dirnames:
            if f"{here}/{name}/" not in going:
                return False
    return True


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
        return b"".join(fs.iter_read(fd, st.st_size))
    except OSError:
        return None
    finally:
        os.close(fd)


def disk_images_job(ws, rels, hasher, *, max_bytes: int, memo=None):
    """`disk_image` of many paths as a job: it yields after each file, so hashing a large plan never
    holds a server's loop for long. Returns {rel: (image, problem)}."""
    out = {}
    for rel in rels:
        out[rel] = disk_image(ws, rel, hasher, max_bytes=max_bytes, memo=memo)
        yield ("hash", len(out))
    return out


def memo_image(ws, rel: str, memo) -> tuple[Image, int] | None:
    """(image, permission bits) of a regular file the memo hashed and nothing touched since; None
    when it must be read (travel/diskmemo.py)."""
    if memo is None or is_folder_key(rel) or ws.git_internal(rel):
        return None
    try:
        ws.check_components(rel)
        st = os.lstat(ws.abs_path(rel))
    except (OSError, SymlinkRefused):
        return None
    image = memo.lookup(rel, st) if statmod.S_ISREG(st.st_mode) else None
    return None if image is None else (image, statmod.S_IMODE(st.st_mode))


def drain(job):
    """Run a job to its end at once and return its value."""
    try:
        while True:
            next(job)
    except StopIteration as done:
        return done.value


def current_mode(ws, rel: str) -> int | None:
    if is_folder_key(rel):
        return None  # folders are restored with the umask's bits (docs/storage-format.md)
    try:
        st = os.lstat(ws.abs_path(rel))
    except FileNotFoundError:
        return None
    return statmod.S_IMODE(st.st_mode) if statmod.S_ISREG(st.st_mode) else None


def put_image(ws, objects: ObjectReader, rel: str, image: Image, *, mode: int | None = None) -> None:
    """Make the disk hold `image` at rel: write it (temp + fsync + rename + folder fsync) with the
    permission bits `mode` (None: the file's own, else the umask's), or delete it.

    The components are checked just before the write, so a link planted since planning is refused;
    the bytes are verified against their digest while they are streamed, and a mismatch aborts
    before the rename, so a corrupt object is never restored."""
    if is_folder_key(rel):
        drain(put_many_job(ws, objects, [Put(rel, image)], stop_on_error=True))
        return
    if ws.git_internal(rel):
        raise SymlinkRefused(f"{rel!r} is inside .git; turnback never restores Git's own data",
                             data={"path": rel, "reason": "git-internal"})
    ws.check_components(rel)
    path = ws.abs_path(rel)
    if image == ABSENT:
        if os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                raise CorruptStore(f"{rel} is a folder now; refusing to delete it", data={"path": rel})
            fs.unlink(path)
            fs.fsync_dir(path.parent)
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
    fs.write_atomic(path, objects.iter_chunks(image), mode=mode)


# A batch of restores: its temp files are made durable in one pass before any is renamed.
BATCH_FILES = 256
BATCH_BYTES = 64 << 20
# From this many folders written into on, one syncfs of the workspace's file system makes their
# names durable instead of a fsync per folder: the store's threshold (store/objects/). A syncfs
# also writes back what other programs left dirty on that file system, so on a busy disk it costs
# dozens of folder fsyncs (docs/performance.md, travel).
SYNCFS_FOLDERS = 16


@dataclass
class Put:
    rel: str
    image: Image
    mode: int | None = None  # the bits to write (None: the file's own, else the umask's)
    bits_only: bool = False  # the bytes are right: only chmod


def put_many_job(ws, objects: ObjectReader, puts: list[Put], *, stop_on_error: bool):
    """Make the disk hold every `Put`, with durability batched: each batch's temp files (and chmods)
    are made durable in one pass (`fs.syncfs_or_fsync`: one syncfs, or an fsync each), then
    renamed into place; every folder touched is synced once, at the end (one syncfs of the file
    system from `SYNCFS_FOLDERS` folders on). A crash at any point
    leaves each path with its old image or its new one (a temp file at most, which recovery removes).

    A job: it yields after every file and every durability step. Returns {rel: error sentence} for
    the puts that failed (with `stop_on_error` the first failure is raised instead, after the temp
    files of the batch are removed)."""
    errors: dict[str, str] = {}
    folders: set = set()
    puts = _in_read_order(puts, objects)
    for start, batch in _batches(puts, objects):
        temps: list[tuple[str, object, object]] = []  # (rel, temp path, final path)
        synced: list = []  # files whose contents or bits must be durable before any rename
        try:
            for i, p in enumerate(batch, start + 1):
                try:
                    path = _put_one(ws, objects, p, temps, synced, folders)
                except Exception as exc:  # noqa: BLE001 - reported per path, or raised
                    if stop_on_error:
                        raise
                    errors[p.rel] = f"{type(exc).__name__}: {exc}"
                    continue
                if path is not None:
                    synced.append(path)
                yield ("write", i, len(puts))  # i paths of the plan handled so far
            try:
                fs.syncfs_or_fsync(synced)
            except Exception as exc:  # noqa: BLE001
                if stop_on_error:
                    raise
                # Only what this pass was to make durable is in doubt: the temp files (never put
                # in place now) and the chmods. The removals are the final folder syncs' to prove.
                written = {rel for rel, _tmp, _final in temps}
                for p in batch:
                    if p.bits_only or p.rel in written:
                        errors.setdefault(p.rel, f"{type(exc).__name__}: {exc}")
                for _rel, tmp, _final in temps:
                    fs.discard(tmp)
                temps = []
            yield ("sync", start + len(batch), len(puts))
        except BaseException:
            for _rel, tmp, _final in temps:
                fs.discard(tmp)
            raise
        left = list(temps)
        try:
            while left:
                rel, tmp, final = left.pop(0)
                try:
                    place(rel, tmp, final)
                    folders.add(os.path.dirname(final))
                except Exception as exc:  # noqa: BLE001
                    fs.discard(tmp)
                    if stop_on_error:
                        raise
                    errors[rel] = f"{type(exc).__name__}: {exc}"
                yield ("rename", start, len(puts))
        except BaseException:
            for _rel, tmp, _final in left:  # not in place yet: they go, so no temp file is left
                fs.discard(tmp)
            raise
    # The renames and removals are durable before the caller goes on. A folder the plan removed
    # is gone: its parent, synced too, holds the removal.
    live = [folder for folder in sorted(folders) if os.path.isdir(folder)]
    for step in fs.folder_syncs(live, syncfs_from=SYNCFS_FOLDERS):
        try:
            fs.sync_step(step)
        except Exception as exc:  # noqa: BLE001
            if stop_on_error:
                raise
            doubt = set(step[1])  # what was renamed, removed or made in them is not proven durable
            for p in puts:
                if not p.bits_only and _folder_of(ws, p) in doubt:
                    errors.setdefault(p.rel, f"{type(exc).__name__}: {exc}")
        yield ("folder", len(puts), len(puts))
    return errors


def _in_read_order(puts: list[Put], objects: ObjectReader) -> list[Put]:
    """The file writes among `puts` in the order their objects lie in the store (each packed block
    inflated once, `ObjectStore.read_order`), each in a slot a file write held: folders, removals
    and chmods keep their places, so the order that makes every step possible holds."""
    order = getattr(objects, "read_order", None)
    slots = [i for i, p in enumerate(puts) if not p.bits_only and is_digest(p.image)
             and not is_folder_key(p.rel)]
    if order is None or len(slots) < 2:
        return puts
    by_image: dict[str, list[Put]] = {}
    for i in slots:
        by_image.setdefault(puts[i].image, []).append(puts[i])
    out = list(puts)
    ordered = (p for image in order(list(by_image)) for p in by_image[image])
    for i, p in zip(slots, ordered):
        out[i] = p
    return out


def _folder_of(ws, p: Put) -> str:
    """The folder whose entry a put changes (a folder key's parent for a folder)."""
    return os.path.dirname(ws.abs_path(folder_path(p.rel) if is_folder_key(p.rel) else p.rel))


def place(rel: str, tmp, final) -> None:
    """Rename one durable temp file over its path (one path of a batch; tests fail it per path)."""
    fs.rename(tmp, final)


def _batches(puts: list[Put], objects: ObjectReader):
    start, batch, size = 0, [], 0
    for p in puts:
        batch.append(p)
        # the size as stored (an lstat, or the pack's index): the raw size would open and read
        # every loose object's envelope once more, before it is read to be written (a third of a
        # small rewind's time on a real history, docs/performance.md)
        size += (_stored(objects, p.image) or 0) if is_digest(p.image) and not p.bits_only else 0
        if len(batch) >= BATCH_FILES or size >= BATCH_BYTES:
            yield start, batch
            start, batch, size = start + len(batch), [], 0
    if batch:
        yield start, batch


def _stored(objects: ObjectReader, image) -> int | None:
    stored = getattr(objects, "stored_size", None)
    return stored(image) if stored is not None else objects.stat(image)


def _put_one(ws, objects: ObjectReader, p: Put, temps: list, synced: list, folders: set):
    """One path of a batch: a temp file written (not yet durable, not renamed), a removal, or a
    chmod. Returns the path whose inode must be synced before the renames, or None."""
    if is_folder_key(p.rel):
        _put_folder(ws, p, folders)
        return None
    if ws.git_internal(p.rel):
        raise SymlinkRefused(f"{p.rel!r} is inside .git; turnback never restores Git's own data",
                             data={"path": p.rel, "reason": "git-internal"})
    ws.check_components(p.rel)
    path = ws.abs_path(p.rel)
    if p.bits_only:
        fs.chmod(path, p.mode, sync=False)
        return path
    if p.image == ABSENT:
        if os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                raise CorruptStore(f"{p.rel} is a folder now; refusing to delete it",
                                   data={"path": p.rel})
            fs.unlink(path)
            folders.add(os.path.dirname(path))
        return None
    if not objects.has(p.image):
        raise CorruptStore(f"the image {p.image} of {p.rel} is missing from the store",
                           data={"path": p.rel, "digest": p.image})
    ws.ensure_parent_dirs(p.rel)
    mode = p.mode if p.mode is not None else current_mode(ws, p.rel)
    if mode is None:
        mode = ws.dir_mode & 0o666
    tmp = fs.write_temp(path, objects.iter_chunks(p.image), mode=mode)  # verified as it streams
    temps.append((p.rel, tmp, path))
    return tmp


def _put_folder(ws, p: Put, folders: set) -> None:
    """Make the folder at a folder key exist (FOLDER) or not (ABSENT: removed, and only when
    empty: a plan removes a folder only once everything in it is gone, `empties_after`)."""
    rel = folder_path(p.rel)
    if ws.git_internal(rel):
        raise SymlinkRefused(f"{rel!r} is inside .git; turnback never restores Git's own data",
                             data={"path": rel, "reason": "git-internal"})
    ws.check_components(rel)
    path = ws.abs_path(rel)
    now, _problem = folder_image(ws, p.rel)
    if now == p.image:
        return
    if now not in (FOLDER, ABSENT):
        raise CorruptStore(f"{rel} is not a folder now; refusing to replace it", data={"path": rel})
    if p.image == FOLDER:
        ws.ensure_parent_dirs(rel)
        fs.mkdir(path, mode=ws.dir_mode, parents=False, exist_ok=True, sync=False)
    else:
        fs.rmdir(path)  # fails (ENOTEMPTY) if something appeared in it meanwhile
    folders.add(os.path.dirname(path))


def put_mode(ws, rel: str, mode: int) -> None:
    """Change only the permission bits of rel, whose bytes are already right (a chmod alone is a
    change): fenced like a write, set on a descriptor opened without following a link, and fsynced,
    so a power cut cannot lose it once the transaction moves on."""
    if ws.git_internal(rel):
        raise SymlinkRefused(f"{rel!r} is inside .git; turnback never restores Git's own data",
                             data={"path": rel, "reason": "git-internal"})
    ws.check_components(rel)
    fs.chmod(ws.abs_path(rel), mode, sync=True)

