"""What the roots reach: a collection's observations, which only ever grow within a run.

The plan (`collect/plan.py`) observes the heads, the roots (journal pins, intent and recovery records,
parked sessions, the live state, the sidecar) and marks every body they name and each reference list
a body names, a step each. The execution (`collect/collector.py`) looks again with `recheck` before
every deletion: whatever is new since the plan (a head, a pin, a record) is added and marked before
anything goes. Everything here reads; `blocked` says why nothing may be deleted (an unreadable root:
what it references is unknown, so nothing may be called unreferenced).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..errors import TurnbackError
from ..store import lineage
from ..store.objects.digest import is_digest
from . import roots
from .cache import HeadCache
from .scan import HeadFacts, facts_of, list_heads, observe
from .slices import SlicedJob, Slices

LIST = "list"  # the origin of a queued reference list (`Reach._mark`)


class Reach(SlicedJob):
    """Observations of one collection of `wb`'s store (the workbench, typed loosely: it is a floor
    above)."""

    def __init__(self, wb: Any, cache: HeadCache, **slicing: Any) -> None:
        super().__init__(**slicing)
        self.wb = wb
        self.store = wb.store
        self.cache = cache  # what is observed warms it
        self.known: dict[int, HeadFacts] = {}  # every head observed and not retired
        self.broken: dict[int, str] = {}  # unreadable head records
        self.kept: set[int] = set()
        self.retired: set[int] = set()
        self.to_mark: deque[tuple[str, str]] = deque()  # (body digest, origin)
        self.marked_bodies: set[str] = set()
        self.marked: set[str] = set()
        self.pins: set[str] = set()
        self.blocked: list[str] = []  # why nothing may be deleted
        self._journal_pins = roots.JournalPins()  # read on from where it stopped
        self._state_refs = roots.StateRefs()  # the live state, read again where it changed
        self._pins_key: tuple[int, Any, Any] | None = None
        self._records_seen: set[tuple[str, str]] = set()
        self._sidecar_bodies: set[str] = set()
        self._sessions_seen: Any = None  # signature of the session records last looked at

    def _keeps(self, digest: str) -> bool:
        return digest in self.marked or digest in self.pins

    def _queue(self, body: str, origin: str) -> None:
        if body not in self.marked_bodies:
            self.to_mark.append((body, origin))

    def _block(self, why: str) -> None:
        if why not in self.blocked:
            self.blocked.append(why)

    # ------------------------------------------------------------------ heads
    def _absorb(self, obs: list[Any], *, plan: bool) -> HeadFacts | None:
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

    def _observe_new_heads(self) -> int:
        """Add every head published since the plan (kept; its body queued for marking)."""
        before: int = self.stats["observations"]
        for seq, stamp in sorted(list_heads(self.store.heads.dir).items()):
            if seq in self.known or seq in self.broken or seq in self.retired:
                continue
            self._absorb(observe(self.store.path, seq, stamp, self.store.objects), plan=False)
        after: int = self.stats["observations"]
        return after - before

    # ------------------------------------------------------------------ roots
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

    def _refresh_roots(self) -> Slices[None]:
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

    # ------------------------------------------------------------------ mark
    def _mark(self) -> Slices[None]:
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
            doc = codec.read_body(digest, skip=_Later(self))
            refs = doc.get("refs") if isinstance(doc, dict) else None
        if not isinstance(refs, list) or not all(is_digest(r) for r in refs):
            raise ValueError("its refs are not a list of digests")
        return refs

    # ------------------------------------------------------------------ before every deletion
    def _recheck(self) -> Slices[None]:
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


class _Later:
    """`skip` for `read_body`: every reference list counts as skipped (named, not read), and the
    ones not marked yet are queued as steps of their own. Nothing is deleted while any is queued."""

    def __init__(self, reach: Reach):
        self.reach = reach

    def __contains__(self, ref_list: Any) -> bool:
        r = self.reach
        if ref_list not in r.marked and ref_list not in r.marked_bodies:
            r.to_mark.appendleft((ref_list, LIST))  # first: what the current head reaches, soonest
        return True
