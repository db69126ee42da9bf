"""Writing the object space: put (bytes, a file, bytes a worker staged), and the confirmation that
makes sharing safe.

Sharing is never trusted to the digest alone: before a put reuses an existing object it confirms
size and bytes, so a crafted collision cannot make a restore return wrong bytes. An existing copy
that is torn or damaged (its bytes no longer hash to its name) does not count: the put writes a
sound one. Inside a batch (`batches.py`) a put writes nothing durable: temp files, or the batch's
pack; outside one a put is durable when it returns.
"""

from __future__ import annotations

import os
import stat as statmod
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

from ...errors import DigestCollision, InvalidParams, TooLarge
from .. import fs, waiting
from . import envelope, loose
from .batch import PACK_AFTER, PACK_AFTER_BYTES, PACKED_MAX, Batch, Staged
from .digest import Digest
from .envelope import EnvelopeError
from .listing import ObjectListing
from .loose import CHUNK, same_bytes
from .packs import PackDamage
from .packwrite import PackWriter

__all__ = ["DROP_CACHED_FROM", "RAW_LOOSE_MAX", "ObjectWriting"]

# A single write outside a batch (a capture on save) up to this size is stored raw: zstd would be
# most of its latency (docs/performance.md), and the collector packs and compresses it later.
RAW_LOOSE_MAX = 1 << 20
# A single write at least this big gives its pages back once durable; smaller ones stay cached
# (a save of unchanged bytes reads the object back to confirm it, and their pages cost little).
DROP_CACHED_FROM = 64 << 10

Chunks = Iterable[bytes]


class ObjectWriting(ObjectListing):
    def put(self, data: bytes) -> Digest:
        data = bytes(data)
        return self.put_encoded(self.hasher.digest(data), data, None)

    def iter_put(self, data: bytes) -> Generator[Any, Any, Digest]:
        """`put` as a job's steps: outside a batch, the object's write and its fsyncs run on a
        helper thread, waited for in slices (a tool result's fsync behind a busy disk held the
        loop hundreds of ms). Inside a batch `put` writes nothing durable: it runs here."""
        if self._batch is not None:
            return self.put(data)
        digest: Digest = yield from waiting.wait_in_slices(waiting.in_thread(self.put, data))
        return digest

    def put_encoded(self, digest: Digest, data: bytes, stored: bytes | None, *,
                    present: bool | None = None) -> Digest:
        """`put` of bytes already hashed to `digest` (and, unless `stored` is None, encoded as a
        loose file): the same confirmation of an existing copy, the same batch. `present`: what
        that confirmation already found, inside this job (None: look now)."""
        b = self._batch
        if b is not None and b.holds(digest):
            self._confirm_equal(digest, self._pending_chunks(b, digest), [data], len(data),
                                pending=True)
            return digest
        if present is None:
            present = self._confirm_existing(digest, [data], len(data))
        if present:
            return digest
        if b is not None and self.pack and len(data) <= PACKED_MAX:
            self._to_pack(b, digest, data)
            return digest
        final = self.path(digest)
        self._ensure_fanout(final.parent)
        if stored is None:
            raw = b is None and self.pack and len(data) <= RAW_LOOSE_MAX \
                and not envelope.is_envelope(data)
            stored = data if raw else self.encode(data)
        if b is None:  # a big image's pages go back once durable (fs.drop_cached)
            fs.write_atomic(final, stored, drop_cache=len(stored) >= DROP_CACHED_FROM)
        else:
            b.pending[digest] = (loose.write_temp(final, stored), len(data))
        return digest

    def _to_pack(self, b: Batch, digest: Digest, data: bytes) -> None:
        if b.pack is not None:
            b.pack.add(digest, data)
            return
        b.small[digest] = data
        b.small_bytes += len(data)
        if len(b.small) >= PACK_AFTER or b.small_bytes >= PACK_AFTER_BYTES:
            b.pack = PackWriter(self.root / "pack")
            b.new_fanouts = True  # the pack folder may be new
            for d, x in b.small.items():
                b.pack.add(d, x)
            b.small.clear()

    # ------------------------------------------------------------ staging (worker threads)

    def stage(self, data: bytes) -> Staged:
        """Hash `data` (and, for a store without packs, write its loose temp file), from any thread;
        `adopt` (the batch's own thread) then names it. Only inside an open batch."""
        digest = self.hasher.digest(data)
        # An existing copy is confirmed here, on the worker: reading it back (a pack block
        # inflated, a loose file decompressed) was the costliest part of adopting on the loop.
        # Nothing removes objects while a job runs (the collector waits for the job's lock, and
        # the command line runs one job at a time), so what is found here is there at `adopt`.
        if self.pack and len(data) <= PACKED_MAX:  # packed by adopt: the pack compresses blocks
            return Staged(digest, data, None, self._confirm_existing(digest, [data], len(data)))
        final = self.path(digest)
        if os.path.lexists(final):
            return Staged(digest, data, None, self._confirm_existing(digest, [data], len(data)))
        stored = self.encode(data)
        self._ensure_fanout(final.parent, sync=False)
        return Staged(digest, data, loose.write_temp(final, stored))

    def adopt(self, staged: Staged) -> Digest:
        """Take a staged object into the open batch (or confirm the existing one); returns its name."""
        b = self._batch
        if b is None:
            raise RuntimeError("adopt needs an open batch")
        b.new_fanouts = True  # stage() may have created fan-out folders without syncing
        if staged.tmp is None:
            return self.put_encoded(staged.digest, staged.data, None, present=staged.present)
        d = staged.digest
        try:
            if b.holds(d):
                self._confirm_equal(d, self._pending_chunks(b, d), [staged.data], len(staged.data),
                                    pending=True)
            elif not self._confirm_existing(d, [staged.data], len(staged.data)):
                b.pending[d] = (staged.tmp, len(staged.data))
                staged.tmp = None
        finally:
            if staged.tmp is not None:
                fs.discard(staged.tmp)  # a duplicate, or a collision refused
                staged.tmp = None
        return d

    # ------------------------------------------------------------ files

    def put_file(self, path: str | os.PathLike[str], *,
                 max_bytes: int | None = None) -> tuple[Digest, int]:
        """Store a file's bytes (streaming above 1 MiB); returns (digest, size).

        Opens with O_NOFOLLOW so a symlink is refused rather than followed. Raises TooLarge as soon as
        more than `max_bytes` have been read (the file may grow while it is read).
        """
        fd = fs.open_read(path)
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

    def _read_small(self, fd: int, path: str | os.PathLike[str],
                    max_bytes: int | None) -> bytes | None:
        """Read a small file whole; None if it grew past CHUNK meanwhile (then stream it)."""
        chunks: list[bytes] = []
        total = 0
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

    def _put_stream(self, fd: int, path: str | os.PathLike[str],
                    max_bytes: int | None) -> tuple[Digest, int]:
        """Hash and store a big file chunk by chunk, loose. Compressed when its first chunk
        compresses well and its size holds still while it is read (the envelope declares the size
        up front); else, or if it changed meanwhile, stored raw from a second read."""
        announced = os.fstat(fd).st_size
        self._ensure_fanout(self.root)

        def too_large(size: int) -> TooLarge:
            assert max_bytes is not None  # only called past a limit
            return self._too_large(path, size, max_bytes)

        got = None
        if self.compress and announced > 0:
            first = os.read(fd, CHUNK)
            os.lseek(fd, 0, os.SEEK_SET)
            if envelope.pack(first) is not None:
                got = loose.stream_into_temp(self.root, fd, self.hasher, max_bytes,
                                             envelope.StreamPacker(announced),
                                             sync=self._batch is None, too_large=too_large)
                if got is None:
                    os.lseek(fd, 0, os.SEEK_SET)
        if got is None:
            got = loose.stream_into_temp(self.root, fd, self.hasher, max_bytes, None,
                                         sync=self._batch is None, too_large=too_large)
        assert got is not None  # only a compressed stream gives up
        tmp, digest, size = got
        placed = False
        try:
            b = self._batch
            if b is not None and b.holds(digest):
                self._confirm_equal(digest, self._pending_chunks(b, digest),
                                    loose.raw_chunks(tmp, self.limit), size, pending=True)
                return digest, size
            if self._confirm_existing(digest, loose.raw_chunks(tmp, self.limit), size):
                return digest, size
            final = self.path(digest)
            self._ensure_fanout(final.parent)
            if b is None:
                fs.rename(tmp, final)
                placed = True
                fs.fsync_dir(final.parent)
                fs.fsync_dir(self.root)  # the temp name lived here; make its removal durable too
            else:
                b.pending[digest] = (tmp, size)
                placed = True
            return digest, size
        finally:
            if not placed:
                fs.discard(tmp)

    def _too_large(self, path: str | os.PathLike[str], size: int, limit: int) -> TooLarge:
        return TooLarge(f"{path} is over the size limit ({size} > {limit} bytes)",
                        data={"path": str(path), "size": size, "limit": limit})

    def _ensure_fanout(self, folder: Path, *, sync: bool = True) -> None:
        b = self._batch
        if b is not None and b.fanouts is not None and folder.parent == self.root:
            b.fanouts.add(folder.name)  # before it exists: a worker may be about to create it
        if not folder.is_dir():
            if b is not None or not sync:
                # Inside a batch the commit makes the new folder durable with everything else.
                fs.mkdir(folder, sync=False)
                if b is not None:
                    b.new_fanouts = True
            else:
                fs.mkdir(folder)

    # ------------------------------------------------------------ confirming existing copies

    def _confirm_existing(self, digest: Digest, new_chunks: Chunks, size: int) -> bool:
        """True if a sound copy holds exactly these bytes; False if there is none (write one).

        Raises DigestCollision when a sound copy with the same digest holds different bytes."""
        b = self._batch
        try:
            if b is not None and b.fanouts is not None and digest[:2] not in b.fanouts:
                st = None  # no such fan-out folder: one listing at the batch's start says so
            else:
                st = os.stat(final := self.path(digest), follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            new_chunks = list(new_chunks)  # may be compared twice (loose, then a packed copy)
            sized = loose.raw_size(final, self.limit, st.st_size) == size
            if self._confirm_equal(digest, loose.raw_chunks(final, self.limit) if sized else None,
                                   new_chunks, size,
                                   sound=lambda: self._loose_sound(final, digest)):
                return True
        for pack, i in self._packed(digest, racy=False):
            try:
                raw = self.packs.read(pack, i)
            except (PackDamage, FileNotFoundError):
                continue  # a damaged or vanished copy does not count
            if len(raw) == size and same_bytes([raw], new_chunks):
                return True
            self._collision(digest, pack.pack_path)
        return False

    def _confirm_equal(self, digest: Digest, existing: Chunks | None, new_chunks: Chunks,
                       size: int, *, pending: bool = False,
                       sound: Callable[[], bool] | None = None) -> bool:
        """Whether `existing` (chunks, or None when its size already differs) holds the new bytes;
        a sound copy that does not is a collision."""
        try:
            if existing is not None and same_bytes(existing, new_chunks):
                return True
        except EnvelopeError:
            pass  # damaged: not equal; `sound` below says it is not sound either
        if pending or (sound is not None and sound()):
            self._collision(digest, self.path(digest))
        return False  # the existing copy is damaged; the caller writes a sound one

    def _loose_sound(self, where: Path, digest: Digest) -> bool:
        try:
            return loose.damage(where, digest, self.hasher, self.limit) is None
        except OSError:
            return False

    def _collision(self, digest: Digest, where: Path) -> None:
        raise DigestCollision(f"object {digest} already holds different bytes; refusing to share it",
                              data={"digest": digest, "path": str(where)})
