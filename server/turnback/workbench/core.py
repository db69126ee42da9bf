"""The workbench: the one facade that the server and the command line both call.

It opens a workspace's store, takes ownership (or becomes a read-only observer), recovers any
interrupted transaction before accepting work, and hands each operation to its feature. Long work is a
generator of small steps (a *job*): the command line runs it to the end at once, the server advances it
a slice at a time between requests.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator

from ..capture import compiled as compiled_ignore, lastrules
from ..capture.ignore import DEFAULT_IGNORE, IgnoreRules
from ..capture.recorder import Recorder
from ..errors import NotOwner
from ..model.gaps import Gap
from ..store import memory, trust, waiting
from ..store.layout import Store
from ..timeline.book import Book
from ..workspace.fence import Workspace
from .agentlinks import agent_info, agent_resume
from .collection import CollectionFeature
from .diffs import DiffFeature
from .directives import DirectivesFeature
from .fork import ForkFeature
from .keepalive import Keepalive
from .options import Options
from .recovery import RecoveryFeature
from .redo import RedoFeature
from .restore import RestoreFeature
from .rewind import RewindFeature
from .sessions import SessionsFeature
from .turns import TurnsFeature

Job = Generator[object, None, object]


@dataclass
class Events:
    """Observers of what clients must hear about: status, epoch, directives."""

    listeners: list[Callable[[str, dict], None]] = field(default_factory=list)

    def subscribe(self, fn: Callable[[str, dict], None]) -> None:
        self.listeners.append(fn)

    def emit(self, name: str, payload: dict) -> None:
        for fn in list(self.listeners):
            fn(name, payload)


class Workbench:
    # a serving owner's (lsp/services/): its workspace watcher, and its private socket's listener
    watcher: Any = None
    listener: Any = None

    def __init__(self, root: Path, options: Options, store: Store, ws: Workspace, book: Book,
                 recorder: Recorder, rules: IgnoreRules | None):
        self.root = root
        self.options = options
        self.store = store
        self.ws = ws
        self.book = book
        self.recorder = recorder
        self.rules = rules
        self.events = Events()
        self.collecting = False
        self.open_report: dict = {}
        self.live: dict = {}  # what a serving process adds to info: its socket, clients, watcher
        self._last_status: dict | None = None
        self.turns = TurnsFeature(self)
        self.rewind = RewindFeature(self)
        self.redo = RedoFeature(self)
        self.recovery = RecoveryFeature(self)
        self.directives = DirectivesFeature(self)
        self.collection = CollectionFeature(self)
        self.sessions = SessionsFeature(self)
        self.fork = ForkFeature(self)
        self.diffs = DiffFeature(self)
        self.restore = RestoreFeature(self)
        self._watch_ownership()

    # -- opening and closing ----------------------------------------------------------------------
    @classmethod
    def open(cls, workspace: str | Path, options: Options | None = None, *,
             take_ownership: bool = True) -> "Workbench":
        options = options or Options()
        root = Path(workspace).resolve()
        store_path = Path(options.store_path).resolve() if options.store_path else root / ".turnback"
        trust.require_workspace(root, store_path)  # only the user's own workspace and store
        store = Store.open(store_path, kind=options.store_kind)
        owner = None
        if take_ownership:
            try:
                owner = store.ownership(**options.ownership_kwargs(store.kind))
            except NotOwner:
                owner = None
        try:
            book, report = Book.open(store, owner, config={"storeKind": store.kind},
                                     lazy_turns=options.lazy_turns)
            ws = Workspace(root, store_path)
            defaults = DEFAULT_IGNORE if options.default_ignore is None else options.default_ignore
            compiled_ignore.load(store.cache_dir / compiled_ignore.FILE_NAME)
            rules = IgnoreRules(ws, defaults) if options.sweep else None
            recorder = Recorder(book, ws, max_bytes=options.max_file_bytes, rules=rules,
                                junk=(rules or IgnoreRules(ws, defaults)).junk,
                                rules_file=store.cache_dir / lastrules.FILE_NAME)
            wb = cls(root, options, store, ws, book, recorder, rules)
            wb.open_report = {"head": report.head, "replayed": report.replayed,
                              "tornJournal": bool(report.torn)}
            if report.damage is not None:  # code corrupt-store: kept as evidence, nothing cut
                wb.open_report["corruptJournal"] = report.damage.to_wire()
            if owner is not None:
                wb.open_report["recovered"] = wb.recovery.recover_interrupted()
                wb.sessions.tidy()
        except BaseException:
            if owner is not None:
                owner.release()
            raise
        return wb

    def close(self) -> None:
        """Publish what is pending, save caches, and give up ownership."""
        owner = self.book.owner
        try:
            if owner is not None:
                try:
                    self._save_stat_cache()
                    compiled_ignore.save(self.store.cache_dir / compiled_ignore.FILE_NAME)
                except OSError:
                    pass  # rebuildable: a full disk must not keep close from publishing
                self.book.close()
        finally:
            if owner is not None:
                owner.release()

    # -- ownership ------------------------------------------------------------------------------
    @property
    def is_owner(self) -> bool:
        return self.book.owner is not None

    def renew(self) -> None:
        """Called on a timer by the server; never per operation. A renewal that finds the lease
        taken makes this workbench an observer (and tells the clients) before it raises."""
        if self.book.owner is not None:
            try:
                self.book.owner.renew()
            except NotOwner:
                self.book.lose_ownership()
                raise

    def _watch_ownership(self) -> None:
        self.book.on_lost.append(self._ownership_lost)

    def _ownership_lost(self) -> None:
        """Another process owns the store now: stop writing, say so (status: observer)."""
        self.emit_status(force=True)

    def try_take_over(self) -> bool:
        """An observer whose owner has gone away becomes the owner (and replays its work)."""
        if self.is_owner:
            return True
        try:
            owner = self.store.ownership(**self.options.ownership_kwargs(self.store.kind))
        except NotOwner:
            return False
        return self._become_owner(owner)

    def _become_owner(self, owner) -> bool:
        book, report = Book.open(self.store, owner, config={"storeKind": self.store.kind},
                                 lazy_turns=self.options.lazy_turns)
        self.book = book
        self.recorder.book = book
        self._watch_ownership()
        self.open_report["recovered"] = self.recovery.recover_interrupted()
        self.open_report.pop("forks", None)
        self.sessions.tidy()
        self.collection.schedule("resume")
        self.announce_recovery()
        self.emit_status()
        return True

    def recovery_notice(self) -> dict | None:
        """What opening the store recovered (`turnback/recovered`), or None when nothing was pending:
        each interrupted transaction with what was done (finished forward, rolled back, ...), and
        each interrupted fork's records, with a sentence a person can read."""
        from ..travel.recovered import notice

        return notice(self.open_report, self.ws.to_uri)

    def announce_recovery(self) -> None:
        payload = self.recovery_notice()
        if payload is not None:
            self.events.emit("recovered", payload)

    def follow(self) -> None:
        """An observer re-reads the published state when the owner published a newer one (a cheap
        listing of head names, or the sidecar's change time); the owner's state is always current."""
        if self.is_owner:
            return
        if self.store.kind == "heads":
            seqs = self.store.heads.loose_seqs()  # the newest are always loose
            mark = seqs[-1] if seqs else None
        else:
            try:
                mark = os.stat(self.store.sidecar_path).st_mtime_ns
            except FileNotFoundError:
                mark = None
        if mark is None:  # nothing published yet: the owner's session is the journal it writes
            try:
                mark = tuple(sorted(os.listdir(self.store.journal_dir)))
            except FileNotFoundError:
                pass
        try:
            mark = (mark, os.stat(self.store.journal_path(self.state.session_id)).st_size)
        except FileNotFoundError:
            pass
        if mark != getattr(self, "_followed", None):
            self._followed = mark
            self.book.reload()

    def owner_info(self) -> dict:
        if self.book.owner is not None:
            return self.book.owner.owner_info()
        from ..store.ownership.owners import who_owns

        return who_owns(self.store.path, self.store.kind) or {}

    # -- reporting ------------------------------------------------------------------------------
    @property
    def state(self):
        return self.book.state

    def wire_gap(self, gap: Gap) -> dict:
        return gap.to_wire(self.ws.to_uri)

    def live_gaps(self) -> list[dict]:
        return [self.wire_gap(g) for g in sorted(self.state.live_gaps.values(),
                                                 key=lambda g: (g.rel, g.reason))]

    def owner_state(self) -> dict:
        """{pid, host, alive, state}: `state` is `live` (this process or another that runs), `dead`
        (the record names a process on this machine that is gone: nothing is serving, and the next
        process that takes the store recovers what it left), `unknown` (another machine) or `none`."""
        if self.is_owner:
            owner = self.book.owner.owner_info()
            return {"pid": owner.get("pid"), "host": owner.get("host"), "alive": True,
                    "state": "live"}
        from ..store.ownership.owners import last_owner

        held = self.owner_info()
        last = last_owner(self.store.path, self.store.kind) or {}
        if held and last.get("pid") not in (None, held.get("pid")):
            last = {}
        who = held or last
        alive = last.get("alive", True if held else None)
        state = ("none" if not who else "dead" if alive is False
                 else "unknown" if alive is None else "live")
        return {"pid": who.get("pid"), "host": who.get("host"), "alive": alive, "state": state}

    def info(self) -> dict:
        owner = self.owner_state()
        return {
            "sessionId": self.state.session_id,
            "storeKind": self.store.kind,
            "ownership": "owner" if self.is_owner else "observer",
            "owner": owner,
            # interrupted (or running) transactions whose intent is in the store: a dead owner's
            # are finished or rolled back by the next process that takes the store
            "pending": self.recovery.pending(owner["state"]),
            "turnCount": self.state.turn_count,
            "headSeq": self.book.head.seq if self.book.head else None,
            "liveGaps": len(self.state.live_gaps),
            "recovery": self.recovery.count(),
            "frozen": self.state.frozen,
            "parentId": self.state.lineage.get("parentId"),
            "epoch": self.state.epoch,
            "agent": agent_info(self),  # agent hooks: resume command, /rewind offer (docs/agents/)
            "workspace": str(self.root),
            # what opening found and did: interrupted transactions finished or rolled back, a torn
            # journal tail cut, operations replayed from the journal
            "opened": self.open_report,
            "socket": None, **self.live,
        }

    def status(self) -> dict:
        gaps = self.live_gaps()
        return {"liveGaps": len(gaps), "gaps": gaps,
                "ownership": "owner" if self.is_owner else "observer",
                "collecting": self.collecting,
                "headSeq": self.book.head.seq if self.book.head else None,
                "recovery": self.recovery.count()}

    def emit_status(self, *, force: bool = False) -> None:
        status = self.status()
        if force or status != self._last_status:
            self._last_status = status
            self.events.emit("status", status)

    # -- jobs -----------------------------------------------------------------------------------
    def run(self, job: Job):
        """Run a job to the end at once (the command line's way). A long job renews the lease as it
        goes, as the server's timer would, so a collection of a large store keeps its ownership:
        between steps, and from a watchdog while one step runs long (`keepalive.py`). A test that
        brings its own lease clock keeps its own time: no watchdog then."""
        every = self.options.lease_ttl / 3
        renewed = time.monotonic()
        watched = self.book.owner if self.options.lease_clock is None else None
        with Keepalive(watched, self.options.lease_ttl) as keep:
            try:
                while True:
                    next(job)
                    if keep.lost or time.monotonic() - renewed >= every:
                        self.renew()
                        renewed = time.monotonic()
                        keep.renewed()
            except StopIteration as done:
                return done.value

    def maybe_publish(self) -> int | None:
        """Debounced publication inside long turns, so a crash or suspend loses little."""
        book = self.book
        if (book.owner is not None and book.dirty and self.store.kind == "heads"
                and time.monotonic() - book.last_publish >= self.options.publish_interval):
            seq = book.publish()
            self.collection.schedule("publication")
            self.emit_status()
            return seq
        return None

    # -- sweeps ---------------------------------------------------------------------------------
    def sweep_job(self, *, caller_syncs: bool = False) -> Job:
        """The pre-turn (and settle) sweep: a job that yields every few files. `caller_syncs`: the
        caller records its own operation right after and syncs the journal once for both; cut off
        inside the sweep, the sweep syncs what it recorded before it lets go (so a cancelled
        begin or settle leaves the sweep's records as durable as before)."""
        if not self.options.sweep or not self.is_owner:
            return 0
        self.book.require_owner()  # before the sweep stores a single object
        from ..capture.statcache import KeptCache
        from ..capture.sweep import iter_sweep

        if getattr(self, "_stat_cache", None) is None:
            self._stat_cache = KeptCache(self.store.cache_dir / "stat.cbor")
        self.rules.invalidate()
        # One durability pass for all the sweep's images (mutating work is serialised). A cached
        # digest is checked for existence only if a collection may have removed objects since.
        removals = self.store.objects.removals
        verify = getattr(self, "_verified_at", None) != removals
        # A live owner's watcher (capture/watcher.py) names the paths that may have changed.
        plan = self.watcher.begin() if getattr(self, "watcher", None) is not None else None
        cache = self._stat_cache.for_sweep(plan is None or plan.full)
        if plan is not None and not plan.full:
            from ..capture.sweep import iter_dirty

            walk = iter_dirty(self.ws, self.store.objects, cache, plan.dirty,
                              max_bytes=self.options.max_file_bytes, rules=self.rules,
                              verify_objects=verify)
        else:
            walk = iter_sweep(self.ws, self.store.objects, cache,
                              max_bytes=self.options.max_file_bytes, rules=self.rules,
                              verify_objects=verify)
        # one batch, committed in steps: a first checkpoint's pack is made durable off the loop
        result = yield from self.store.objects.iter_batch(walk)
        self._verified_at = removals
        full = plan is None or plan.full  # a full walk read every rule file that decides anything
        # A prelude (to a begin, a settle, a fork's first state): cut off, it finishes its own
        # records' sync, but never makes the caller's steps binding before the caller's change.
        try:
            changed = yield from waiting.unbound_steps(self.recorder.iter_apply_sweep(
                result, self.rules.snapshot() if full else None, caller_syncs=caller_syncs))
        except GeneratorExit:
            if caller_syncs:  # cut off between its records and the caller's sync: sync them now
                for _ in self.book.iter_sync():
                    pass
            raise
        if result.walked >= 10_000:
            # A big sweep's tables: not kept resident in a live owner. Freeing them and trimming
            # the heap take tens of ms at 20,000 files: a helper thread does both (the loop's
            # thread may take the interpreter back from it at any moment; the trim releases it).
            box = [result]
            del result
            self.store.objects.packs.drop_cache()
            yield from waiting.wait_in_slices(waiting.in_thread(_drop_and_give_back, box))
        # The cache is rebuildable: saved after a full walk and at close, never after a watcher's
        # small sweep (encoding 250,000 entries held the loop 0.4 s; a lost one costs re-hashing
        # only the files changed since, which the racy-git rule finds). With a healthy watcher it
        # is not even held between full walks (capture/statcache.KeptCache).
        if plan is None or plan.full:  # encoding 20,000 entries: on a helper thread, waited for
            watching = getattr(self, "watcher", None)
            yield from waiting.wait_in_slices(waiting.in_thread(
                self._stat_cache.after_full_walk, watching is not None and watching.healthy))
        self.emit_status()
        return changed

    def _save_stat_cache(self) -> None:
        kept = getattr(self, "_stat_cache", None)
        if kept is not None and self.is_owner:
            kept.save()

    # -- after rewind and redo ------------------------------------------------------------------
    def after_transaction(self, outcome, source: str, *, touched=(), conversation: bool = True,
                          announce: dict | None = None) -> dict:
        """What every committed or rolled-back transaction reports; the epoch is sent only here, only
        for a commit, and only when the conversation changed (a restore or a files-only rewind keeps
        it). `announce` ({operation, mode, boundary, files: [rel]}) is what `turnback/rewound` and
        the after-rewind hook are told of a commit."""
        result = {"status": outcome.status}
        if outcome.status == "committed":
            result["headSeq"] = outcome.head_seq
            resume = None
            if conversation:
                result["epoch"] = self.state.epoch
                resume = agent_resume(self, self.state.turn_count)
                if resume is not None:
                    result["agentResume"] = resume  # the agent's conversation, resumed at the boundary
                self.events.emit("epoch", {"source": source, "sessionId": self.state.session_id,
                                           "turnCount": self.state.turn_count,
                                           "epoch": self.state.epoch})
            self.collection.schedule(source)
            self.directives.notify(set(touched) | {d.rel for d in self.state.directives.values()})
            if announce is not None:
                self.announce_rewound(announce, resume)
        else:
            result["reason"] = outcome.reason
        if outcome.recovery:
            result["recovery"] = [self.recovery.wire(r) for r in outcome.recovery]
        self.emit_status()
        return result

    def announce_rewound(self, what: dict, resume: dict | None = None) -> None:
        """`turnback/rewound` to every client, and the after-rewind hook (docs/rewind.md): after a
        committed rewind, restore, Redo or fork. `what` is {operation, mode, boundary, files: [rel]}
        plus anything the operation adds; paths travel as URIs."""
        doc = dict(what, files=[self.ws.to_uri(rel) for rel in what.get("files", ())],
                   turnCount=self.state.turn_count, sessionId=self.state.session_id)
        if resume is not None:
            doc["agentResume"] = resume
        self.events.emit("rewound", doc)


def _drop_and_give_back(box: list) -> None:
    box.clear()
    memory.give_back()
