"""Many sessions in one store: start a new one, list them with their lineage, read a parked one.

One session is live at a time: the one the current head (or sidecar) names. Starting another parks
the live one (its last state stays readable through its session record) and publishes a fresh state
for the new one; the publication is the commit point, so a crash leaves the old live session or the
new one. A fork (workbench/fork.py) makes its branch through the same records, and freezes the parent.

A request may name the session it means with `sessionId`; `guard` refuses a frozen one with the code
`frozen` and any other non-live one with `not-current`, so a client that still holds the parent's id
after a fork cannot write into the parent.
"""

from __future__ import annotations

import copy
import time

from ..errors import InvalidParams, NotCurrent, NotFound, SessionFrozen, TurnRunning
from ..model.session import SessionState
from ..store import lineage, waiting
from ..timeline.book import new_session
from ..travel.offline import session_entry
from . import params as P

# Configuration that belongs to one conversation and never passes to another session.
PRIVATE_CONFIG = ("approvals",)


def parked_record(state: SessionState, body: str | None, *, frozen: bool = False,
                  **extra) -> dict:
    """The session record of a session that stops being the live one."""
    last = state.turns[-1].prompt if state.turns else ""
    lin = state.lineage or {}
    return {"sessionId": state.session_id, "body": body, "frozen": frozen,
            "parentId": lin.get("parentId"), "forkTurn": lin.get("forkTurn"),
            "worktree": lin.get("worktree"), "meta": dict(lin.get("meta") or {}),
            "created": state.created, "parked": time.time(), "turnCount": state.turn_count,
            "lastPrompt": last[:200], **extra}


def fresh_state(old: SessionState, lineage_info: dict) -> SessionState:
    """A new session over the same workspace: it knows what the files look like (so its first turn
    has real before-images), and nothing of the old conversation."""
    config = {k: v for k, v in old.config.items() if k not in PRIVATE_CONFIG}
    new = new_session(config)
    new.known = old.known.copy()
    new.live_gaps = {k: g for k, g in old.live_gaps.items() if g.turn is None}
    new.lineage = {k: v for k, v in lineage_info.items() if v is not None}
    return new


def entry(rec_or_state, *, current: bool) -> dict:
    """One line of `turnback/session/list` (the same line `turnback branch` prints)."""
    return session_entry(rec_or_state, current=current)


class SessionsFeature:
    def __init__(self, wb):
        self.wb = wb

    # -- reading ----------------------------------------------------------------------------------
    def records(self) -> dict[str, dict]:
        live = self.wb.state.session_id
        return {r["sessionId"]: r for r in lineage.sessions(self.wb.store) if r["sessionId"] != live}

    def list(self, params=None) -> dict:
        """`turnback/session/list`: the live session first, then every other one, oldest first."""
        P.obj(params)
        out = [entry(self.wb.state, current=True)]
        others = sorted(self.records().values(), key=lambda r: (r.get("created") or 0.0))
        out.extend(entry(r, current=False) for r in others)
        return {"sessions": out}

    def record(self, session_id: str) -> dict:
        rec = self.records().get(session_id)
        if rec is None:
            raise NotFound(f"this store has no session {session_id!r}",
                           data={"sessionId": session_id})
        return rec

    def read(self, session_id: str) -> SessionState:
        """The state of any session of this store: the live one, or a parked or frozen one."""
        if session_id == self.wb.state.session_id:
            return self.wb.state
        rec = self.record(session_id)
        if not isinstance(rec.get("body"), str):
            raise NotFound(f"session {session_id} lives in another folder ({rec.get('worktree')}); "
                           "open that folder to read it", data={"sessionId": session_id,
                                                                "worktree": rec.get("worktree")})
        state = self.wb.book.codec.read(rec["body"])
        state.frozen = bool(rec.get("frozen"))
        return state

    def read_job(self, session_id: str):
        """`read` as a job: another session's state is read on a helper thread while it yields."""
        if session_id == self.wb.state.session_id:
            return self.wb.state
        rec = self.record(session_id)
        if not isinstance(rec.get("body"), str):
            return self.read(session_id)  # says where it lives
        state = yield from self.wb.book.codec.read_job(rec["body"])
        state.frozen = bool(rec.get("frozen"))
        return state

    def is_frozen(self, session_id: str) -> bool:
        if session_id == self.wb.state.session_id:
            return bool(self.wb.state.frozen)
        rec = self.records().get(session_id)
        return bool(rec and rec.get("frozen"))

    def log(self, params=None) -> dict:
        """`turnback/session/log`, for the live session or (with `sessionId`) any other one."""
        p = P.obj(params)
        sid = P.field(p, "sessionId", str, default=None, allow_none=True)
        if sid is None or sid == self.wb.state.session_id:
            return self.wb.turns.log({k: v for k, v in p.items() if k != "sessionId"})
        state = self.read(sid)
        out = self.wb.turns.log({k: v for k, v in p.items() if k != "sessionId"}, state=state)
        out["frozen"] = state.frozen
        return out

    # -- the guard every mutating request passes --------------------------------------------------
    def guard(self, params) -> None:
        """Refuse a mutation aimed at a session other than the live one (`frozen` for a frozen one)."""
        if not isinstance(params, dict) or params.get("sessionId") is None:
            if self.wb.state.frozen:
                raise SessionFrozen("this session is frozen; work continues in its branch")
            return
        sid = params["sessionId"]
        if not isinstance(sid, str):
            raise InvalidParams("sessionId must be a string", data={"field": "sessionId"})
        if sid == self.wb.state.session_id:
            if self.wb.state.frozen:
                raise SessionFrozen("this session is frozen; work continues in its branch")
            return
        rec = self.records().get(sid)
        if rec is None:
            raise NotFound(f"this store has no session {sid!r}", data={"sessionId": sid})
        if rec.get("frozen"):
            raise SessionFrozen(
                f"session {sid} is frozen: it was forked and work continues in session "
                f"{rec.get('branchId') or self.wb.state.session_id}; it can be read and its "
                "states brought back with Redo, but not changed",
                data={"sessionId": sid, "branchId": rec.get("branchId")})
        raise NotCurrent(f"session {sid} is not the live session of this store (the live one is "
                         f"{self.wb.state.session_id})",
                         data={"sessionId": sid, "current": self.wb.state.session_id})

    # -- starting a session ---------------------------------------------------------------------
    def start(self, parent: str | None = None, fork_turn: int | None = None,
              meta: dict | None = None) -> dict:
        """Park the live session and make a new, empty one live; return its `session/list` entry.

        `parent` and `fork_turn` record lineage only (no files change; a real fork is
        `wb.fork`); `meta` is opaque data the caller keeps with the session (an agent's own
        session id, for example)."""
        return self.wb.run(self.start_job(parent, fork_turn, meta))

    def start_job(self, parent: str | None = None, fork_turn: int | None = None,
                  meta: dict | None = None):
        """`start` as a job: writing the parked session's last state and publishing the new one
        are its steps (an agent's SessionStart parked a 20,000-file session in one 60 ms hold)."""
        wb = self.wb
        book = wb.book
        book.require_owner()
        if parent is not None and parent != wb.state.session_id and parent not in self.records():
            raise NotFound(f"this store has no session {parent!r}", data={"parentId": parent})
        if fork_turn is not None:
            if parent is None:
                raise InvalidParams("forkTurn needs a parent", data={"field": "forkTurn"})
            if not isinstance(fork_turn, int) or isinstance(fork_turn, bool) or fork_turn < 0:
                raise InvalidParams("forkTurn must be a whole number", data={"field": "forkTurn"})
        if meta is not None and not isinstance(meta, dict):
            raise InvalidParams("meta must be an object", data={"field": "meta"})
        old = wb.state
        if old.running is not None:
            raise TurnRunning(f"turn {old.running.n} is still running; settle or cancel it before "
                              "starting another session", data={"turn": old.running.n})
        body = yield from book.iter_write_state(old)
        # The parked record first: until the new state is published it names a session that is
        # still live (ignored), and after it, the old session's last state stays reachable.
        lineage.write_session(wb.store, parked_record(old, body))
        new = fresh_state(old, {"parentId": parent, "forkTurn": fork_turn,
                                "meta": copy.deepcopy(meta) if meta else None})
        # the commit point; from the parked record on, a cancel lets the job finish
        yield from waiting.binding_steps(book.iter_publish(state=new))
        wb.collection.schedule("session")
        wb.emit_status()
        return entry(new, current=True)

    def start_params(self, params) -> dict:
        """`turnback/session/start {parentId?, forkTurn?, meta?}`, run straight through."""
        return self.wb.run(self.start_params_job(params))

    def start_params_job(self, params):
        """`turnback/session/start {parentId?, forkTurn?, meta?}` as a job (the server's way)."""
        p = P.obj(params)
        return self.start_job(P.field(p, "parentId", str, default=None, allow_none=True),
                              P.field(p, "forkTurn", int, default=None, allow_none=True),
                              P.field(p, "meta", dict, default=None, allow_none=True))

    # -- at open ------------------------------------------------------------------------------------
    def tidy(self) -> None:
        """Interrupted forks are finished or forgotten first. A crash between parking a session and publishing the next leaves a record for the session
        that is still live: it is not parked, so the record goes (owner only, at open)."""
        wb = self.wb
        if not wb.is_owner:
            return
        forks = wb.fork.recover_interrupted()
        if forks:
            wb.open_report["forks"] = forks
        rec = lineage.read_session(wb.store, wb.state.session_id)
        if rec is not None and not rec.get("frozen"):
            lineage.remove_session(wb.store, wb.state.session_id)
