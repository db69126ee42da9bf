"""Content-addressed, write-once object space, named by the seeded xxh3-128 digest of the raw bytes.

An object lives loose (`objects/ab/cdef…`, store/objects/loose.py) or in a pack (`objects/pack/`,
store/objects/packs.py), or both for a while; nothing above this class sees the difference. A batch that
writes many small objects (the first checkpoint above all) writes one pack; fewer, or big ones, are
loose files; the collector moves small loose objects into packs later (collect/repack.py).

Sharing is never trusted to the digest alone: before a put reuses an existing object it confirms size
and bytes, so a crafted collision cannot make a restore return wrong bytes. An existing copy that is
torn or damaged (its bytes no longer hash to its name) does not count: the put writes a sound one.
Every read verifies; a damaged copy is passed over when another copy is sound.

With `compress` (store format 2) a loose object's file may hold a zstd envelope (`envelope.py`); with
`pack` (format 3) batches may write packs. A format-1 store's raw objects read as they always did.
"""

from __future__ import annotations

import contextlib
import os
import stat as statmod
from collections.abc import Iterator
from pathlib import Path

from ...errors import CorruptObject, DigestCollision, InvalidParams, TooLarge
from . import envelope, loose
from .. import fsio, waiting
from .digest import Hasher, is_digest
from .envelope import EnvelopeError
from .loose import CHUNK, LooseDamage, same_bytes
from .packformat import NONE as NO_BASE
from .packs import PackDamage, PackSet
from .packwrite import PackWriter

__all__ = ["CHUNK", "ObjectStore", "Staged"]

# From this many files (or folders) on, a batch's commit syncs them with one syncfs rather than a
# fsync each: a settle's eight loose objects in eight fan-outs cost 17 fsyncs (docs/performance.md).
BATCH_SYNCFS_FROM = 2
PACKED_MAX = 4 << 20  # objects up to this size may live in a pack (bigger ones stream, loose)
PACK_AFTER = 32  # a batch writes a pack from this many small objects on (fewer: loose files)
PACK_AFTER_BYTES = 1 << 20
# A single write outside a batch (a capture on save) up to this size is stored raw: zstd would be
# most of its latency (2.5 to 4 ms a MiB here), and the collector packs and compresses it later.
RAW_LOOSE_MAX = 1 << 20
# A single write at least this big gives its pages back once durable; smaller ones stay cached
# (a save of unchanged bytes reads the object back to confirm it, and their pages cost little).
DROP_CACHED_FROM = 64 << 10



def _sync_contents(temps: list[Path]) -> None:
    """A batch's first durability point: its temp files' contents, before any is named."""
    fsio.syncfs_or_fsync(temps, at_least=BATCH_SYNCFS_FROM)


class _Batch:
    """Objects written during `with store.batch():`, made durable together on exit."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[Path, int]] = {}  # loose: digest -> (temp path, raw size)
        self.small: dict[str, bytes] = {}  # held until the batch knows whether it writes a pack
        self.small_bytes = 0
        self.pack: PackWriter | None = None
        self.fanouts: set[str] | None = None  # loose fan-out folders (only this process adds any)
        self.depth = 0
        self.new_fanouts = False  # folders created unsynced: the commit syncs objects/ too

    def holds(self, digest: str) -> bool:
        return digest in self.pending or digest in self.small or (
            self.pack is not None and digest in self.pack)


class Staged:
    """An object hashed by a worker thread, not yet named; `tmp` is its loose temp file, if any.
    `present`: whether the worker found a sound copy outside the batch holding these very bytes
    (None: it did not look)."""

    __slots__ = ("digest", "data", "tmp", "present")

    def __init__(self, digest: str, data: bytes, tmp: Path | None, present: bool | None = None):
        self.digest, self.data, self.tmp, self.present = digest, data, tmp, present

    def discard(self) -> None:
        if self.tmp is not None:
            fsio.discard(self.tmp)
            self.tmp = None


class ObjectStore:
    def __init__(self, root: Path, hasher: Hasher, *, compress: bool = True,
                 limit: int = envelope.LIMIT, pack: bool = True):
        self.root = Path(root)
        self.hasher = hasher
        self.compress = compress  # write envelopes (format 2); reading understands both regardless
        self.pack = pack  # batches may write packs (format 3); reading them needs no flag
        self.limit = limit  # no envelope may declare more raw bytes than this (decompression bombs)
        self.packs = PackSet(self.root / "pack", hasher)
        self._batch: _Batch | None = None
        self._sealing: _Batch | None = None  # a batch being committed in steps (iter_batch)
        self.removals = 0  # objects this process removed: lets callers know when a cache may lie

    @property
    def batch_open(self) -> bool:
        """Objects written inside an open batch are not durable, or even named, yet."""
        return self._batch is not None

    # ------------------------------------------------------------ naming

    def path(self, digest: str) -> Path:
        """Where the object's loose file is (or would be)."""
        if not is_digest(digest):
            raise InvalidParams(f"not an object digest: {digest!r}", data={"digest": str(digest)[:80]})
        return self.root / digest[:2] / digest[2:]

    # ------------------------------------------------------------ writing

    def encode(self, data: bytes) -> bytes:
        """What a loose object's file holds for these raw bytes (thread-safe)."""
        if not self.compress:
            return data
        packed = envelope.pack(data)
        return data if packed is None else packed

    def put(self, data: bytes) -> str:
        data = bytes(data)
        return self.put_encoded(self.hasher.digest(data), data, None)

    def iter_put(self, data: bytes):
        """`put` as a job's steps: outside a batch, the object's write and its fsyncs run on a
        helper thread, waited for in slices (a tool result's fsync behind a busy disk held the loop
        224 ms, 3 December). Inside a batch `put` writes nothing durable: it runs here."""
        if self._batch is not None:
            return self.put(data)
        return (yield from waiting.wait_in_slices(waiting.in_thread(self.put, data)))

    def put_encoded(self, digest: str, data: bytes, stored: bytes | None, *,
                    present: bool | None = None) -> str:
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
        if b is None:  # a big image's pages go back once durable (fsio.drop_cached)
            fsio.write_atomic(final, stored, drop_cache=len(stored) >= DROP_CACHED_FROM)
        else:
            b.pending[digest] = (loose.write_temp(final, stored), len(data))
        return digest

    def _to_pack(self, b: _Batch, digest: str, data: bytes) -> None:
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

    def adopt(self, staged: Staged) -> str:
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
        """Hash and store a big file chunk by chunk, loose. Compressed when its first chunk
        compresses well and its size holds still while it is read (the envelope declares the size
        up front); else, or if it changed meanwhile, stored raw from a second read."""
        announced = os.fstat(fd).st_size
        self._ensure_fanout(self.root)
        too_large = lambda size: self._too_large(path, size, max_bytes)  # noqa: E731
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
                fsio.rename(tmp, final)
                placed = True
                fsio.fsync_dir(final.parent)
                fsio.fsync_dir(self.root)  # the temp name lived here; make its removal durable too
            else:
                b.pending[digest] = (tmp, size)
                placed = True
            return digest, size
        finally:
            if not placed:
                fsio.discard(tmp)

    def _too_large(self, path, size: int, limit: int) -> TooLarge:
        return TooLarge(f"{path} is over the size limit ({size} > {limit} bytes)",
                        data={"path": str(path), "size": size, "limit": limit})

    def _ensure_fanout(self, folder: Path, *, sync: bool = True) -> None:
        b = self._batch
        if b is not None and b.fanouts is not None and folder.parent == self.root:
            b.fanouts.add(folder.name)  # before it exists: a worker may be about to create it
        if not folder.is_dir():
            if self._batch is not None or not sync:
                # Inside a batch the commit makes the new folder durable with everything else.
                fsio.mkdir(folder, sync=False)
                if self._batch is not None:
                    self._batch.new_fanouts = True
            else:
                fsio.mkdir(folder)

    # ------------------------------------------------------------ confirming existing copies

    def _pending_chunks(self, b: _Batch, digest: str):
        if digest in b.pending:
            return loose.raw_chunks(b.pending[digest][0], self.limit)
        if digest in b.small:
            return [b.small[digest]]
        return [b.pack.read(digest)]

    def _confirm_existing(self, digest: str, new_chunks, size: int) -> bool:
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

    def _packed(self, digest: str, *, racy: bool = True) -> Iterator:
        """The packs holding `digest`: the one a lookup finds, then (only if asked for more, when
        that copy is damaged) every other."""
        first = self.packs.locate(digest, racy=racy)
        if first is None:
            return
        yield first
        for hit in self.packs.locations(digest):
            if hit[0] is not first[0]:
                yield hit

    def _confirm_equal(self, digest: str, existing, new_chunks, size: int, *,
                       pending: bool = False, sound=None) -> bool:
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

    def _collision(self, digest: str, where) -> None:
        raise DigestCollision(f"object {digest} already holds different bytes; refusing to share it",
                              data={"digest": digest, "path": str(where)})

    def _loose_sound(self, where: Path, digest: str) -> bool:
        try:
            return loose.damage(where, digest, self.hasher, self.limit) is None
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
        b = self._open_batch()
        try:
            yield
        except BaseException:
            self._batch = None
            _discard(b)
            raise
        self._batch = None
        for _ in self._iter_commit(b, threaded=False):
            pass  # nothing waits on a helper thread when not threaded

    def iter_batch(self, body):
        """`batch()` around a job's generator `body` (its value is body's): the same batch, whose
        commit then runs in steps. The pack's last blocks, its index and the one sync pass are
        waited for in slices (`waiting.py`), so a first checkpoint's commit (0.6 s at 250,000 files
        on a quiet machine, much more on a loaded disk) never holds the owner's loop. Meanwhile the
        batch's objects stay readable; new puts no longer join it (they are written durable)."""
        if self._batch is not None:
            self._batch.depth += 1
            try:
                return (yield from body)
            finally:
                self._batch.depth -= 1
        b = self._open_batch()
        try:
            value = yield from body
        except BaseException:
            self._batch = None
            _discard(b)
            raise
        self._batch = None
        self._sealing = b
        try:
            yield from self._iter_commit(b, threaded=True)
        finally:
            self._sealing = None
        return value

    def iter_settle(self):
        """A job's steps: wait (in slices) while the open batch's pack has more blocks being
        compressed than it keeps in flight. A sweep calls it between files, so a fast read never
        makes `add` wait for the compressing thread on the loop's thread."""
        b = self._batch
        if b is not None and b.pack is not None and b.pack.backlog:
            yield from b.pack.iter_settle()

    def _open_batch(self) -> _Batch:
        self._batch = b = _Batch()
        try:
            b.fanouts = set(os.listdir(self.root))
        except FileNotFoundError:
            b.fanouts = set()
        return b

    def _holder(self, digest: str) -> _Batch | None:
        """The batch an object is read from until it is durable: the open one, or one being
        committed in steps (another request may open a batch of its own meanwhile)."""
        for b in (self._batch, self._sealing):
            if b is not None and b.holds(digest):
                return b
        return None

    def _iter_commit(self, b: _Batch, *, threaded: bool):
        try:
            for digest, data in b.small.items():  # too few for a pack: loose, as ever
                final = self.path(digest)
                if not final.parent.is_dir():
                    fsio.mkdir(final.parent, sync=False)
                    b.new_fanouts = True  # synced with the names below
                b.pending[digest] = (loose.write_temp(final, self.encode(data)), len(data))
            b.small.clear()
            items = list(b.pending.items())
            temps = [tmp for _, (tmp, _) in items]
            if b.pack is not None:
                temps += (yield from b.pack.iter_finish()) if threaded else b.pack.finish()
            if threaded:
                yield from waiting.wait_in_slices(waiting.in_thread(_sync_contents, temps))
            else:
                _sync_contents(temps)
            # From here to its end in one step: no reader sees a temp name that is gone.
            folders: set[Path] = set()
            for digest, (tmp, _) in items:
                final = self.path(digest)
                fsio.rename(tmp, final)
                folders.add(final.parent)
                folders.add(tmp.parent)
            if b.pack is not None:
                b.pack.publish()
                folders.add(b.pack.folder)
            if b.new_fanouts or b.pack is not None:
                folders.add(self.root)
            # The new names: their durability point, before any head can name them (one syncfs
            # for the fan-outs of a few loose objects, where a fsync each cost more than them).
            fsio.sync_folders(folders, at_least=BATCH_SYNCFS_FROM)
        except BaseException:
            _discard(b)  # renamed ones are already gone; the rest must not linger
            raise
        if b.pack is not None:
            self.packs.added(b.pack.name)

    def publish_pack(self, writer: PackWriter, *, also_sync: list[Path] = ()) -> None:
        """Make a pack written outside a batch (the collector's repack) durable and visible: one
        sync pass, the renames, the folder. The writer is discarded if any of it fails."""
        try:
            fsio.syncfs_or_fsync([*writer.finish(), *also_sync])
            writer.publish()
            fsio.fsync_dir(writer.folder)
            fsio.fsync_dir(self.root)
        except BaseException:
            writer.discard()
            raise
        self.packs.added(writer.name)

    # ------------------------------------------------------------ reading

    def has(self, digest: str) -> bool:
        b = self._holder(digest)
        if b is not None and b.holds(digest):
            return True
        return os.path.lexists(self.path(digest)) or self.packs.locate(digest) is not None

    def stat(self, digest: str) -> int | None:
        """The object's raw size (what `get` returns), None if absent; -1 if its envelope is damaged."""
        b = self._holder(digest)
        if b is not None and b.holds(digest):
            if digest in b.pending:
                return loose.raw_size(b.pending[digest][0], self.limit)
            return len(self._pending_chunks(b, digest)[0])
        try:
            return loose.raw_size(self.path(digest), self.limit)
        except FileNotFoundError:
            hit = self.packs.locate(digest)
            return None if hit is None else self.packs.size_of(*hit)

    def stored_size(self, digest: str) -> int | None:
        """What the object costs on disk: its file, or its share of its pack."""
        b = self._holder(digest)
        if b is not None and digest in b.pending:
            return os.stat(b.pending[digest][0], follow_symlinks=False).st_size
        try:
            return os.stat(self.path(digest), follow_symlinks=False).st_size
        except FileNotFoundError:
            hit = self.packs.locate(digest)
            return None if hit is None else self.packs.stored_size(*hit)

    def read_order(self, digests) -> list[str]:
        """`digests` in the order their bytes lie in the store: loose ones first, then packed ones
        pack by pack, block by block (a delta by its base's block). A plan that reads many files
        then inflates each solid block once, where path order took a block in and out of the
        block cache for every file (docs/performance.md, "Travel on real histories"). Read only:
        the index alone is looked at."""
        def key(digest: str):
            if not is_digest(digest) or os.path.lexists(self.path(digest)):
                return ("", 0, 0)
            hit = self.packs.locate(digest)
            if hit is None:
                return ("", 0, 0)
            pack, i = hit
            try:
                for _ in range(8):  # a delta chain, followed to the block its base is read from
                    seg, start, _size, base = pack.doc.entry(i)
                    if base == NO_BASE:
                        return (pack.name, seg.offset, start)
                    i = base
            except Exception:  # noqa: BLE001 - a damaged index: the read itself names it
                pass
            return (pack.name, 0, 0)
        return sorted(digests, key=key)

    def iter_warm(self, digest: str):
        """A job's steps before it reads a packed object on its loop: the solid blocks the read
        would inflate (8 MiB, 10 to 35 ms each under load, the collector's longest holds) are
        inflated on a helper thread meanwhile, so that `get` then finds them cached. Nothing to do
        (no step) for a loose object, a small block or a cached one; a damaged one is left for
        `get` to name."""
        if not is_digest(digest) or os.path.lexists(self.path(digest)):
            return
        hit = self.packs.locate(digest)
        if hit is None:
            return
        pack, i = hit
        cold = self.packs.cold_blocks(pack, i)
        if cold:
            try:
                yield from waiting.wait_in_slices(waiting.in_thread(self.packs.warm, pack, cold))
            except (PackDamage, OSError):
                pass  # the read itself names it

    def get(self, digest: str) -> bytes:
        """The object's raw bytes, verified against its digest (CorruptObject if no copy is sound,
        FileNotFoundError if there is none)."""
        b = self._holder(digest)
        if b is not None and b.holds(digest):
            if digest in b.pending:
                return self._get_loose(digest, b.pending[digest][0])
            return self._pending_chunks(b, digest)[0]
        final = self.path(digest)
        damage = None
        # Packed, as far as this process knows: read there first, not after a failed open of its
        # loose name (half a store open's reads of turns, once collected, were those misses).
        packed_first = self.packs.known(digest)
        if packed_first:
            got = self._get_packed(digest)
            if isinstance(got, bytes):
                return got
            damage = got
        try:
            return self._get_loose(digest, final)
        except FileNotFoundError:
            pass
        except CorruptObject as exc:
            damage = damage or exc
        if not packed_first:
            got = self._get_packed(digest)
            if isinstance(got, bytes):
                return got
            damage = damage or got
        if damage is not None:
            raise damage
        raise FileNotFoundError(2, f"no object {digest}", str(final))

    def _get_loose(self, digest: str, where: Path) -> bytes:
        try:
            return loose.read_verified(where, digest, self.hasher, self.limit)
        except LooseDamage as exc:
            raise self._corrupt(digest, where, exc.reason) from None

    def _get_packed(self, digest: str) -> bytes | CorruptObject | None:
        """The sound packed copy's bytes; the damage of the copies when none is sound; None when
        no pack holds the object."""
        first = None
        for _attempt in range(2):
            tried = 0
            for pack, i in self._packed(digest):
                tried += 1
                try:
                    return self.packs.read(pack, i)
                except FileNotFoundError:
                    first = first or self._corrupt(
                        digest, pack.pack_path, "its index names a pack file that is missing")
                except PackDamage as exc:
                    first = first or self._corrupt(digest, pack.pack_path, exc.reason)
            if not tried or not self.packs.refresh(force=True):
                break  # a repack may have moved it meanwhile: look once more
        return first

    def iter_chunks(self, digest: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        """Stream the object's raw bytes; raises CorruptObject after the last chunk if the digest does
        not match (or as soon as a compressed object proves damaged).

        Consumers must not commit anything built from the chunks before the iteration has finished.
        """
        b = self._holder(digest)
        where = b.pending[digest][0] if b is not None and digest in b.pending else self.path(digest)
        if (b is not None and b.holds(digest) and digest not in b.pending) \
                or not os.path.lexists(where) or loose.is_small_envelope(where):
            data = self.get(digest)  # whole: packed, small, or with the raw fallback of `get`
            for i in range(0, len(data), chunk_size):
                yield data[i:i + chunk_size]
            return
        h = self.hasher.stream()
        try:
            for chunk in loose.raw_chunks(where, self.limit):
                h.update(chunk)
                yield chunk
        except EnvelopeError as exc:
            raise self._corrupt(digest, where, f"compressed object: {exc}") from None
        if h.hexdigest() != digest:
            raise self._corrupt(digest, where, "its bytes do not match its digest")

    def verify(self, digest: str) -> bool:
        return self.damage(digest) is None

    def damage(self, digest: str) -> str | None:
        """None if a copy of the object is sound; else what is wrong with it, in a few words."""
        b = self._holder(digest)
        if b is not None and digest in b.pending:
            return loose.damage(b.pending[digest][0], digest, self.hasher, self.limit)
        try:
            reason = loose.damage(self.path(digest), digest, self.hasher, self.limit)
        except FileNotFoundError:
            reason = None if self.packs.locate(digest) is not None else "missing"
        else:
            if reason is None:
                return None
        got = self._get_packed(digest)
        if isinstance(got, bytes):
            return None
        if got is not None:
            return got.data.get("reason") or got.message
        return reason

    def list(self) -> Iterator[str]:
        """Every object name, loose or packed, each once (pending batch objects are not listed)."""
        seen = set()
        for digest in self.list_loose():
            seen.add(digest)
            yield digest
        for digest in self.packs.digests():
            if digest not in seen:
                yield digest

    def list_loose(self) -> Iterator[str]:
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
        """Delete an object's loose file. For the collector only, after it proved nothing references
        it (packed copies go when their pack is rewritten: collect/repack.py)."""
        self.removals += 1
        fsio.unlink(self.path(digest), missing_ok=True)

    def _corrupt(self, digest: str, where: Path, reason: str) -> CorruptObject:
        return CorruptObject(f"object {digest} is damaged: {reason} ({where})",
                             data={"digest": digest, "path": str(where), "reason": reason})


def _discard(b: _Batch) -> None:
    for tmp, _ in b.pending.values():
        fsio.discard(tmp)
    if b.pack is not None:
        b.pack.discard()
