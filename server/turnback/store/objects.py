"""Content-addressed, write-once object space: `objects/ab/cdef…` named by the seeded xxh3-128 digest.

Sharing is never trusted to the digest alone: before a put reuses an existing object it confirms size
and bytes, so a crafted collision cannot make a restore return wrong bytes. An existing object that is
torn or damaged (its bytes no longer hash to its name) is replaced atomically.

With `compress` (store format 2) an object's file may hold a zstd envelope instead of the raw bytes
(`envelope.py` says when and how). The name, the sizes this class reports and every comparison are of
the RAW bytes, so nothing above this class sees the difference; a format-1 store's raw objects read as
they always did, and one store may mix both.
"""

from __future__ import annotations

import contextlib
import os
import stat as statmod
from collections.abc import Iterator
from pathlib import Path

from ..errors import CorruptObject, DigestCollision, InvalidParams, TooLarge
from . import envelope, fsio
from .digest import Hasher, is_digest
from .envelope import EnvelopeError

CHUNK = 1 << 20  # streaming unit; files above this are never held whole in memory
_SYNCFS_FOLDERS = 16  # from this many new names' folders on, one syncfs beats a fsync per folder


class _Batch:
    """Objects written during `with store.batch():`, made durable together on exit."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[Path, int]] = {}  # digest -> (temp path, raw size)
        self.depth = 0
        self.new_fanouts = False  # fan-out folders created unsynced: the commit syncs objects/ too


class Staged:
    """An object hashed, encoded and written to a temp file by a worker thread, not yet named."""

    __slots__ = ("digest", "data", "tmp")

    def __init__(self, digest: str, data: bytes, tmp: Path | None):
        self.digest, self.data, self.tmp = digest, data, tmp

    def discard(self) -> None:
        if self.tmp is not None:
            fsio.discard(self.tmp)
            self.tmp = None


class ObjectStore:
    def __init__(self, root: Path, hasher: Hasher, *, compress: bool = True,
                 limit: int = envelope.LIMIT):
        self.root = Path(root)
        self.hasher = hasher
        self.compress = compress  # write envelopes (format 2); reading understands both regardless
        self.limit = limit  # no envelope may declare more raw bytes than this (decompression bombs)
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

    def encode(self, data: bytes) -> bytes:
        """What the object's file holds for these raw bytes. Thread-safe: the first checkpoint's
        pool compresses in worker threads and hands the result to `put_encoded`."""
        if not self.compress:
            return data
        packed = envelope.pack(data)
        return data if packed is None else packed

    def put(self, data: bytes) -> str:
        data = bytes(data)
        return self.put_encoded(self.hasher.digest(data), data, None)

    def put_encoded(self, digest: str, data: bytes, stored: bytes | None) -> str:
        """`put` of bytes already hashed to `digest` (and, unless `stored` is None, encoded): the
        same confirmation of an existing name, the same batch."""
        if self._batch is not None and digest in self._batch.pending:
            self._confirm_equal(digest, self._batch.pending[digest][0], [data], len(data), pending=True)
            return digest
        final = self.path(digest)
        if self._confirm_existing(digest, final, [data], len(data)):
            return digest
        self._ensure_fanout(final.parent)
        if stored is None:
            stored = self.encode(data)
        if self._batch is None:
            fsio.write_atomic(final, stored)
        else:
            self._batch.pending[digest] = (_write_temp(final, stored), len(data))
        return digest

    # ------------------------------------------------------------ staging (worker threads)

    def stage(self, data: bytes) -> "Staged":
        """Hash, encode and write `data` to a temp file, from any thread; `adopt` (the batch's own
        thread) then names it. Nothing is staged when the name already exists: `adopt` confirms it.
        Only inside an open batch: the batch's commit is what makes staged objects durable."""
        digest = self.hasher.digest(data)
        final = self.path(digest)
        if os.path.lexists(final):
            return Staged(digest, data, None)
        stored = self.encode(data)
        self._ensure_fanout(final.parent, sync=False)
        return Staged(digest, data, _write_temp(final, stored))

    def adopt(self, staged: "Staged") -> str:
        """Take a staged object into the open batch (or confirm the existing one); returns its name."""
        if self._batch is None:
            raise RuntimeError("adopt needs an open batch")
        self._batch.new_fanouts = True  # stage() may have created fan-out folders without syncing
        if staged.tmp is None:
            return self.put_encoded(staged.digest, staged.data, None)
        d = staged.digest
        try:
            if d in self._batch.pending:
                self._confirm_equal(d, self._batch.pending[d][0], [staged.data], len(staged.data),
                                    pending=True)
            elif not self._confirm_existing(d, self.path(d), [staged.data], len(staged.data)):
                self._batch.pending[d] = (staged.tmp, len(staged.data))
                staged.tmp = None
        finally:
            if staged.tmp is not None:
                fsio.discard(staged.tmp)  # a duplicate, or a collision refused
                staged.tmp = None
        return d

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
        """Hash and store a big file chunk by chunk. Compressed when its first chunk compresses well
        and its size holds still while it is read (the envelope declares the size up front); else,
        or if it changed meanwhile, stored raw from a second read."""
        announced = os.fstat(fd).st_size
        if self.compress and announced > 0:
            first = os.read(fd, CHUNK)
            os.lseek(fd, 0, os.SEEK_SET)
            if envelope.pack(first) is not None:
                got = self._stream_into_temp(fd, path, max_bytes, envelope.StreamPacker(announced))
                if got is not None:
                    return got
                os.lseek(fd, 0, os.SEEK_SET)
        got = self._stream_into_temp(fd, path, max_bytes, None)
        assert got is not None
        return got

    def _stream_into_temp(self, fd: int, path, max_bytes: int | None,
                          packer: "envelope.StreamPacker | None") -> tuple[str, int] | None:
        self._ensure_fanout(self.root)
        tmp = fsio.temp_path(self.root / "stream")
        out = fsio.create(tmp)
        placed = False
        try:
            h, size = self.hasher.stream(), 0
            try:
                if packer is not None:
                    fsio.append(out, packer.head())
                while True:
                    b = os.read(fd, CHUNK)
                    if not b:
                        break
                    size += len(b)
                    if max_bytes is not None and size > max_bytes:
                        raise self._too_large(path, size, max_bytes)
                    if packer is not None and size > packer.raw_size:
                        return None  # grew while read: the declared size would lie
                    h.update(b)
                    fsio.append(out, packer.feed(b) if packer is not None else b)
                if packer is not None:
                    if size != packer.raw_size:
                        return None
                    fsio.append(out, packer.finish())
                if self._batch is None:
                    fsio.fsync(out)
            finally:
                os.close(out)
            digest = h.hexdigest()
            if self._batch is not None and digest in self._batch.pending:
                self._confirm_equal(digest, self._batch.pending[digest][0], self._raw_chunks(tmp),
                                    size, pending=True)
                return digest, size
            final = self.path(digest)
            if self._confirm_existing(digest, final, self._raw_chunks(tmp), size):
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
        """The file's stored bytes, as they are on disk."""
        fd = fsio.open_read(path)
        try:
            while b := os.read(fd, CHUNK):
                yield b
        finally:
            os.close(fd)

    def _raw_chunks(self, path: Path) -> Iterator[bytes]:
        """The object's raw bytes, decoding an envelope; EnvelopeError if the envelope is damaged.
        Does not verify the digest."""
        fd = fsio.open_read(path)
        try:
            head = os.read(fd, envelope.HEADER)
            if not envelope.is_envelope(head):
                if head:
                    yield head
                while b := os.read(fd, CHUNK):
                    yield b
                return
            os.lseek(fd, 0, os.SEEK_SET)
            with os.fdopen(os.dup(fd), "rb", buffering=0) as source:
                yield from envelope.iter_unpack(source, self.limit, CHUNK)
        finally:
            os.close(fd)

    def _raw_size(self, path: Path, st_size: int | None = None) -> int:
        """The raw size of the object in `path`: its file size, or what its envelope declares (a
        damaged envelope counts as size -1, which matches nothing)."""
        fd = fsio.open_read(path)
        try:
            head = os.read(fd, envelope.HEADER)
            if not envelope.is_envelope(head):
                return os.fstat(fd).st_size if st_size is None else st_size
            try:
                return envelope.declared_size(head, self.limit)
            except EnvelopeError:
                return -1
        finally:
            os.close(fd)

    def _too_large(self, path, size: int, limit: int) -> TooLarge:
        return TooLarge(f"{path} is over the size limit ({size} > {limit} bytes)",
                        data={"path": str(path), "size": size, "limit": limit})

    def _ensure_fanout(self, folder: Path, *, sync: bool = True) -> None:
        if not folder.is_dir():
            if self._batch is not None or not sync:
                # Inside a batch the commit makes the new folder durable with everything else.
                fsio.mkdir(folder, sync=False)
                if self._batch is not None:
                    self._batch.new_fanouts = True
            else:
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
        try:
            if self._raw_size(where, st_size) == size and _same_bytes(self._raw_chunks(where),
                                                                       new_chunks):
                return True
        except EnvelopeError:
            pass  # damaged: not equal; _sound below says it is not sound either
        if pending or self._sound(where, digest):
            raise DigestCollision(
                f"object {digest} already holds different bytes; refusing to share it",
                data={"digest": digest, "path": str(where)})
        return False  # the existing file is damaged; the caller replaces it atomically

    def _sound(self, where: Path, digest: str) -> bool:
        try:
            return self._damage(where, digest) is None
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
            if b.new_fanouts:
                folders.add(self.root)
            # The new names: one fsync per folder when few, one syncfs when many (a first checkpoint
            # touches all 256 fan-outs, and 256 folder fsyncs cost more than the objects did).
            if len(folders) >= _SYNCFS_FOLDERS:
                fsio.syncfs_or_fsync(sorted(folders))
            else:
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
        """The object's raw size (what `get` returns), None if absent; -1 if its envelope is damaged."""
        try:
            return self._raw_size(self._locate(digest))
        except FileNotFoundError:
            return None

    def stored_size(self, digest: str) -> int | None:
        """The size of the object's file: what it costs on disk, compressed or not."""
        try:
            return os.stat(self._locate(digest), follow_symlinks=False).st_size
        except FileNotFoundError:
            return None

    def get(self, digest: str) -> bytes:
        """The object's raw bytes, verified against its digest (CorruptObject otherwise)."""
        where = self._locate(digest)
        data = fsio.read_file(where)
        if not envelope.is_envelope(data):
            if self.hasher.digest(data) != digest:
                raise self._corrupt(digest, where)
            return data
        try:
            raw = envelope.unpack(data, self.limit)
        except EnvelopeError as exc:
            raw, reason = None, str(exc)
        if raw is not None and self.hasher.digest(raw) == digest:
            return raw
        if self.hasher.digest(data) == digest:
            return data  # a format-1 raw object that happens to begin like an envelope
        raise self._corrupt(digest, where,
                            reason if raw is None else "its inflated bytes do not match its digest")

    def iter_chunks(self, digest: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        """Stream the object's raw bytes; raises CorruptObject after the last chunk if the digest does
        not match (or as soon as a compressed object proves damaged).

        Consumers must not commit anything built from the chunks before the iteration has finished.
        """
        where = self._locate(digest)
        if self._is_small_envelope(where):
            data = self.get(digest)  # whole: keeps the raw fallback of `get`
            for i in range(0, len(data), chunk_size):
                yield data[i:i + chunk_size]
            return
        h = self.hasher.stream()
        try:
            for b in self._raw_chunks(where):
                h.update(b)
                yield b
        except EnvelopeError as exc:
            raise self._corrupt(digest, where, str(exc)) from None
        if h.hexdigest() != digest:
            raise self._corrupt(digest, where)

    def _starts_as_envelope(self, where: Path) -> bool:
        fd = fsio.open_read(where)
        try:
            return envelope.is_envelope(os.read(fd, 4))
        finally:
            os.close(fd)

    def _is_small_envelope(self, where: Path) -> bool:
        fd = fsio.open_read(where)
        try:
            return envelope.is_envelope(os.read(fd, 4)) and os.fstat(fd).st_size <= CHUNK
        finally:
            os.close(fd)

    def verify(self, digest: str) -> bool:
        return self.damage(digest) is None

    def damage(self, digest: str) -> str | None:
        """None if the object is sound; else what is wrong with it, in a few words."""
        try:
            return self._damage(self._locate(digest), digest)
        except FileNotFoundError:
            return "missing"

    def _damage(self, where: Path, digest: str) -> str | None:
        h = self.hasher.stream()
        try:
            for b in self._raw_chunks(where):
                h.update(b)
        except EnvelopeError as exc:
            reason = f"compressed object: {exc}"
        else:
            if h.hexdigest() == digest:
                return None
            reason = ("compressed object: its inflated bytes do not match its digest"
                      if self._starts_as_envelope(where) else "its bytes do not match its digest")
        raw = self.hasher.stream()
        for b in self._chunks_of(where):
            raw.update(b)
        return None if raw.hexdigest() == digest else reason

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

    def _corrupt(self, digest: str, where: Path, reason: str | None = None) -> CorruptObject:
        why = f"compressed object: {reason}" if reason else "its bytes do not match its digest"
        return CorruptObject(f"object {digest} is damaged: {why} ({where})",
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


def _write_temp(final, stored: bytes):
    """Write `stored` to a fresh temp name beside `final` (not synced: the batch syncs it); removed
    again if the write fails."""
    tmp = fsio.temp_path(final)
    fd = fsio.create(tmp)
    try:
        try:
            fsio.append(fd, stored)
        finally:
            os.close(fd)
    except BaseException:
        fsio.discard(tmp)
        raise
    return tmp
