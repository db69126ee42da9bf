"""The durable record of the live session: its published state, the journal since, and publication.

Stores with heads publish an immutable head (tiny record + body object); plain file stores replace one
sidecar record atomically. Between publications every operation is appended to the session's journal
before it is applied, so a crash loses nothing that was made durable. Publication order: objects made
durable in one batch, then the head (or sidecar) record, then the journal is emptied. A crash between
the last two leaves operations in the journal that the state already holds; replay skips them by their
sequence number.

Before its first publication a session exists only in its journal, so that journal says which session
it is: its first frame (sequence 0, which replay skips) holds the session's id, creation time, fork
point and configuration. An open that finds no published state continues the session whose journal it
finds (`unpublished_session`) instead of starting another, so a process killed before it published
loses nothing it journaled.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorruptStore, InvalidParams, NotOwner, TurnbackError
from ..model.session import SessionState
from ..store import fs, journal as journal_mod, waiting
from ..store.heads import HeadRecord
from ..store.records import read_record, write_record
from .codec import StateCodec
from .reducer import apply

SIDECAR_KIND = "sidecar"


@dataclass
class OpenReport:
    head: int | None
    replayed: int
    torn: object | None  # journal.TornTail when a torn tail was cut (or would be, for an observer)
    damage: object | None = None  # journal.Damage: valid frames after a bad one (kept as evidence)


def new_session(config: dict | None = None) -> SessionState:
    return SessionState(session_id=uuid.uuid4().hex, created=time.time(), config=dict(config or {}),
                        fork_point=uuid.uuid4().hex)


IDENTITY_OP = "session"


def identity_frame(state: SessionState) -> dict:
    """The first frame of a never-published session's journal: which session the journal is."""
    return {"op": IDENTITY_OP, "seq": 0, "sessionId": state.session_id, "created": state.created,
            "forkPoint": state.fork_point, "config": dict(state.config)}


def unpublished_session(store, config: dict | None = None) -> SessionState | None:
    """With no published state: the session whose journal is in the store (killed before its first
    publication), or None. Several can only be left by versions that started a new session here;
    the journal whose frames were written last (by their own stamps) is the one that was live. A
    journal that does not start at its session's beginning (that session was published once and the
    published state is gone) cannot be replayed onto nothing, so it is left alone."""
    best = None
    for path in _journal_files(store):
        frames = journal_mod.scan(path).frames  # a torn tail is not read, as replay does not
        if frames and frames[0].get("seq") not in (0, 1):
            continue
        key = (_last_stamp(frames), len(frames), path.name)
        if best is None or key > best[0]:
            best = (key, path.name[:-len(".wal")], frames)
    if best is None:
        return None
    _key, session_id, frames = best
    return _session_from(session_id, frames, config)


def _journal_files(store) -> list[Path]:
    """The session journals in the store (not evidence copies, not temp files)."""
    try:
        entries = list(os.scandir(store.journal_dir))
    except FileNotFoundError:
        return []
    out = []
    for e in entries:
        if (not e.name.endswith(".wal") or fs.is_temp_name(e.name)
                or not e.is_file(follow_symlinks=False)):
            continue
        try:
            if store.journal_path(e.name[:-len(".wal")]).name == e.name:
                out.append(Path(e.path))
        except InvalidParams:
            continue  # not a session's journal name
    return sorted(out)


def _stamps(frames: list[dict]) -> list[float]:
    return [float(v) for f in frames for v in (f.get("ts"), f.get("created"))
            if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _last_stamp(frames: list[dict]) -> float:
    return max(_stamps(frames), default=-math.inf)


def _session_from(session_id: str, frames: list[dict], config: dict | None) -> SessionState:
    """The session a journal belongs to, as its identity frame describes it. A journal without one
    (written before identity frames, or only its header survived) names the session by its file;
    its creation time and fork point are then derived from the journal, so every reader of the
    store derives the same ones."""
    first = frames[0] if frames else {}
    created, fork_point, cfg = first.get("created"), first.get("forkPoint"), first.get("config")
    if (first.get("op") == IDENTITY_OP and first.get("seq") == 0
            and first.get("sessionId") == session_id and isinstance(created, (int, float))
            and isinstance(fork_point, str) and isinstance(cfg, dict)):
        return SessionState(session_id=session_id, created=float(created), config=dict(cfg),
                            fork_point=fork_point)
    return SessionState(session_id=session_id, created=min(_stamps(frames), default=0.0),
                        config=dict(config or {}),
                        fork_point=uuid.uuid5(uuid.NAMESPACE_OID, session_id).hex)


class Book:
    def __init__(self, store, owner, codec: StateCodec, state: SessionState,
                 head: HeadRecord | None, journal):
        self.store = store
        self.owner = owner  # Lease or PidLock we hold, or None for a read-only observer
        self.codec = codec
        self.state = state
        self.head = head
        self.journal = journal  # None for an observer
        self.published_op = state.last_op
        self.last_publish = time.monotonic()
        self.on_lost: list = []  # called once when this owner finds its ownership gone
        # Transactions whose outcome is not durable yet (txn id -> retry returning True once it is).
        # While any is left, nothing else is written: see travel/transaction.py.
        self.unsettled: dict = {}
        self._checked: bool | None = None  # inside `one_check`: whether its check was made

    # -- opening ----------------------------------------------------------------------------------
    @classmethod
    def open(cls, store, owner, *, config: dict | None = None,
             lazy_turns: bool = False) -> tuple["Book", OpenReport]:
        """`lazy_turns`: read each turn when first used (a short-lived command; `lazyturns.py`)."""
        codec = StateCodec(store.objects)
        codec.lazy_turns = lazy_turns
        head, state = cls._read_published(store, codec)
        first = None
        if state is None:  # nothing published yet: continue the session of the journal found
            state = unpublished_session(store, config)
            if state is None:
                state = new_session(config)
                first = identity_frame(state)
        path = store.journal_path(state.session_id)
        if owner is not None:
            if store.kind == "heads":
                store.heads.clear_placeholders()
            journal, frames, torn = journal_mod.Journal.open(path, first=first)
            scan = None
        else:
            scan = journal_mod.scan(path) if Path(path).exists() else None
            journal, frames, torn = None, (scan.frames if scan else []), (scan.torn if scan else None)
        damage = scan.damage if owner is None and scan else None
        if isinstance(torn, journal_mod.Damage):
            torn, damage = None, torn
        before = state.last_op
        for frame in frames:
            apply(state, frame)
        book = cls(store, owner, codec, state, head, journal)
        book.published_op = before
        return book, OpenReport(head.seq if head else None, state.last_op - before, torn, damage)

    @staticmethod
    def _read_published(store, codec: StateCodec):
        if store.kind == "heads":
            head = store.heads.current()
            return head, (codec.read(head.body, lazy=codec.lazy_turns, finished=head.turn_count)
                          if head else None)
        if Path(store.sidecar_path).exists():
            sidecar = read_record(store.sidecar_path, SIDECAR_KIND)
            return None, codec.read(sidecar["body"], lazy=codec.lazy_turns,
                                    finished=sidecar.get("turnCount") or 0)
        return None, None

    def reload(self) -> None:
        """Re-read the published state (an observer following the owner's publications)."""
        head, state = self._read_published(self.store, self.codec)
        if state is None:  # nothing published yet: the owner's journal is its whole session
            state = unpublished_session(self.store, self.state.config)
            if state is None:
                return
        path = self.store.journal_path(state.session_id)
        if self.journal is None and Path(path).exists():
            for frame in journal_mod.scan(path).frames:  # the owner's work since it published
                apply(state, frame)
        self.head, self.state = head, state

    # -- recording --------------------------------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.owner is None

    def require_owner(self) -> None:
        """Before any write (objects included): NotOwner unless this process still owns the store.
        An owner that finds its lease or lock taken stops writing from then on (`lose_ownership`)."""
        if self.owner is None:
            info = _owner_info(self.store)
            raise NotOwner(_not_owner_message(info), data={"owner": info})
        if self._checked:
            return
        try:
            self.owner.check()
        except NotOwner:
            self.lose_ownership()
            raise
        if self._checked is False:
            self._checked = True
        if self.unsettled:
            self._settle_first()

    @contextlib.contextmanager
    def one_check(self):
        """One ownership check for a short request that runs without yielding (a capture): the
        first `require_owner` inside reads the lease record, the others trust it until the block
        ends (each read cost 0.45 ms, three a capture). As safe as one check before the writes: a
        takeover needs the lease lapsed (no request outlives it) or is forced by hand, which could
        land after any check anyway (publication is fenced). Never around a job's steps."""
        if self._checked is not None:
            yield
            return
        self._checked = False
        try:
            yield
        finally:
            self._checked = None

    def _settle_first(self) -> None:
        for txn, retry in list(self.unsettled.items()):
            if retry():
                del self.unsettled[txn]
        if self.unsettled:
            raise TurnbackError(
                "an interrupted rewind or redo could not be finished or rolled back yet (the disk "
                "refuses writes); nothing else is changed until it is, and its intent record stays "
                "for the next open", code="recovery-pending", data={"txns": sorted(self.unsettled)})

    def lose_ownership(self) -> None:
        """Become a read-only observer: another process took the store (its epoch is newer)."""
        if self.owner is None:
            return
        self.owner = None
        if self.journal is not None:
            try:
                self.journal.close()
            except OSError:
                pass
            self.journal = None
        for fn in list(self.on_lost):
            fn()

    def record(self, op: dict, *, sync: bool = False) -> dict:
        """Append one operation to the journal, then fold it into the state."""
        self.require_owner()
        op = dict(op, seq=self.state.last_op + 1)
        if self.journal is None:  # a session switch could not open the new journal: open it now
            self.journal, _frames, _torn = journal_mod.Journal.open(
                self.store.journal_path(self.state.session_id))
        self.journal.append(op)
        if sync:
            self.journal.sync()
        apply(self.state, op)
        return op

    def sync(self) -> None:
        if self.journal is not None:
            self.journal.sync()

    def iter_sync(self):
        """`sync` as a job's steps: the journal's fsync (42 ms on a busy disk, held on the loop)
        runs on a helper thread, waited for in slices. Under the job's lock nothing appends
        meanwhile."""
        if self.journal is not None and not self.journal.clean:  # clean: no helper thread's hop
            yield from waiting.wait_in_slices(waiting.in_thread(self.journal.sync))

    @property
    def dirty(self) -> bool:
        return self.state.last_op != self.published_op

    def journal_frames(self) -> list[dict]:
        """The operations since the last publication (the collector pins what they reference)."""
        if self.journal is None:
            return []
        return journal_mod.scan(self.store.journal_path(self.state.session_id)).frames

    # -- publication ------------------------------------------------------------------------------
    def write_state(self, state: SessionState) -> str:
        """Make every object of a state durable in one batch; return its body digest."""
        with self.store.objects.batch():
            return self.codec.write(state)

    def iter_write_state(self, state: SessionState):
        """`write_state` as a job's steps (its value is the body digest): the objects are encoded a
        turn or a shard a step, and their batch's commit (a pack's finish, the sync pass) waits on a
        helper thread in slices. For a job, under the mutation lock: the state holds still."""
        return (yield from self.store.objects.iter_batch(self.codec.iter_write(state)))

    def publish(self, *, state: SessionState | None = None, txn: str | None = None) -> int | None:
        """Publish `state` (default: the live one) as the new durable state; return the head seq."""
        self.require_owner()
        state = state or self.state
        body = self.write_state(state)
        seq = self.commit_body(state, body, txn=txn)
        self.adopt(state)
        return seq

    def iter_publish(self, *, state: SessionState | None = None, txn: str | None = None):
        """`publish` as a job's steps (its value is the head seq); the commit point is the same."""
        self.require_owner()
        state = state or self.state
        body = yield from self.iter_write_state(state)
        seq = self.commit_body(state, body, txn=txn)
        self.adopt(state)
        return seq

    def commit_body(self, state: SessionState, body: str, *, txn: str | None = None) -> int | None:
        """The single commit point: the head record (or sidecar record) that names `body`.

        Written inside the owner's fence: ownership is checked under the lock a takeover needs, so a
        head (or sidecar) is never published at an epoch that another owner has superseded."""
        if self.owner is None:
            info = _owner_info(self.store)
            raise NotOwner(_not_owner_message(info), data={"owner": info})
        try:
            with self.owner.fenced():
                return self._write_commit(state, body, txn)
        except NotOwner:
            self.lose_ownership()
            raise

    def _write_commit(self, state: SessionState, body: str, txn: str | None) -> int | None:
        if self.store.kind == "heads":
            running = state.running
            last = state.turns[-1].prompt if state.turns else ""
            self.head = self.store.heads.publish(
                parent=self.head.seq if self.head else None, session=state.session_id,
                created=time.time(), turn_count=state.settled_turn_count,
                fork_point=state.fork_point, settled=running is None, epoch=self.owner.epoch,
                body=body, last_prompt=last[:200], txn=txn)
            return self.head.seq
        write_record(self.store.sidecar_path, SIDECAR_KIND, {
            "body": body, "sessionId": state.session_id, "turnCount": state.settled_turn_count,
            "txn": txn, "created": time.time(), "epoch": getattr(self.owner, "epoch", 0),
        })
        return None

    def adopt(self, state: SessionState) -> None:
        """After a committed transaction: the new state is the live one; the journal starts empty."""
        old_session = self.state.session_id
        self.state = state
        if state.session_id != old_session:
            self._switch_journal()
        if self.journal is not None:
            self._empty_journal()
        self.published_op = state.last_op
        self.last_publish = time.monotonic()

    def _empty_journal(self) -> None:
        """Emptying the journal after a commit is housekeeping: every frame in it is at or below the
        published state's sequence, so a replay would skip them. A failure here must not turn a
        committed operation into an error; reopen the journal so later appends still work."""
        try:
            self.journal.reset()
            return
        except OSError:
            pass
        try:
            fresh, _frames, _torn = journal_mod.Journal.open(
                self.store.journal_path(self.state.session_id))
        except OSError as exc:  # (a full disk) keep the old one, refusing appends until a reopen
            self.journal._broken = f"it could not be emptied after a commit ({exc})"
            return
        self.journal.close()
        self.journal = fresh

    def _switch_journal(self) -> None:
        """After the commit of another session: its journal. Failing to open it must not turn the
        commit into an error; the next operation opens it (and reports a failure there)."""
        try:
            self.journal.close()
        except OSError:
            pass
        try:
            self.journal, _frames, _torn = journal_mod.Journal.open(
                self.store.journal_path(self.state.session_id))
        except OSError:
            self.journal = None

    def committed_txn(self, txn: str) -> bool:
        """Whether the published state names this transaction (used by recovery at open)."""
        if self.store.kind == "heads":
            return any(self.store.heads.read(s).txn == txn for s in self.store.heads.loose_seqs()[-8:])
        if Path(self.store.sidecar_path).exists():
            return read_record(self.store.sidecar_path, SIDECAR_KIND).get("txn") == txn
        return False

    def close(self) -> None:
        if self.owner is not None and self.dirty and not self.unsettled:
            self.publish()
        if self.journal is not None:
            self.journal.close()
            self.journal = None


def _owner_info(store) -> dict:
    from ..store.ownership.owners import who_owns
    try:
        return who_owns(store.path, store.kind) or {}
    except CorruptStore:
        return {}


def _not_owner_message(info: dict) -> str:
    if not info:
        return "this turnback is a read-only observer of the store"
    return (f"another turnback (pid {info.get('pid')} on {info.get('host')}) owns this store; "
            "this one is a read-only observer")
