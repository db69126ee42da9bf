"""The collector: one collection as a job that yields after every slice, a plan and then its execution.

The plan (`collect/plan.py`) reads: it scans the heads, decides which stay, marks what the roots
reach, lists the loose objects that go and plans the repack. The execution (here) carries it out,
each mutation after ownership and, for every deletion, after looking again at everything that could
have changed since the plan (`Reach._recheck`):

1. retire   every obsolete head, each after an ownership check and a head-stability check; then
            kept heads past the newest 64 into the pack of old heads (store/objects/headpack.py).
            This step runs inside the plan, right after its decision and before any marking, as
            the collector always did: a bounded run (collect/auto.py) stopped later in its plan
            has still retired the heads and saved its head cache, so the next run goes further;
2. sweep    delete the planned loose objects in batches of `delete_batch`, each batch only after
            ownership, heads, the sidecar, pins and records were looked at again. Anything new is an
            added observation: a new head is kept and its body marked, new pins are added, and the
            batch is filtered again; work already done is not redone;
3. pack     move small loose objects into a pack, versions as deltas; rewrite packs mostly garbage
            (collect/repack.py), planned again first when something was observed since the plan.

docs/collection.md gives the argument for each step. A collection never deletes while an object batch
is open in this process (a sweep or capture job between its slices may hold digests it has not
recorded yet), and never deletes at all when it could not read a root it needed (a head record, a
retained body, a journal, an intent or recovery record): what an unreadable root references is
unknown, so nothing may be called unreferenced. `dry_run` makes the plan and returns its summary.
"""

from __future__ import annotations

import time
from typing import Any

from ..store import fs
from . import repack
from .cache import HeadCache
from .plan import CollectionPlan, Planner
from .scan import list_heads
from .slices import MAX_STEPS, CollectionStopped, Slices

__all__ = ["Collector", "CollectionStopped", "collect_job"]

DELETE_BATCH = 256


class Collector(Planner):
    def __init__(self, wb: Any, cache: HeadCache | None = None, *, max_steps: int = MAX_STEPS,
                 delete_batch: int = DELETE_BATCH, deadline: float | None = None,
                 dry_run: bool = False, **options: Any) -> None:
        """`options` go to `Planner` (the grace window, the child, `quick`, `pack_all`);
        `deadline` (monotonic): stop (CollectionStopped) at the first pause past it, never while
        a helper thread works for it. `dry_run`: plan only, and return the plan's summary."""
        super().__init__(wb, cache, max_steps=max_steps, deadline=deadline, **options)
        self.delete_batch = max(1, delete_batch)
        self.dry_run = dry_run

    def job(self) -> Slices[dict[str, Any]]:
        self._open_slice()
        self.t0 = time.time()
        if self.now is None:
            self.now = self.t0
        self.wb.book.require_owner()
        plan = yield from self.make_plan()
        if self.dry_run:
            self._close_slice()
            return plan.summary()
        return (yield from self.execute(plan))

    def execute(self, plan: CollectionPlan) -> Slices[dict[str, Any]]:
        """Carry `plan` out; returns the stats."""
        if self.store.kind == "heads":
            self.stats["keptFor"] = plan.kept_for  # why heads stay, for the command line's words
        self.stats["objectsKept"] += plan.objects_kept
        self.stats["bytesKept"] += plan.bytes_kept
        if not self.blocked:
            yield from self._sweep(plan.doomed)
        else:
            self._kept(plan.doomed)
        if not self.blocked and plan.repack is not None:
            repack_plan = plan.repack
            if len(self.marked) + len(self.pins) != plan.reach_size:  # observed meanwhile
                repack_plan = yield from self._plan_repack(plan.to_pack)
            yield from repack.phase(self, repack_plan)
        self.stats["skipped"] = list(self.blocked)
        if self.store.kind == "heads":
            yield from self._fresh_slice(2)
            self.cache.keep_only(list_heads(self.store.heads.dir))
            self.stats["headsKept"] = len(self.known)
            self.wb.book.require_owner()
            if self.cache.save():
                self._tick()
        self.stats["cacheBytes"] = self.cache.memory_bytes()
        self._close_slice()
        return dict(self.stats)

    def _decided(self, plan: CollectionPlan) -> Slices[None]:
        """The heads are retired as soon as they are decided, before anything is marked (not by a
        dry run), and the head cache saved: a bounded run (`collect/auto.py`) stopped later in its
        plan has still retired what it could and spared the next run the cold reads."""
        if self.dry_run:
            return
        yield from self._fresh_slice(1)
        self.wb.book.require_owner()  # even the rebuildable cache is written by the owner only
        if self.cache.save() and self._tick():
            yield from self._pause()
        yield from self._retire(plan)

    # ------------------------------------------------------------------ 1. retire
    def _retire(self, plan: CollectionPlan) -> Slices[None]:
        self.phase = "retire"
        self.progress = {"done": 0, "total": len(plan.retire)}
        for seq in plan.retire:
            yield from self._fresh_slice(2)
            self.wb.book.require_owner()  # ownership before every mutation
            if self._head_seq() != self._plan_head:  # head stability: observe, never retire what is new
                self._observe_new_heads()
                self._plan_head = self._head_seq()
                self.kept |= set(self._decide().keep)
                self._tick()
                yield from self._fresh_slice(1)
                self.wb.book.require_owner()
            if seq in self.kept or seq == self._head_seq():
                continue
            # Unlinked now, made durable below with one folder sync off the loop: under load one
            # fsync per head held the loop 8-20 ms a retirement. Nothing is deleted before that sync.
            fs.unlink(self.store.heads.path(seq), missing_ok=True)
            self.retired.add(seq)
            self.known.pop(seq, None)
            self.cache.drop(seq)
            self.stats["headsRetired"] += 1
            self.progress["done"] += 1
            if self._tick():
                yield from self._pause()
        if self.stats["headsRetired"]:
            yield from self._off_loop(fs.fsync_dir, self.store.heads.dir)
        # Kept heads past the newest few go into the pack of old heads (a block each on disk
        # otherwise), retired ones out of it: durable before anything is deleted.
        self.wb.book.require_owner()
        retired = sorted(self.retired)
        moved = yield from self._off_loop(lambda: self.store.heads.pack_old(drop=retired))
        self.stats["headsPacked"] = len(moved)
        # A head kept on a second look (the session moved onto it meanwhile) is marked before the
        # first deletion (`_recheck` marks what is queued); the plan's were marked already.
        for seq in sorted(self.kept, reverse=True):
            if seq in self.known:
                self._queue(self.known[seq].body, f"head {seq}")

    # ------------------------------------------------------------------ 2. sweep
    def _sweep(self, doomed: list[tuple[str, int]]) -> Slices[None]:
        self.phase = "sweep"
        self.progress = {"done": 0, "total": len(doomed)}
        for start in range(0, len(doomed), self.delete_batch):
            batch = doomed[start:start + self.delete_batch]
            if self.blocked:  # a root became unreadable: what is left stays
                self._kept(batch)
                continue
            yield from self._delete(batch)
            self.progress["done"] += len(batch)

    def _kept(self, objects: list[tuple[str, int]]) -> None:
        self.stats["objectsKept"] += len(objects)
        self.stats["bytesKept"] += sum(size for _d, size in objects)

    def _delete(self, batch: list[tuple[str, int]]) -> Slices[None]:
        """Delete one batch, each part of it only after looking at everything that could have changed
        since the plan. A part ends when the slice's time is spent (a slow disk may make unlinks
        slow); the rest waits for the next slice and is looked at again first."""
        while batch:
            batch = yield from self._delete_part(batch)

    def _delete_part(self, batch: list[tuple[str, int]]) -> Slices[list[tuple[str, int]]]:
        objects = self.store.objects
        yield from self._recheck()
        if self.blocked:
            self._kept(batch)
            return []
        deleted = []
        done = 0
        for digest, size in batch:
            done += 1
            if self._keeps(digest):  # rescued by an observation added since the plan
                self._kept([(digest, size)])
            else:
                objects.remove(digest)
                deleted.append(digest)
                self.stats["objectsDeleted"] += 1
                self.stats["bytesFreed"] += size
            if self._slice_spent():
                break
        self.wb.book.codec.forget(deleted)
        self._tick()
        yield from self._pause()
        return batch[done:]


def collect_job(wb: Any, cache: HeadCache | None = None, **options: Any) -> Slices[dict[str, Any]]:
    """A collection job for `wb` (see `Collector` for the options); returns the stats."""
    return Collector(wb, cache, **options).job()
