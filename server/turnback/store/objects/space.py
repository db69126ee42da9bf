"""The object space's shared state and naming: the floor the reader, the writer and the batches
stand on (`objectstore.py` composes them into `ObjectStore`).

An object is named by its digest; its loose file is `ab/cdef…` under the root, its packs are under
`pack/`. Until a batch is durable its objects are read from the batch itself (`_holder`): the open
one, or one being committed in steps while another request opens a batch of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ...errors import CorruptObject, InvalidParams
from . import envelope, loose
from .batch import Batch
from .digest import Digest, Hasher, is_digest
from .packs import Pack, PackSet

__all__ = ["ObjectSpace"]


class ObjectSpace:
    def __init__(self, root: Path, hasher: Hasher, *, compress: bool = True,
                 limit: int = envelope.LIMIT, pack: bool = True):
        self.root = Path(root)
        self._root_text = str(self.root) + os.sep  # `loose_name` joins strings: no Path per read
        self.hasher = hasher
        self.compress = compress  # write envelopes (format 2); reading understands both regardless
        self.pack = pack  # batches may write packs (format 3); reading them needs no flag
        self.limit = limit  # no envelope may declare more raw bytes than this (decompression bombs)
        self.packs = PackSet(self.root / "pack", hasher)
        self._batch: Batch | None = None
        self._sealing: Batch | None = None  # a batch being committed in steps (iter_batch)
        self.removals = 0  # objects this process removed: lets callers know when a cache may lie

    @property
    def batch_open(self) -> bool:
        """Objects written inside an open batch are not durable, or even named, yet."""
        return self._batch is not None

    def path(self, digest: str) -> Path:
        """Where the object's loose file is (or would be)."""
        if not is_digest(digest):
            raise InvalidParams(f"not an object digest: {digest!r}", data={"digest": str(digest)[:80]})
        return self.root / digest[:2] / digest[2:]

    def loose_name(self, digest: str) -> str:
        """`path` as a string: a read that may find nothing there (a packed object) pays no Path
        (building one was a tenth of a store open's reads; docs/performance.md)."""
        if not is_digest(digest):
            raise InvalidParams(f"not an object digest: {digest!r}", data={"digest": str(digest)[:80]})
        return f"{self._root_text}{digest[:2]}{os.sep}{digest[2:]}"

    def encode(self, data: bytes) -> bytes:
        """What a loose object's file holds for these raw bytes (thread-safe)."""
        if not self.compress:
            return data
        packed = envelope.pack(data)
        return data if packed is None else packed

    def _holder(self, digest: str) -> Batch | None:
        """The batch an object is read from until it is durable: the open one, or one being
        committed in steps (another request may open a batch of its own meanwhile)."""
        for b in (self._batch, self._sealing):
            if b is not None and b.holds(digest):
                return b
        return None

    def _pending_chunks(self, b: Batch, digest: Digest) -> list[bytes] | Iterator[bytes]:
        if digest in b.pending:
            return loose.raw_chunks(b.pending[digest][0], self.limit)
        if digest in b.small:
            return [b.small[digest]]
        assert b.pack is not None  # b.holds(digest)
        return [b.pack.read(digest)]

    def _pending_bytes(self, b: Batch, digest: Digest) -> bytes:
        """A batch's object held in memory or in its pack (not a loose temp file)."""
        if digest in b.small:
            return b.small[digest]
        assert b.pack is not None  # b.holds(digest)
        return b.pack.read(digest)

    def _packed(self, digest: str, *, racy: bool = True) -> Iterator[tuple[Pack, int]]:
        """The packs holding `digest`: the one a lookup finds, then (only if asked for more, when
        that copy is damaged) every other."""
        first = self.packs.locate(digest, racy=racy)
        if first is None:
            return
        yield first
        for hit in self.packs.locations(digest):
            if hit[0] is not first[0]:
                yield hit

    def _corrupt(self, digest: str, where: Path, reason: str) -> CorruptObject:
        return CorruptObject(f"object {digest} is damaged: {reason} ({where})",
                             data={"digest": digest, "path": str(where), "reason": reason})
