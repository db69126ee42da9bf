"""Reading packs: every index of `objects/pack/`, searched in memory; segments read and verified.

Lookups cost a fan-out step and a binary search over the index's own bytes (a few microseconds).
Indexes of small packs are folded into one dict so a store with many small packs does not probe each
of them. The folder is listed again when a lookup misses and the folder may have changed, so a reader
sees the packs another process (the owner) wrote; a pack that vanished under a read (a repack removed
it) sends the read back to the lookup.

Every read is verified: a segment's checksum before it is inflated, the object's digest after, and a
delta's base the same way before it is used. Damage is a `PackDamage` whose reason names what is
wrong; `ObjectStore` turns it into `CorruptObject` unless another copy of the object is sound.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

from . import delta
from .. import fs
from .digest import Digest, Hasher
from .packformat import (BLOCK, DELTA, DIGEST, LEVEL_AT, NONE, PACK_HEADER, PACK_MAGIC, RAW,
                         IndexDoc, PackFiles, PackFormatError, Segment, decode_index, inflate_exactly,
                         segment_check)

SMALL_PACK = 4096  # packs with fewer objects are looked up through one shared dict
CACHE_BYTES = 16 << 20  # inflated blocks kept for the next read: a restore reads neighbours
KEPT_ABOVE = 16 << 10  # smaller blocks are not kept (inflating one costs microseconds)
CACHE_IDLE_SECONDS = 10.0  # kept blocks unread this long go (an owner waiting for the next turn)
WRITER_LOOKS_EVERY = 0.5  # seconds
_RACY_NS = 2_000_000_000  # a folder changed this recently may change again within its mtime tick


class PackDamage(Exception):
    def __init__(self, reason: str, pack: "Pack | None" = None):
        super().__init__(reason)
        self.reason = reason
        self.pack = pack


class Pack(PackFiles):
    """One pack and its index. Write-once: nothing here ever changes after it is loaded."""

    __slots__ = ("name", "folder", "doc")

    def __init__(self, folder: Path, name: str, doc: IndexDoc):
        self.folder, self.name, self.doc = folder, name, doc

    def __repr__(self) -> str:
        return f"Pack({self.name}, {self.doc.count} objects)"

    def made_at(self) -> int:
        """The zstd level its writer made its blocks at (its header says), 0 when the header does
        not say (a pack of an earlier version, with 8 MiB blocks) or cannot be read."""
        try:
            fd = fs.open_read(self.pack_path)
        except OSError:
            return 0
        try:
            head = os.pread(fd, PACK_HEADER, 0)
        except OSError:
            return 0
        finally:
            os.close(fd)
        return head[LEVEL_AT] if len(head) == PACK_HEADER and head[:4] == PACK_MAGIC else 0

    def read_stored(self, seg: Segment, fd: int | None = None) -> bytes:
        """A segment's stored bytes, checked against its checksum."""
        own = fd is None
        if fd is None:
            fd = fs.open_read(self.pack_path)
        try:
            data = os.pread(fd, seg.stored, seg.offset)
            if own and seg.offset == PACK_HEADER and os.pread(fd, 4, 0) != PACK_MAGIC:
                raise PackDamage("the pack does not start with its magic", self)
        finally:
            if own:
                os.close(fd)
        if len(data) != seg.stored:
            raise PackDamage("the pack is truncated: a segment ends past its end", self)
        if segment_check(data) != seg.check:
            raise PackDamage("its segment fails its checksum (damaged bytes in the pack)", self)
        return data


class PackSet:
    """Every pack of one store, as this process knows them."""

    def __init__(self, folder: Path, hasher: Hasher):
        self.folder = Path(folder)
        self.hasher = hasher
        self.packs: dict[str, Pack] = {}
        self.broken: dict[str, str] = {}  # index name -> why it could not be loaded
        self._small: dict[bytes, tuple[Pack, int]] = {}
        self._big: list[Pack] = []
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.RLock()
        self._cache: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._cached = 0
        self._used = 0.0  # monotonic time of the last read through the cache
        self._looked = float("-inf")  # monotonic time `refresh` last looked at the folder

    # -------------------------------------------------------------- the folder
    def refresh(self, *, force: bool = False, racy: bool = True) -> bool:
        """Look at the folder again if it may have changed; True if the set of packs changed.
        `racy=False`: trust an unchanged folder stamp even when it is recent (a writer's lookup,
        where a miss costs a duplicate copy, never a wrong answer)."""
        self._looked = time.monotonic()
        try:
            st = os.stat(self.folder, follow_symlinks=False)
        except FileNotFoundError:
            changed = bool(self.packs)
            if changed:
                with self._lock:
                    self._set({})
            return changed
        stamp = (st.st_mtime_ns, st.st_ino)
        racy = racy and time.time_ns() - st.st_mtime_ns < _RACY_NS
        if not force and stamp == self._stamp and not racy:
            return False
        names = {n[:-4] for n in os.listdir(self.folder)
                 if n.endswith(".idx") and not fs.is_temp_name(n)}
        self._stamp = stamp
        with self._lock:
            if names == set(self.packs) | set(self.broken) and not force:
                return False
            packs = {n: p for n, p in self.packs.items() if n in names}
            broken = {}
            for name in sorted(names - set(packs)):
                try:
                    doc = decode_index(fs.read_file(self.folder / f"{name}.idx"))
                except FileNotFoundError:
                    continue
                except (PackFormatError, OSError) as exc:
                    broken[name] = str(exc)
                    continue
                if doc.pack_id.hex() != name:
                    broken[name] = "the index belongs to another pack (its id differs from its name)"
                    continue
                packs[name] = Pack(self.folder, name, doc)
            self.broken = broken
            self._set(packs)
        return True

    def _set(self, packs: dict[str, Pack]) -> None:
        small: dict[bytes, tuple[Pack, int]] = {}
        big = []
        for pack in sorted(packs.values(), key=lambda p: p.name):
            if pack.doc.count < SMALL_PACK:
                for i in range(pack.doc.count):
                    small.setdefault(pack.doc.digest_at(i), (pack, i))
            else:
                big.append(pack)
        self.packs, self._small, self._big = packs, small, big
        for key in [k for k in self._cache if k[0] not in packs]:
            self._cached -= len(self._cache.pop(key))

    def drop_cache(self) -> None:
        """Forget the inflated blocks kept for the next read (after a big job: up to CACHE_BYTES
        an owner would otherwise keep resident while it waits for the next turn)."""
        with self._lock:
            self._cache.clear()
            self._cached = 0

    def drop_cache_if_idle(self, idle: float | None = None) -> int:
        """Forget the kept blocks when none was read for `idle` seconds; the bytes given back. For
        an owner's lease timer: each big buffer goes back to the system as it is freed."""
        with self._lock:
            idle = CACHE_IDLE_SECONDS if idle is None else idle
            if not self._cache or time.monotonic() - self._used < idle:
                return 0
            dropped, self._cache = self._cache, OrderedDict()
            freed, self._cached = self._cached, 0
        dropped.clear()  # here, outside the lock
        return freed

    def added(self, name: str) -> None:
        """This process just published pack `name`: load it now (a lookup must find it)."""
        self.refresh(force=True)

    # -------------------------------------------------------------- lookups
    def locate(self, digest: str, *, racy: bool = True) -> tuple[Pack, int] | None:
        """`racy=False`, a writer's lookup: the folder is looked at again at most every
        `WRITER_LOOKS_EVERY` (a first checkpoint stats it once per file otherwise, a system call
        that hands the interpreter lock to another thread each time); a miss there costs a
        duplicate copy, never a wrong answer, and this process's own packs are loaded as it
        publishes them (`added`)."""
        raw = bytes.fromhex(digest)
        hit = self._lookup(raw)
        if hit is None and (racy or time.monotonic() - self._looked >= WRITER_LOOKS_EVERY) \
                and self.refresh(racy=racy):
            hit = self._lookup(raw)
        return hit

    def known(self, digest: str) -> bool:
        """Whether a pack this process has loaded holds the object (no look at the folder)."""
        return self._lookup(bytes.fromhex(digest)) is not None

    def _lookup(self, raw: bytes) -> tuple[Pack, int] | None:
        hit = self._small.get(raw)
        if hit is not None:
            return hit
        for pack in self._big:
            i = pack.doc.find(raw)
            if i >= 0:
                return pack, i
        return None

    def locations(self, digest: str) -> list[tuple[Pack, int]]:
        """Every pack holding `digest` (a copy can be damaged while another is sound)."""
        raw = bytes.fromhex(digest)
        self.refresh()
        out = []
        for pack in list(self.packs.values()):
            i = pack.doc.find(raw)
            if i >= 0:
                out.append((pack, i))
        return out

    def digests(self) -> Iterator[Digest]:
        """Every packed digest (hex), each once."""
        self.refresh()
        seen: set[bytes] = set()
        for pack in list(self.packs.values()):
            d = pack.doc.digests
            for i in range(pack.doc.count):
                raw = d[i * DIGEST:(i + 1) * DIGEST]
                if raw not in seen:
                    seen.add(raw)
                    yield _hex(raw)

    def size_of(self, pack: Pack, i: int) -> int:
        return pack.doc.entry(i)[2]

    def stored_size(self, pack: Pack, i: int) -> int:
        """What the object costs in the pack: a delta its frame, a block member its share."""
        seg, _start, size, _base = pack.doc.entry(i)
        if seg.kind == DELTA or not seg.raw:
            return seg.stored
        return max(1, seg.stored * size // seg.raw)

    # -------------------------------------------------------------- reads
    def read(self, pack: Pack, i: int, depth: int = 0) -> bytes:
        """The raw bytes of entry `i`, verified against its digest; PackDamage, or FileNotFoundError
        when the pack file is gone."""
        try:
            seg, start, size, base = pack.doc.entry(i)
        except PackFormatError as exc:
            raise PackDamage(str(exc), pack) from None
        digest = pack.doc.digest_at(i).hex()
        if seg.kind == DELTA:
            if depth >= delta.MAX_CHAIN:
                raise PackDamage("its delta chain is deeper than any writer makes it", pack)
            base_digest = pack.doc.digest_at(base).hex()
            try:
                base_raw = self.read(pack, base, depth + 1)
            except PackDamage as exc:
                raise PackDamage(f"its delta base {base_digest} is damaged: {exc.reason}", pack) \
                    from None
            try:
                data = delta.decode(base_raw, pack.read_stored(seg), size)
            except delta.DeltaError as exc:
                raise PackDamage(str(exc), pack) from None
        else:
            data = self._segment(pack, i, seg)[start:start + size]
        if self.hasher.digest(data) != digest:
            raise PackDamage("its bytes in the pack do not match its digest", pack)
        return data

    def cold_blocks(self, pack: Pack, i: int) -> list[tuple[int, Segment]]:
        """The big solid blocks a read of entry `i` would inflate (its own, its delta bases'),
        that the block cache does not hold: what `warm` inflates off the caller's thread."""
        cold, depth = [], 0
        try:
            while depth <= delta.MAX_CHAIN:
                seg, _start, _size, base = pack.doc.entry(i)
                if seg.kind != DELTA:
                    if _kept(seg):
                        with self._lock:
                            if _cache_key(pack, i) not in self._cache:
                                cold.append((i, seg))
                    break
                i, depth = base, depth + 1
        except PackFormatError:
            return []  # the read itself will name the damage
        return cold

    def warm(self, pack: Pack, blocks: list[tuple[int, Segment]]) -> None:
        """Inflate these blocks into the cache (thread-safe; zstd lets go of the interpreter)."""
        for i, seg in blocks:
            self._segment(pack, i, seg)

    def _segment(self, pack: Pack, i: int, seg: Segment) -> bytes:
        key = _cache_key(pack, i)
        with self._lock:
            self._used = time.monotonic()
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        stored = pack.read_stored(seg)
        if seg.kind == RAW:
            raw = stored
        else:
            raw = inflate(stored, seg.raw, pack)
        if _kept(seg):
            with self._lock:
                self._cache[key] = raw
                self._cached += len(raw)
                while self._cached > CACHE_BYTES and len(self._cache) > 1:
                    self._cached -= len(self._cache.popitem(last=False)[1])
        return raw


def _kept(seg: Segment) -> bool:
    """Whether a read keeps the segment's inflated bytes in the block cache: a solid block of
    many objects (a tiny one inflates in microseconds)."""
    return seg.kind == BLOCK and seg.raw > KEPT_ABOVE


# bytes.hex, typed as naming a digest (no `Digest(...)` call per listed object).
_hex = cast(Callable[[bytes], Digest], bytes.hex)


def _cache_key(pack: Pack, i: int) -> tuple[str, int]:
    return (pack.name, pack.doc.segment_of(i))


def inflate(stored: bytes, raw_size: int, pack: Pack | None = None) -> bytes:
    try:
        out = inflate_exactly(stored, raw_size, PackFormatError, "its block")
    except PackFormatError as exc:
        raise PackDamage(str(exc), pack) from None
    if len(out) != raw_size:
        raise PackDamage(f"its block inflates to {len(out)} bytes, the index declares {raw_size}",
                         pack)
    return out


__all__ = ["Pack", "PackDamage", "PackSet", "NONE", "inflate"]
