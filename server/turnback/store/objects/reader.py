"""Reading the object space: presence, sizes, the bytes (verified), streaming, read order.

Every read verifies against the digest; a damaged copy is passed over when another copy is sound.
An object of an open (or sealing) batch is read from the batch. Packed reads go through the pack
set's block cache (`packs.py`); `iter_warm` fills it on a helper thread before a job reads on its
loop.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from ...errors import CorruptObject
from .. import waiting
from . import loose
from .digest import Digest, is_digest
from .envelope import EnvelopeError
from .loose import CHUNK, LooseDamage
from .packformat import NONE as NO_BASE
from .packs import PackDamage
from .space import ObjectSpace

__all__ = ["ObjectReading"]


class ObjectReading(ObjectSpace):
    def has(self, digest: str) -> bool:
        b = self._holder(digest)
        if b is not None and b.holds(digest):
            return True
        return os.path.lexists(self.loose_name(digest)) or self.packs.locate(digest) is not None

    def stat(self, digest: Digest) -> int | None:
        """The object's raw size (what `get` returns), None if absent; -1 if its envelope is damaged."""
        b = self._holder(digest)
        if b is not None and b.holds(digest):
            if digest in b.pending:
                return loose.raw_size(b.pending[digest][0], self.limit)
            return len(self._pending_bytes(b, digest))
        try:
            return loose.raw_size(self.path(digest), self.limit)
        except FileNotFoundError:
            hit = self.packs.locate(digest)
            return None if hit is None else self.packs.size_of(*hit)

    def stored_size(self, digest: Digest) -> int | None:
        """What the object costs on disk: its share of the pack a lookup finds it in, else its file.
        The loaded packs' index is asked first, as `get` does (the stat of a loose name that a
        collected object no longer has was a third of a store open's time)."""
        b = self._holder(digest)
        if b is not None and digest in b.pending:
            return os.stat(b.pending[digest][0], follow_symlinks=False).st_size
        if is_digest(digest) and self.packs.known(digest):
            hit = self.packs.locate(digest)
            if hit is not None:
                return self.packs.stored_size(*hit)
        try:
            return os.stat(self.loose_name(digest), follow_symlinks=False).st_size
        except FileNotFoundError:
            hit = self.packs.locate(digest)
            return None if hit is None else self.packs.stored_size(*hit)

    def read_order(self, digests: Iterable[Digest]) -> list[Digest]:
        """`digests` in the order their bytes lie in the store: loose ones first, then packed ones
        pack by pack, block by block (a delta by its base's block). A plan that reads many files
        then inflates each solid block once, where path order took a block in and out of the
        block cache for every file (docs/performance.md, "Travel on real histories"). Read only:
        the index alone is looked at."""
        def key(digest: Digest) -> tuple[str, int, int]:
            if not is_digest(digest) or os.path.lexists(self.loose_name(digest)):
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

    def iter_warm(self, digest: Digest) -> Generator[Any, Any, None]:
        """A job's steps before it reads a packed object on its loop: the solid blocks the read
        would inflate (8 MiB, 10 to 35 ms each under load, the collector's longest holds) are
        inflated on a helper thread meanwhile, so that `get` then finds them cached. Nothing to do
        (no step) for a loose object, a small block or a cached one; a damaged one is left for
        `get` to name."""
        if not is_digest(digest) or os.path.lexists(self.loose_name(digest)):
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

    def get(self, digest: Digest) -> bytes:
        """The object's raw bytes, verified against its digest (CorruptObject if no copy is sound,
        FileNotFoundError if there is none)."""
        b = self._holder(digest)
        if b is not None and b.holds(digest):
            if digest in b.pending:
                return self._get_loose(digest, b.pending[digest][0])
            return self._pending_bytes(b, digest)
        damage = None
        # Packed, as far as this process knows: read there first, not after a failed open of its
        # loose name (half a store open's reads of turns, once collected, were those misses).
        packed_first = is_digest(digest) and self.packs.known(digest)
        if packed_first:
            got = self._get_packed(digest)
            if isinstance(got, bytes):
                return got
            damage = got
        final = self.path(digest)  # built only now: a packed read needs no Path
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

    def _get_loose(self, digest: Digest, where: Path) -> bytes:
        try:
            return loose.read_verified(where, digest, self.hasher, self.limit)
        except LooseDamage as exc:
            raise self._corrupt(digest, where, exc.reason) from None

    def _get_packed(self, digest: Digest) -> bytes | CorruptObject | None:
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

    def iter_chunks(self, digest: Digest, chunk_size: int = CHUNK) -> Iterator[bytes]:
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
