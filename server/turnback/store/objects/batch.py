"""A batch's state: the objects written during `with store.batch():`, not yet durable or named.

Loose objects wait as temp files, small ones in memory until the batch knows whether it writes a
pack (from PACK_AFTER objects or PACK_AFTER_BYTES on), then in that pack's writer. `Staged` is an
object a worker thread hashed (and perhaps wrote as a temp file) for the batch to adopt.
"""

from __future__ import annotations

from pathlib import Path

from .. import fs
from .digest import Digest
from .packwrite import PackWriter

__all__ = ["BATCH_SYNCFS_FROM", "PACKED_MAX", "PACK_AFTER", "PACK_AFTER_BYTES", "Batch", "Staged",
           "discard", "sync_contents"]

# From this many files (or folders) on, a batch's commit syncs them with one syncfs rather than a
# fsync each: a settle's eight loose objects in eight fan-outs cost 17 fsyncs (docs/performance.md).
BATCH_SYNCFS_FROM = 2
PACKED_MAX = 4 << 20  # objects up to this size may live in a pack (bigger ones stream, loose)
PACK_AFTER = 32  # a batch writes a pack from this many small objects on (fewer: loose files)
PACK_AFTER_BYTES = 1 << 20


class Batch:
    """Objects written during `with store.batch():`, made durable together on exit."""

    def __init__(self) -> None:
        self.pending: dict[Digest, tuple[Path, int]] = {}  # loose: digest -> (temp path, raw size)
        self.small: dict[Digest, bytes] = {}  # held until the batch knows whether it writes a pack
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

    def __init__(self, digest: Digest, data: bytes, tmp: Path | None,
                 present: bool | None = None):
        self.digest, self.data, self.tmp, self.present = digest, data, tmp, present

    def discard(self) -> None:
        if self.tmp is not None:
            fs.discard(self.tmp)
            self.tmp = None


def sync_contents(temps: list[Path]) -> None:
    """A batch's first durability point: its temp files' contents, before any is named."""
    fs.syncfs_or_fsync(temps, at_least=BATCH_SYNCFS_FROM)


def discard(b: Batch) -> None:
    """Remove what a failed batch wrote: its temp files and its unpublished pack."""
    for tmp, _ in b.pending.values():
        fs.discard(tmp)
    if b.pack is not None:
        b.pack.discard()
