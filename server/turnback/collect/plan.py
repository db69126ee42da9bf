"""A collection's plan: what the roots reach, what is kept, what goes, made by reading only.

As restic's prune plans before it deletes, a collection first makes a `CollectionPlan` (this module),
then carries it out (`collect/collector.py`). The plan is made in slices on the owner's loop:

1. scan     every head's small facts, from the cache; more than `child_threshold` uncached heads are
            observed by the batch child process, the rest in process, a few per slice;
2. decide   which heads are kept and which retire (`retention.decide`);
3. roots    journal pins, intent and recovery records, parked sessions, the live state's references
            (`collect/reach.py`);
4. mark     the body of every kept head (and of intents, or the sidecar), and each reference list
            it names, a step each;
5. list     the object folders: every unmarked, unpinned loose object older than the scan's start
            goes, the rest stay (the old small ones are packed);
6. repack   which loose objects move into a pack and which packs are rewritten or dropped
            (`collect/repackplan.py`, on a helper thread).

Nothing of the store is written while planning; the head-facts cache the scan warms is saved by the
execution (it is rebuildable, and a dry run leaves it as it was). `turnback gc --dry-run` prints a
plan's `summary()`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from . import repackplan
from .cache import HeadCache
from .reach import Reach
from .retention import Decision, decide, kept_for
from .child import observations as child_observations
from .scan import list_heads, observe
from .slices import Slices
from ..store import fs
from ..store.objects.digest import is_digest

# The batch child costs a Python start-up (about 0.1 s, three times that on a loaded machine) where
# the in-process scan costs about 70 us a head, sliced: the child pays off only for big cold scans.
CHILD_THRESHOLD = 1000
ABSORB_PER_STEP = 64  # observations taken into the cache per step
CACHED_PER_STEP = 256  # cached heads looked up per step
# Object files whose mtime is within this of the scan's start count as new: the kernel stamps files
# from a coarse clock that can lag time.time() by a tick. (On file systems with 1-2 s timestamps an
# object written just after the start may look older; it is then protected by what records it: the
# journal or a head, both looked at before every deletion, or the open object batch.)
OBJECT_SLACK = 0.05


@dataclass
class CollectionPlan:
    """What one collection removes and keeps, as planned. The execution looks again before every
    deletion, so it may keep more than planned (what was referenced meanwhile), never remove more."""

    retire: list[int] = field(default_factory=list)  # heads to retire, oldest first
    keep: list[int] = field(default_factory=list)  # heads kept
    kept_for: dict[str, int] = field(default_factory=dict)  # why heads stay (retention.kept_for)
    reached: int = 0  # objects the roots reach (marked or pinned)
    doomed: list[tuple[str, int]] = field(default_factory=list)  # loose objects that go: (digest, bytes)
    objects_kept: int = 0  # loose objects that stay
    bytes_kept: int = 0
    to_pack: list[tuple[str, int]] = field(default_factory=list)  # old small loose ones kept: packable
    repack: repackplan.Plan | None = None  # None: the store has no packs, or nothing may go
    reach_size: int = 0  # len(marked) + len(pins) when the repack was planned
    blocked: list[str] = field(default_factory=list)  # why nothing may be deleted

    def summary(self) -> dict[str, Any]:
        """Counts and bytes of what the plan removes and keeps (`turnback gc --dry-run`)."""
        out: dict[str, Any] = {
            "dryRun": True, "headsRetired": len(self.retire), "headsKept": len(self.keep),
            "keptFor": dict(self.kept_for), "objectsReached": self.reached,
            "objectsDeleted": len(self.doomed), "bytesFreed": sum(size for _d, size in self.doomed),
            "objectsKept": self.objects_kept, "bytesKept": self.bytes_kept,
            "packsDeleted": 0, "packBytesDeleted": 0, "packsRewritten": 0, "packBytesRewritten": 0,
            "looseToPack": 0, "skipped": list(self.blocked)}
        repack = self.repack
        if repack is not None and not repack.empty:
            out["packsDeleted"] = len(repack.drop)
            out["packBytesDeleted"] = sum(_size(p) for p in repack.drop)
            out["packsRewritten"] = len(repack.rewrite)
            out["packBytesRewritten"] = sum(_size(p) for p in repack.rewrite)
            out["looseToPack"] = len(repack.loose) + len(repack.dups)
        return out


def _size(pack: Any) -> int:
    try:
        return int(pack.pack_path.stat().st_size)
    except OSError:
        return 0


class Planner(Reach):
    def __init__(self, wb: Any, cache: HeadCache | None = None, *, grace_heads: int | None = None,
                 grace_seconds: float | None = None, now: float | None = None,
                 object_slack: float = OBJECT_SLACK, child_threshold: int = CHILD_THRESHOLD,
                 use_child: bool = True, quick: bool = False, pack_all: bool = False,
                 **slicing: Any) -> None:
        """`quick`: its new pack at the put-time level, no rewrite for the layout alone (the
        command line's automatic run). `pack_all`: every small pack merged into its new one
        (`turnback gc`; collect/repackplan.make_plan). `slicing`: `max_steps`, `deadline`."""
        super().__init__(wb, cache if cache is not None else HeadCache.load(wb.store), **slicing)
        self.quick = quick
        self.pack_all = pack_all
        self.grace_heads: int = wb.options.grace_heads if grace_heads is None else grace_heads
        self.grace_seconds: float = wb.options.grace_seconds if grace_seconds is None else grace_seconds
        self.now = now
        self.t0 = 0.0  # when the plan began (time.time())
        self.object_slack = object_slack
        self.child_threshold = child_threshold
        self.use_child = use_child
        self._plan_head: int | None = None

    def make_plan(self) -> Slices[CollectionPlan]:
        """The plan, in slices (the caller opened the first one and set `t0`)."""
        plan = CollectionPlan()
        if self.store.kind == "heads":
            yield from self._scan()
            if not self.known and not self.broken:
                self._block("nothing is published yet: a store with heads collects after its first head")
            decision = self._decide()
            self.kept = set(decision.keep)
            plan.retire, plan.keep = list(decision.retire), sorted(decision.keep)
            plan.kept_for = kept_for(decision)
            self._plan_head = self._head_seq()
            yield from self._decided(plan)
            # Newest first: the current head's body is marked in the first marking slice.
            for seq in sorted(self.kept, reverse=True):
                if seq in self.known:
                    self._queue(self.known[seq].body, f"head {seq}")
        else:
            self._observe_sidecar()
        self.phase = "roots"
        yield from self._fresh_slice(1)
        yield from self._refresh_roots()
        if self._tick():
            yield from self._pause()
        yield from self._mark()
        if not self.blocked:
            yield from self._list_objects(plan)
        if not self.blocked and self.store.objects.pack:
            plan.repack = yield from self._plan_repack(plan.to_pack)
            plan.reach_size = len(self.marked) + len(self.pins)
        plan.reached = len(self.marked | self.pins)
        plan.blocked = list(self.blocked)
        return plan

    def _decided(self, plan: CollectionPlan) -> Slices[None]:
        """Once the heads are decided: nothing here (a plan only reads); the collector retires."""
        return
        yield

    # ------------------------------------------------------------------ 1. scan
    def _scan(self) -> Slices[None]:
        self.phase = "scan"
        listed = list_heads(self.store.heads.dir)
        self._tick()
        self.progress = {"done": 0, "total": len(listed)}
        uncached: list[tuple[int, tuple[int, int]]] = []
        for i, (seq, stamp) in enumerate(sorted(listed.items())):
            facts = self.cache.get(seq, stamp)
            if facts is not None:
                self.known[seq] = facts
            else:
                uncached.append((seq, stamp))
            if i % CACHED_PER_STEP == CACHED_PER_STEP - 1 and self._tick():
                yield from self._pause()
        self.stats["coldHeads"] = len(uncached)
        self.progress["done"] = len(listed) - len(uncached)
        observations = None
        if self.use_child and len(uncached) > self.child_threshold:
            observations = yield from child_observations(
                self, self.store.path, [s for s, _ in uncached])
        if observations is None:
            observations = []
            for seq, stamp in uncached:
                observations.append(observe(self.store.path, seq, stamp, self.store.objects))
                self.progress["done"] += 1
                if self._tick():
                    yield from self._pause()
        for i, obs in enumerate(observations):
            self._absorb(obs, plan=True)
            if i % ABSORB_PER_STEP == ABSORB_PER_STEP - 1 and self._tick():
                yield from self._pause()

    # ------------------------------------------------------------------ 2. decide
    def _decide(self) -> Decision:
        head = self.wb.book.head
        return decide(self.known, now=self.t0 if self.now is None else self.now, grace_heads=self.grace_heads,
                      grace_seconds=self.grace_seconds, protect=[head.seq] if head else [])

    def _head_seq(self) -> int | None:
        head = self.wb.book.head
        return head.seq if head is not None else None

    # ------------------------------------------------------------------ 5. list
    def _list_objects(self, plan: CollectionPlan) -> Slices[None]:
        """Every loose object: unreferenced ones older than the scan's start go, the rest stay."""
        self.phase = "sweep"
        root = self.store.objects.root
        yield from self._fresh_slice(1)
        try:
            fans = sorted(n for n in os.listdir(root) if len(n) == 2 and (root / n).is_dir())
        except FileNotFoundError:
            fans = []
        self._tick()
        cutoff = self.t0 - self.object_slack
        self.progress = {"done": 0, "total": len(fans)}
        for fan in fans:
            try:
                with os.scandir(root / fan) as it:
                    entries = list(it)
            except FileNotFoundError:
                continue
            for e in entries:
                digest = fan + e.name
                if fs.is_temp_name(e.name) or not is_digest(digest):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if self._keeps(digest) or st.st_mtime >= cutoff:
                    plan.objects_kept += 1
                    plan.bytes_kept += st.st_size
                    if st.st_mtime < cutoff and st.st_size <= repackplan.REPACK_MAX:
                        plan.to_pack.append((digest, st.st_size))
                else:
                    plan.doomed.append((digest, st.st_size))
            self.progress["done"] += 1
            if self._tick():
                yield from self._pause()

    # ------------------------------------------------------------------ 6. repack
    def _plan_repack(self, loose_kept: list[tuple[str, int]]) -> Slices[repackplan.Plan]:
        """Which loose objects move into a pack and which packs are rewritten or dropped, made on
        a helper thread; versions of one path (from the live session's checkpoints) become deltas."""
        self.phase = "pack"
        state = self.wb.book.state
        hints, names = yield from repackplan.iter_version_hints(state)
        yield from self._fresh_slice(1)
        objects = self.store.objects
        plan: repackplan.Plan = yield from self._off_loop(lambda: repackplan.make_plan(
            objects, self._keeps, list(loose_kept), self.t0, self.object_slack, hints, names,
            relayout=not self.quick, known=self.wb.book.state.known, pack_all=self.pack_all))
        return plan
