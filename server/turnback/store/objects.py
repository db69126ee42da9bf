"""Content-addressed, write-once object space: `objects/ab/cdef…` named by the seeded xxh3-128 digest.

Sharing is never trusted to the digest alone: before a put reuses an existing object it confirms size
and bytes, so a crafted collision cannot make a restore return wrong bytes. An existing object that is
torn or damaged (its bytes no longer hash to its name) is replaced atomically.
"""

from __future__ import annotations

import contextlib
import os
import stat as statmod
from collections.abc import Iterator
from pathlib import Path

from ..errors import CorruptObject, DigestCollision, InvalidParams, TooLarge
from . import fsio
from .digest import Hasher, is_digest

CHUNK = 1 << 20  # streaming unit; files above this are never held whole in memory


class _Batch:
    """Objects written during `with store.batch():`, made durable together on exit."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[Path, int]] = {}  # digest -> (temp path, size)
        self.depth = 0


class ObjectStore:
    def __init__(self, root: Path, hasher: Hasher):
        self.root = Path(root)
        self.hasher = hasher
        self._batch: _Batch | None = None
        self.removals = 0  # objects this process removed: lets callers know when a cache may lie

    @property
    def batch_open(self) -> bool:
        """Objects written inside an open batch are not durable, or even named, yet."""
        return self._batch is not None

    # ------------------------------------------------------------ naming

    def path(self, digest: str) -> Path:
        if not is_digest(digest):
            raise InvalidParams(f"not an object digest: {digest!r}", data={"digest": str(digest)[:80]})
        return self.root / digest[:2] / digest[2:]

    def _locate(self, digest: str) -> Path:
        """Where the bytes are now: a pending temp file inside a batch, else the final name."""
        if self._batch is not None and digest in self._batch.pending:
            return self._batch.pending[digest][0]
        return self.path(digest)

    # ------------------------------------------------------------ writing

    def put(self, data: bytes) -> str:
        data = bytes(data)
        digest = self.hasher.digest(data)
        if self._batch is not None and digest in self._batch.pending:
            self._confirm_equal(digest, self._batch.pending[digest][0], [data], len(data), pending=True)
            return digest
        final = self.path(digest)
        if self._confirm_existing(digest, final, [data], len(data)):
            return digest
        self._ensure_fanout(final.parent)
        if self._batch is None:
            fsio.write_atomic(final, data)
        else:
            tmp = fsio.temp_path(final)
            fd = fsio.create(tmp)
            try:
                try:
                    fsio.append(fd, data)
                finally:
                    os.close(fd)
            except BaseException:
                fsio.discard(tmp)
                raise
            self._batch.pending[digest] = (tmp, len(data))
        return digest

    def put_file(self, path: str | os.PathLike, *, max_bytes: int | None = None) -> tuple[str, int]:
        """Store a file's bytes (streaming above 1 MiB); returns (digest, size).

        Opens with O_NOFOLLOW so a symlink is refused rather than followed. Raises TooLarge as soon as
        more than `max_bytes` have been read (the file may grow while it is read).
        """
        fd = fsio.open_read(path)
        try:
            st = os.fstat(fd)
            if not statmod.S_ISREG(st.st_mode):
                raise InvalidParams(f"not a regular file: {path}", data={"path": str(path)})
            if max_bytes is not None and st.st_size > max_bytes:
                raise self._too_large(path, st.st_size, max_bytes)
            if st.st_size <= CHUNK:
                data = self._read_small(fd, path, max_bytes)
                if data is not None:
                    return self.put(data), len(data)
            os.lseek(fd, 0, os.SEEK_SET)
            return self._put_stream(fd, path, max_bytes)
        finally:
            os.close(fd)

    def _read_small(self, fd: int, path, max_bytes: int | None) -> bytes | None:
        """Read a small file whole; None if it grew past CHUNK meanwhile (then stream it)."""
        chunks, total = [], 0
        while True:
            b = os.read(fd, CHUNK + 1 - total)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
            total += len(b)
            if max_bytes is not None and total > max_bytes:
                raise self._too_large(path, total, max_bytes)
            if total > CHUNK:
                return None

    def _put_stream(self, fd: int, path, max_bytes: int | None) -> tuple[str, int]:
        self._ensure_fanout(self.root)
        tmp = fsio.temp_path(self.root / "stream")
        out = fsio.create(tmp)
        placed = False
        try:
            h, size = self.hasher.stream(), 0
            try:
                while True:
                    b = os.read(fd, CHUNK)
                    if not b:
                        break
                    size += len(b)
                    if max_bytes is not None and size > max_bytes:
                        raise self._too_large(path, size, max_bytes)
                    h.update(b)
                    fsio.append(out, b)
                if self._batch is None:
                    fsio.fsync(out)
            finally:
                os.close(out)
            digest = h.hexdigest()
            if self._batch is not None and digest in self._batch.pending:
                self._confirm_equal(digest, self._batch.pending[digest][0], self._chunks_of(tmp),
                                    size, pending=True)
                return digest, size
            final = self.path(digest)
            if self._confirm_existing(digest, final, self._chunks_of(tmp), size):
                return digest, size
            self._ensure_fanout(final.parent)
            if self._batch is None:
                fsio.rename(tmp, final)
                placed = True
                fsio.fsync_dir(final.parent)
                fsio.fsync_dir(self.root)  # the temp name lived here; make its removal durable too
            else:
                self._batch.pending[digest] = (tmp, size)
                placed = True
            return digest, size
        finally:
            if not placed:
                fsio.discard(tmp)

    def _chunks_of(self, path: Path) -> Iterator[bytes]:
        fd = fsio.open_read(path)
        try:
            while b := os.read(fd, CHUNK):
                yield b
        finally:
            os.close(fd)

    def _too_large(self, path, size: int, limit: int) -> TooLarge:
        return TooLarge(f"{path} is over the size limit ({size} > {limit} bytes)",
                        data={"path": str(path), "size": size, "limit": limit})

    def _ensure_fanout(self, folder: Path) -> None:
        if not folder.is_dir():
            fsio.mkdir(folder)

    def _confirm_existing(self, digest: str, final: Path, new_chunks, size: int) -> bool:
        """True if `final` already holds exactly these bytes; False if absent or damaged (rewrite it).

        Raises DigestCollision when a sound object with the same digest holds different bytes.
        """
        try:
            st = os.stat(final, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return self._confirm_equal(digest, final, new_chunks, size, st_size=st.st_size)

    def _confirm_equal(self, digest: str, where: Path, new_chunks, size: int, *,
                       st_size: int | None = None, pending: bool = False) -> bool:
        if st_size is None:
            st_size = os.stat(where, follow_symlinks=False).st_size
        if st_size == size and _same_bytes(self._chunks_of(where), new_chunks):
            return True
        if pending or self._sound(where, digest):
            raise DigestCollision(
                f"object {digest} already holds different bytes; refusing to share it",
                data={"digest": digest, "path": str(where)})
        return False  # the existing file is damaged; the caller replaces it atomically

    def _sound(self, where: Path, digest: str) -> bool:
        try:
            h = self.hasher.stream()
            for b in self._chunks_of(where):
                h.update(b)
            return h.hexdigest() == digest
        except OSError:
            return False

    # ------------------------------------------------------------ batches

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Defer durability of puts: on exit, one sync pass, renames, one fsync per touched folder.

        Objects put in a batch are readable (get/has) inside it. If the block raises, the pending
        objects are discarded. Nested batches join the outermost one. Not for use across threads.
        """
        if self._batch is not None:
            self._batch.depth += 1
            try:
                yield
            finally:
                self._batch.depth -= 1
            return
        self._batch = b = _Batch()
        try:
            yield
        except BaseException:
            self._batch = None
            for tmp, _ in b.pending.values():
                fsio.discard(tmp)
            raise
        self._batch = None
        self._commit(b)

    def _commit(self, b: _Batch) -> None:
        items = list(b.pending.items())
        try:
            fsio.syncfs_or_fsync([tmp for _, (tmp, _) in items])
            folders: set[Path] = set()
            for digest, (tmp, _) in items:
                final = self.path(digest)
                fsio.rename(tmp, final)
                folders.add(final.parent)
                folders.add(tmp.parent)
            for folder in sorted(folders):
                fsio.fsync_dir(folder)
        except BaseException:
            for tmp, _ in b.pending.values():
                fsio.discard(tmp)  # renamed ones are already gone; the rest must not linger
            raise

    # ------------------------------------------------------------ reading

    def has(self, digest: str) -> bool:
        return os.path.lexists(self._locate(digest))

    def stat(self, digest: str) -> int | None:
        try:
            return os.stat(self._locate(digest), follow_symlinks=False).st_size
        except FileNotFoundError:
            return None

    def get(self, digest: str) -> bytes:
        """The object's bytes, verified against its digest (CorruptObject otherwise)."""
        where = self._locate(digest)
        data = fsio.read_file(where)
        if self.hasher.digest(data) != digest:
            raise self._corrupt(digest, where)
        return data

    def iter_chunks(self, digest: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        """Stream the object; raises CorruptObject after the last chunk if the digest does not match.

        Consumers must not commit anything built from the chunks before the iteration has finished.
        """
        where = self._locate(digest)
        fd = fsio.open_read(where)
        try:
            h = self.hasher.stream()
            while b := os.read(fd, chunk_size):
                h.update(b)
                yield b
        finally:
            os.close(fd)
        if h.hexdigest() != digest:
            raise self._corrupt(digest, where)

    def verify(self, digest: str) -> bool:
        try:
            for _ in self.iter_chunks(digest):
                pass
        except (CorruptObject, FileNotFoundError):
            return False
        return True

    def list(self) -> Iterator[str]:
        """Every final object name (pending batch objects and temp files are not listed)."""
        try:
            fans = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return
        for fan in fans:
            if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                continue
            for entry in sorted(os.listdir(fan.path)):
                digest = fan.name + entry
                if is_digest(digest):
                    yield digest

    def remove(self, digest: str) -> None:
        """Delete an object. For the collector only, after it proved nothing references it."""
        self.removals += 1
        fsio.unlink(self.path(digest), missing_ok=True)

    def _corrupt(self, digest: str, where: Path) -> CorruptObject:
        return CorruptObject(f"object {digest} is damaged: its bytes do not match its digest ({where})",
                             data={"digest": digest, "path": str(where)})


def _same_bytes(a: Iterator[bytes], b) -> bool:
    """Compare two chunk streams of possibly different chunking."""
    ia, ib = iter(a), iter(b)
    ba = bb = b""
    while True:
        if not ba:
            ba = next(ia, b"")
        if not bb:
            bb = next(ib, b"")
        if not ba or not bb:
            return not ba and not bb and next(ia, b"") == b"" and next(ib, b"") == b""
        n = min(len(ba), len(bb))
        if ba[:n] != bb[:n]:
            return False
        ba, bb = ba[n:], bb[n:]
