"""Batches: many puts made durable together, with one sync pass for their contents and one for
their names, before any head can name them.

A batch that writes many small objects (the first checkpoint above all) writes one pack; fewer, or
big ones, are loose files (`batch.py` holds its state). `iter_batch` commits in a job's steps: the
pack's last blocks, its index and the sync pass are waited for in slices (`waiting.py`), so a first
checkpoint's commit never holds the owner's loop; meanwhile the batch's objects stay readable.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .. import fs, waiting
from . import loose
from .batch import BATCH_SYNCFS_FROM, Batch, discard, sync_contents
from .packwrite import PackWriter
from .writer import ObjectWriting

__all__ = ["ObjectBatches"]

T = TypeVar("T")


class ObjectBatches(ObjectWriting):
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
            discard(b)
            raise
        self._batch = None
        for _ in self._iter_commit(b, threaded=False):
            pass  # nothing waits on a helper thread when not threaded

    def iter_batch(self, body: Generator[Any, Any, T]) -> Generator[Any, Any, T]:
        """`batch()` around a job's generator `body` (its value is body's): the same batch, whose
        commit then runs in steps. The pack's last blocks, its index and the one sync pass are
        waited for in slices (`waiting.py`), so a first checkpoint's commit (docs/performance.md)
        never holds the owner's loop. Meanwhile the batch's objects stay readable; new puts no
        longer join it (they are written durable)."""
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
            discard(b)
            raise
        self._batch = None
        self._sealing = b
        try:
            yield from self._iter_commit(b, threaded=True)
        finally:
            self._sealing = None
        return value

    def iter_settle(self) -> Generator[Any, Any, None]:
        """A job's steps: wait (in slices) while the open batch's pack has more blocks being
        compressed than it keeps in flight. A sweep calls it between files, so a fast read never
        makes `add` wait for the compressing thread on the loop's thread."""
        b = self._batch
        if b is not None and b.pack is not None and b.pack.backlog:
            yield from b.pack.iter_settle()

    def _open_batch(self) -> Batch:
        self._batch = b = Batch()
        try:
            b.fanouts = set(os.listdir(self.root))
        except FileNotFoundError:
            b.fanouts = set()
        return b

    def _iter_commit(self, b: Batch, *, threaded: bool) -> Generator[Any, Any, None]:
        try:
            for digest, data in b.small.items():  # too few for a pack: loose, as ever
                final = self.path(digest)
                if not final.parent.is_dir():
                    fs.mkdir(final.parent, sync=False)
                    b.new_fanouts = True  # synced with the names below
                b.pending[digest] = (loose.write_temp(final, self.encode(data)), len(data))
            b.small.clear()
            items = list(b.pending.items())
            temps = [tmp for _, (tmp, _) in items]
            if b.pack is not None:
                temps += (yield from b.pack.iter_finish()) if threaded else b.pack.finish()
            if threaded:
                yield from waiting.wait_in_slices(waiting.in_thread(sync_contents, temps))
            else:
                sync_contents(temps)
            # From here to its end in one step: no reader sees a temp name that is gone.
            folders: set[Path] = set()
            for digest, (tmp, _) in items:
                final = self.path(digest)
                fs.rename(tmp, final)
                folders.add(final.parent)
                folders.add(tmp.parent)
            if b.pack is not None:
                b.pack.publish()
                folders.add(b.pack.folder)
            if b.new_fanouts or b.pack is not None:
                folders.add(self.root)
            # The new names: their durability point, before any head can name them (one syncfs
            # for the fan-outs of a few loose objects, where a fsync each cost more than them).
            fs.sync_folders(folders, at_least=BATCH_SYNCFS_FROM)
        except BaseException:
            discard(b)  # renamed ones are already gone; the rest must not linger
            raise
        if b.pack is not None:
            self.packs.added(b.pack.name)

    def publish_pack(self, writer: PackWriter, *, also_sync: Sequence[Path] = ()) -> None:
        """Make a pack written outside a batch (the collector's repack) durable and visible: one
        sync pass, the renames, the folder. The writer is discarded if any of it fails."""
        try:
            fs.syncfs_or_fsync([*writer.finish(), *also_sync])
            writer.publish()
            fs.fsync_dir(writer.folder)
            fs.fsync_dir(self.root)
        except BaseException:
            writer.discard()
            raise
        self.packs.added(writer.name)
