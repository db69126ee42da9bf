"""The collector: one collection as a job that yields after every slice.

Order (docs/collection.md gives the argument for each step):

1. scan     every head's small facts, from the cache; more than `child_threshold` uncached heads are
            observed by the batch child process, the rest in process, a few per slice;
2. decide   which heads are kept (`retention.decide`);
3. retire   every obsolete head, each after an ownership check and a head-stability check; then
            kept heads past the newest 64 into the pack of old heads (store/objects/headpack.py);
4. roots    journal pins, intent and recovery records, the live state's references;
5. mark     the body of every kept head (and of intents, or the sidecar), and each reference list
            it names, a step each;
6. sweep    list the object folders, then delete unmarked, unpinned objects older than the scan's
            start in batches of `delete_batch`, each batch only after ownership, heads, the sidecar,
            pins and records were looked at again. Anything new is an added observation: a new head
            is kept and its body marked, new pins are added, and the batch is filtered again; work
            already done is not redone;
7. pack     move small loose objects into a pack, versions as deltas; rewrite packs mostly garbage
            (collect/repack.py).

A collection never deletes while an object batch is open in this process (a sweep or capture job
between its slices may hold digests it has not recorded yet), and never deletes at all when it could
not read a root it needed (a head record, a retained body, a journal, an intent or recovery record):
what an unreadable root references is unknown, so nothing may be called unreferenced.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

import cbor2

from ..errors import TurnbackError
from ..store.objects.digest import is_digest
from ..store import fsio, lineage
from . import repack, repackplan, roots
from .cache import HeadCache
from .retention import Decision, decide, kept_for
from .scan import HeadFacts, facts_of, list_heads, observe

LIST = "list"  # the origin of a queued reference list (collector._mark)
MAX_STEPS = 8  # steps per slice: a step is one small file read, one retirement, one body, one batch
SLICE_SECONDS = 0.005  # half the loop's 10 ms: a request that lands mid-slice still answers in time
DELETE_BATCH = 256
# The batch child costs a Python start-up (about 0.1 s, three times that on a loaded machine) where
# the in-process scan costs about 70 us a head, sliced: the child pays off only for big cold scans.
CHILD_THRESHOLD = 1000
ABSORB_PER_STEP = 64  # observations taken into the cache per step
# Object files whose mtime is within this of the scan's start count as new: the kernel stamps files
# from a coarse clock that can lag time.time() by a tick. (On file systems with 1-2 s timestamps an
# object written just after the start may look older; it is then protected by what records it: the
# journal or a head, both looked at before every deletion, or the open object batch.)
OBJECT_SLACK = 0.05
CACHED_PER_STEP = 256  # cached heads looked up per step


class CollectionStopped(BaseException):
    """A bounded collection (`collect/auto.py`) reached its deadline at a pause and stopped there.
    Not an Exception, as GeneratorExit is not: no handler of the collector's that records an error
    and goes on may take it for one; those that clean up (`except BaseException`) still do."""


class Collector:
    def __init__(self, wb, cache: HeadCache | None = None, *, grace_heads: int | None = None,
                 grace_seconds: float | None = None, now: float | None = None,
                 object_slack: float = OBJECT_SLACK, child_threshold: int = CHILD_THRESHOLD,
                 use_child: bool = True, max_steps: int = MAX_STEPS,
                 delete_batch: int = DELETE_BATCH, quick: bool = False,
                 deadline: float | None = None, pack_all: bool = False):
        """`quick`: its new pack at the put-time level, no rewrite for the layout alone (the
        command line's automatic run); `deadline` (monotonic): stop (CollectionStopped) at the
        first pause past it, never while a helper thread works for it. `pack_all`: every small
        pack merged into its new one (`turnback gc`; collect/repackplan.make_plan)."""
        self.wb = wb
        self.quick = quick
        self.pack_all = pack_all
        self.deadline = deadline
        self._in_thread = False
        self.store = wb.store
        self.cache = cache if cache is not None else HeadCache.load(wb.store)
        self.grace_heads = wb.options.grace_heads if grace_heads is None else grace_heads
        self.grace_seconds = wb.options.grace_seconds if grace_seconds is None else grace_seconds
        self.now = now
        self.object_slack = object_slack
        self.child_threshold = child_threshold
        self.use_child = use_child
        self.max_steps = max(2, max_steps)
        self.delete_batch = max(1, delete_batch)
        self.phase = "scan"
        # observations of this run: they only ever grow
        self.known: dict[int, HeadFacts] = {}  # every head observed and not retired
        self.broken: dict[int, str] = {}  # unreadable head records
        self.kept: set[int] = set()
        self.retired: set[int] = set()
        self.to_mark: deque[tuple[str, str]] = deque()  # (body digest, origin)
        self.marked_bodies: set[str] = set()
        self.marked: set[str] = set()
        self.pins: set[str] = set()
        self._journal_pins = roots.JournalPins()  # read on from where it stopped
        self._state_refs = roots.StateRefs()  # the live state, read again where it changed
        self.loose_kept: list[tuple[str, int]] = []  # referenced old loose objects: to pack
        self.blocked: list[str] = []  # why nothing may be deleted
        self._pins_key = None
        self._records_seen: set[tuple[str, str]] = set()
        self._sidecar_bodies: set[str] = set()
        self._sessions_seen = None  # signature of the session records last looked at
        self._plan_head: int | None = None
        self.progress = {"done": 0, "total": 0}
        self.stats = {"headsRetired": 0, "objectsDeleted": 0, "bytesFreed": 0, "bytesKept": 0,
                      "slices": 0, "maxSliceMs": 0.0, "maxSliceSteps": 0, "headsKept": 0,
                      "objectsKept": 0, "bodiesMarked": 0, "coldHeads": 0, "child": False,
                      "observations": 0, "waits": 0, "cacheBytes": 0, "skipped": [],
                      "packsWritten": 0, "packsDeleted": 0, "objectsPacked": 0, "deltas": 0,
                      "packBytes": 0, "looseRemoved": 0, "headsPacked": 0,
                      "slowestByPhase": {},  # phase -> its longest slice, ms: what holds the loop
                      "slowestCpuByPhase": {}}  # phase -> most CPU one of its slices took, ms

    # ------------------------------------------------------------------ slices
    def _open_slice(self) -> None:
        self._slice_start = time.monotonic()
        self._slice_cpu = time.thread_time()
        self._slice_steps = 0

    def _close_slice(self) -> None:
        ms = (time.monotonic() - self._slice_start) * 1000.0
        # The loop thread's own CPU in the slice: on a loaded machine the wall time of a slice is
        # mostly waiting for a core, and only this part is work the loop could have been spared.
        cpu = (time.thread_time() - self._slice_cpu) * 1000.0
        s = self.stats
        s["slices"] += 1
        s["maxSliceMs"] = max(s["maxSliceMs"], round(ms, 3))
        by_phase = s["slowestByPhase"]
        by_phase[self.phase] = max(by_phase.get(self.phase, 0.0), round(ms, 3))
        cpu_phase = s["slowestCpuByPhase"]
        cpu_phase[self.phase] = max(cpu_phase.get(self.phase, 0.0), round(cpu, 3))
        s["maxSliceSteps"] = max(s["maxSliceSteps"], self._slice_steps)

    def _tick(self, n: int = 1) -> bool:
        """Count work; True when the slice is spent (then the caller pauses)."""
        self._slice_steps += n
        return (self._slice_steps >= self.max_steps
                or time.monotonic() - self._slice_start >= SLICE_SECONDS)

    def _pause(self):
        self._close_slice()
        if self.deadline is not None and not self._in_thread and time.monotonic() >= self.deadline:
            raise CollectionStopped()
        yield {"phase": self.phase, **self.progress}
        self._open_slice()

    def _fresh_slice(self, need: int):
        """Pause first if `need` more steps would overrun this slice."""
        if self._slice_steps and self._slice_steps + need > self.max_steps:
            yield from self._pause()

    # ------------------------------------------------------------------ the job
    def job(self):
        self._open_slice()
        self.t0 = time.time()
        if self.now is None:
            self.now = self.t0
        self.wb.book.require_owner()
        if self.store.kind == "heads":
            yield from self._scan()
            if not self.known and not self.broken:
                self._block("nothing is published yet: a store with heads collects after its first head")
            yield from self._retire()
        else:
            self._observe_sidecar()
        self.phase = "roots"
        yield from self._fresh_slice(1)
        yield from self._refresh_roots()
        if self._tick():
            yield from self._pause()
        yield from self._mark()
        if not self.blocked:
            yield from self._sweep()
        if not self.blocked:
            yield from repack.phase(self)
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

    # ------------------------------------------------------------------ 1. scan
    def _scan(self):
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
            observations = yield from self._child_scan([s for s, _ in uncached])
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
        yield from self._fresh_slice(1)
        self.wb.book.require_owner()  # even the rebuildable cache is written by the owner only
        if self.cache.save() and self._tick():
            yield from self._pause()

    def _absorb(self, obs: list, *, plan: bool) -> HeadFacts | None:
        facts = facts_of(obs)
        seq = obs[0]
        if facts is None:
            if obs[3] != "gone":
                self.broken[seq] = obs[3]
                self._block(f"head {seq} could not be read ({obs[3]}); what it references is unknown")
            return None
        self.cache.put(facts)
        self.known[seq] = facts
        if not plan:  # observed after the plan was made: kept, and its body marked
            self.kept.add(seq)
            self._queue(facts.body, f"head {seq}")
            self.stats["observations"] += 1
        return facts

    def _off_loop(self, fn, *args):
        """Run a blocking call (an fsync) in a thread, pausing between short waits; its error, if
        any, is raised here."""
        box: dict = {}

        def run() -> None:
            try:
                box["value"] = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the job below
                box["error"] = exc

        worker = threading.Thread(target=run, name="turnback-collect-sync", daemon=True)
        worker.start()
        self._in_thread = True
        try:
            while True:
                worker.join(0.002)
                if not worker.is_alive():
                    break
                yield from self._pause()
        finally:
            self._in_thread = False
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _child_scan(self, seqs: list[int]):
        """Observe `seqs` in the batch child; None if the child could not do it (then the caller
        scans in process)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
        pkg_parent = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
        box: dict = {}
        request = cbor2.dumps(seqs)

        def talk() -> None:
            # Started here, not on the loop: fork and exec of a big process take milliseconds.
            try:
                proc = subprocess.Popen([sys.executable, "-m", "turnback.collect.child",
                                         str(self.store.path)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, close_fds=True)
            except OSError as exc:
                box["error"] = exc
                return
            box["proc"] = proc
            try:
                box["out"] = proc.communicate(request)
            except Exception as exc:  # reported as a failed child below
                box["error"] = exc

        worker = threading.Thread(target=talk, name="turnback-collect-child", daemon=True)
        worker.start()
        while True:
            worker.join(0.002)  # at most 2 ms of a slice spent waiting
            if not worker.is_alive():
                break
            yield from self._pause()
        proc = box.get("proc")
        if proc is None:
            return None
        self.stats["child"] = True
        out = box.get("out")
        if out is None or proc.returncode != 0:
            return None
        try:
            doc = cbor2.loads(out[0])
            obs = doc["obs"]
            if doc.get("v") != 1 or not isinstance(obs, list) \
                    or sorted(o[0] for o in obs) != sorted(seqs):
                return None
            for o in obs:
                facts_of(o)  # validates the shape
        except Exception:
            return None
        self.progress["done"] += len(obs)
        return obs

    # ------------------------------------------------------------------ 2. decide, 3. retire
    def _decide(self) -> Decision:
        head = self.wb.book.head
        return decide(self.known, now=self.now, grace_heads=self.grace_heads,
                      grace_seconds=self.grace_seconds, protect=[head.seq] if head else [])

    def _observe_new_heads(self) -> int:
        """Add every head published since the plan (kept; its body queued for marking)."""
        before = self.stats["observations"]
        for seq, stamp in sorted(list_heads(self.store.heads.dir).items()):
            if seq in self.known or seq in self.broken or seq in self.retired:
                continue
            self._absorb(observe(self.store.path, seq, stamp, self.store.objects), plan=False)
        return self.stats["observations"] - before

    def _head_seq(self) -> int | None:
        head = self.wb.book.head
        return head.seq if head is not None else None

    def _retire(self):
        self.phase = "retire"
        decision = self._decide()
        self.kept = set(decision.keep)
        self.stats["keptFor"] = kept_for(decision)  # why heads stay, for the command line's words
        self._plan_head = self._head_seq()
        self.progress = {"done": 0, "total": len(decision.retire)}
        for seq in decision.retire:
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
            fsio.unlink(self.store.heads.path(seq), missing_ok=True)
            self.retired.add(seq)
            self.known.pop(seq, None)
            self.cache.drop(seq)
            self.stats["headsRetired"] += 1
            self.progress["done"] += 1
            if self._tick():
                yield from self._pause()
        if self.stats["headsRetired"]:
            yield from self._off_loop(fsio.fsync_dir, self.store.heads.dir)
        # Kept heads past the newest few go into the pack of old heads (a block each on disk
        # otherwise), retired ones out of it: durable before anything is marked or deleted.
        self.wb.book.require_owner()
        retired = sorted(self.retired)
        moved = yield from self._off_loop(lambda: self.store.heads.pack_old(drop=retired))
        self.stats["headsPacked"] = len(moved)
        # Newest first: the current head's body is marked in the first marking slice.
        for seq in sorted(self.kept, reverse=True):
            if seq in self.known:
                self._queue(self.known[seq].body, f"head {seq}")

    # ------------------------------------------------------------------ 4. roots
    def _observe_sidecar(self) -> None:
        try:
            body = roots.sidecar_body(self.store)
        except TurnbackError as exc:
            self._block(f"the sidecar record could not be read: {exc.message}")
            return
        if body is None:
            if not self._sidecar_bodies:
                self._block("no sidecar commit yet: a plain file store collects only after one")
            return
        if body not in self._sidecar_bodies:
            if self._sidecar_bodies:
                self.stats["observations"] += 1
            self._sidecar_bodies.add(body)
            self.marked.add(body)
            self._queue(body, "sidecar")

    def _refresh_roots(self):
        """Pins and records, looked at again; whatever is new is added (pins never shrink in a run).
        A generator: the live state and a long journal are read in steps, and what changed
        meanwhile in the step that returns."""
        state = self.wb.book.state
        try:
            key = (id(state), state.last_op, roots.journal_signature(self.store))
            if key != self._pins_key:
                added: set[str] = set()
                yield from self._state_refs.iter_add(state, added)
                yield from self._journal_pins.iter_read(self.store, added)
                self._state_refs.add(self.wb.book.state, added)  # what moved at the yields
                if self._pins_key is not None and not added <= self.pins:
                    self.stats["observations"] += 1
                self.pins |= added
                self._pins_key = key
        except TurnbackError as exc:
            self._block(f"a journal could not be read: {exc.message}")
        self._session_roots()
        try:
            txn_names, recovery_names = roots.record_names(self.store)
        except OSError as exc:
            self._block(f"the transaction records could not be listed: {exc}")
            return
        names = {("txn", n) for n in txn_names} | {("recovery", n) for n in recovery_names}
        if names <= self._records_seen:
            return
        try:
            for path, rec in roots.intents(self.store):
                if ("txn", path.name) in self._records_seen:
                    continue
                roots.digests_in(rec, self.pins)
                if is_digest(rec.get("body")):
                    self._queue(rec["body"], "intent")
                self._records_seen.add(("txn", path.name))
            for path, rec in roots.recoveries(self.store):
                roots.digests_in(rec, self.pins)
                self._records_seen.add(("recovery", path.name))
        except FileNotFoundError:
            pass  # finished meanwhile: looked at again before the next deletion
        except TurnbackError as exc:
            self._block(f"a transaction or recovery record could not be read: {exc.message}")

    def _session_roots(self) -> None:
        """The last state of every parked or frozen session (and of a fork's parent) is a root."""
        try:
            signature = lineage.names_signature(self.store)
            if signature == self._sessions_seen:
                return
            for session_id, body in lineage.parked_bodies(self.store):
                self._queue(body, f"session {session_id}")
            self._sessions_seen = signature
        except TurnbackError as exc:
            self._block(f"a session record could not be read: {exc.message}")

    def _queue(self, body: str, origin: str) -> None:
        if body not in self.marked_bodies:
            self.to_mark.append((body, origin))

    def _block(self, why: str) -> None:
        if why not in self.blocked:
            self.blocked.append(why)

    # ------------------------------------------------------------------ 5. mark
    def _mark(self):
        self.phase = "mark"
        while self.to_mark:
            digest, origin = self.to_mark.popleft()
            if digest in self.marked_bodies:
                continue
            yield from self._fresh_slice(1)
            self.progress = {"done": len(self.marked_bodies), "total": len(self.marked_bodies)
                             + len(self.to_mark) + 1}
            what = "reference list" if origin == LIST else "body"
            yield from self.store.objects.iter_warm(digest)  # its pack block inflated off the loop
            try:
                refs = self._read_marks(digest, origin)
            except FileNotFoundError:
                if origin == "intent":  # an intent whose new state was never written: nothing to keep
                    self.marked_bodies.add(digest)
                    continue
                self._block(f"the {what} {digest} of {origin} is missing; what it references is "
                            "unknown")
                self.marked_bodies.add(digest)
                continue
            except Exception as exc:
                why = getattr(exc, "message", None) or str(exc)
                self._block(f"the {what} {digest} of {origin} could not be read ({why})")
                self.marked_bodies.add(digest)
                continue
            self.marked_bodies.add(digest)
            self.marked.add(digest)
            self.marked.update(refs)
            if origin != LIST:
                self.stats["bodiesMarked"] += 1
            if self._tick():
                yield from self._pause()
        if self._slice_steps:
            yield from self._pause()

    def _read_marks(self, digest: str, origin: str) -> list[str]:
        """What one body or one reference list references. A body's lists are not read with it:
        each is a step of its own (a list can hold thousands of digests), queued here; a list
        already marked had its contents marked with it and is not read again."""
        codec = self.wb.book.codec
        if origin == LIST:
            refs = codec.list_contents(digest)
        else:
            doc = codec.read_body(digest, skip=_Later(self, digest))
            refs = doc.get("refs") if isinstance(doc, dict) else None
        if not isinstance(refs, list) or not all(is_digest(r) for r in refs):
            raise ValueError("its refs are not a list of digests")
        return refs

    # ------------------------------------------------------------------ 6. sweep
    def _keeps(self, digest: str) -> bool:
        return digest in self.marked or digest in self.pins

    def _sweep(self):
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
        doomed: list[tuple[str, int]] = []
        for fan in fans:
            try:
                with os.scandir(root / fan) as it:
                    entries = list(it)
            except FileNotFoundError:
                continue
            for e in entries:
                digest = fan + e.name
                if fsio.is_temp_name(e.name) or not is_digest(digest):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if self._keeps(digest) or st.st_mtime >= cutoff:
                    self.stats["objectsKept"] += 1
                    self.stats["bytesKept"] += st.st_size
                    if st.st_mtime < cutoff and st.st_size <= repackplan.REPACK_MAX:
                        self.loose_kept.append((digest, st.st_size))
                else:
                    doomed.append((digest, st.st_size))
            self.progress["done"] += 1
            while len(doomed) >= self.delete_batch and not self.blocked:
                yield from self._delete(doomed[:self.delete_batch])
                doomed = doomed[self.delete_batch:]
            if self.blocked:
                break
            if self._tick():
                yield from self._pause()
        while doomed and not self.blocked:
            yield from self._delete(doomed[:self.delete_batch])
            doomed = doomed[self.delete_batch:]
        for _digest, size in doomed:  # left because a root became unreadable
            self.stats["objectsKept"] += 1
            self.stats["bytesKept"] += size

    def _delete(self, batch: list[tuple[str, int]]):
        """Delete one batch, each part of it only after looking at everything that could have changed
        since the plan. A part ends when the slice's time is spent (a slow disk may make unlinks
        slow); the rest waits for the next slice and is looked at again first."""
        while batch:
            batch = yield from self._delete_part(batch)

    def _recheck(self):
        """Look again at everything that could have changed since the plan: ownership, new heads
        (or the sidecar), pins and records, an open object batch in this process. What is new is
        marked before this returns; with `blocked` set, nothing may be deleted at all."""
        objects = self.store.objects
        yield from self._fresh_slice(3)
        while True:
            # An open object batch means a sweep or capture job is between its slices, holding
            # digests it has not recorded yet (a reused old object among them): wait for it.
            while objects.batch_open:
                self.stats["waits"] += 1
                phase, self.phase = self.phase, "waiting"
                yield from self._pause()
                self.phase = phase
            self.wb.book.require_owner()  # ownership before every mutation
            if self.store.kind == "heads":
                self._observe_new_heads()  # head stability: a new head adds observations
            else:
                self._observe_sidecar()
            yield from self._refresh_roots()
            self._tick()
            if self.blocked or not self.to_mark:
                return
            # The plan is invalid until the new observations are marked; then look again.
            phase = self.phase
            yield from self._mark()
            self.phase = phase
            yield from self._fresh_slice(3)

    def _delete_part(self, batch: list[tuple[str, int]]):
        objects = self.store.objects
        yield from self._recheck()
        if self.blocked:
            for _digest, size in batch:
                self.stats["objectsKept"] += 1
                self.stats["bytesKept"] += size
            return []
        deleted = []
        done = 0
        for digest, size in batch:
            done += 1
            if self._keeps(digest):  # rescued by an observation added since the listing
                self.stats["objectsKept"] += 1
                self.stats["bytesKept"] += size
            else:
                objects.remove(digest)
                deleted.append(digest)
                self.stats["objectsDeleted"] += 1
                self.stats["bytesFreed"] += size
            if time.monotonic() - self._slice_start >= SLICE_SECONDS:
                break
        self.wb.book.codec.forget(deleted)
        self._tick()
        yield from self._pause()
        return batch[done:]


class _Later:
    """`skip` for `read_body`: every reference list counts as skipped (named, not read), and the
    ones not marked yet are queued as steps of their own. Nothing is deleted while any is queued."""

    def __init__(self, collector: Collector, body: str):
        self.collector, self.body = collector, body

    def __contains__(self, ref_list) -> bool:
        c = self.collector
        if ref_list not in c.marked and ref_list not in c.marked_bodies:
            c.to_mark.appendleft((ref_list, LIST))  # first: what the current head reaches, soonest
        return True


def collect_job(wb, cache: HeadCache | None = None, **options):
    """A collection job for `wb` (see `Collector` for the options); returns the stats."""
    return Collector(wb, cache, **options).job()
