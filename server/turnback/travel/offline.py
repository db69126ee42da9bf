"""Lineage and comparison from the store alone: no server, no ownership, nothing written.

`lineage(store)` lists every session (the live one from the current head or sidecar plus its journal,
the others from their session records), the edges between them (forks, worktree forks, started
sessions), the forks a crash interrupted, and the edges it cannot close, named as orphans.
`compare(store, a, b)` puts two sessions side by side: the shared prefix, the diverging turns, the
files whose final images differ, and the partition of each tail computed by the same function the
live rewind and fork use (`rewind.tail_effects`), with the live fork's recorded report beside it.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidParams, NotFound
from ..model.session import SessionState
from ..store import lineage as records
from ..store.layout import Store
from ..timeline.book import Book
from ..timeline.checkpoints import checkpoint
from .rewind import _unique, tail_effects


def session_entry(state_or_record, *, current: bool) -> dict:
    """One line of `turnback/session/list` (and of `turnback branch`)."""
    if isinstance(state_or_record, SessionState):
        s = state_or_record
        lin = s.lineage or {}
        return {"sessionId": s.session_id, "parentId": lin.get("parentId"),
                "forkTurn": lin.get("forkTurn"), "frozen": bool(s.frozen),
                "worktree": lin.get("worktree"), "turnCount": s.turn_count, "current": current,
                "created": s.created, "meta": dict(lin.get("meta") or {})}
    r = state_or_record
    return {"sessionId": r["sessionId"], "parentId": r.get("parentId"),
            "forkTurn": r.get("forkTurn"), "frozen": bool(r.get("frozen")),
            "worktree": r.get("worktree"), "turnCount": r.get("turnCount", 0), "current": current,
            "created": r.get("created"), "meta": dict(r.get("meta") or {})}


class Reader:
    """A read-only view of one store's sessions."""

    def __init__(self, store: Store):
        self.store = store
        self.book, _report = Book.open(store, None)  # no owner: reads, replays, writes nothing
        self.live = self.book.state
        self.records = {r["sessionId"]: r for r in records.sessions(store)
                        if r["sessionId"] != self.live.session_id}

    @classmethod
    def open(cls, store_path) -> "Reader":
        return cls(Store.open(Path(store_path), kind=None, create=False))

    def ids(self) -> list[str]:
        return [self.live.session_id, *self.records]

    def resolve(self, given: str) -> str:
        """A session id, or a unique prefix of one (`current` names the live session)."""
        if given in ("current", "live"):
            return self.live.session_id
        found = [sid for sid in self.ids() if sid.startswith(given)]
        if len(found) != 1:
            raise NotFound(f"no session of this store is named {given!r}" if not found else
                           f"{given!r} names {len(found)} sessions; give more of the id",
                           data={"sessionId": given})
        return found[0]

    def state(self, session_id: str) -> SessionState:
        if session_id == self.live.session_id:
            return self.live
        rec = self.records[session_id]
        if not isinstance(rec.get("body"), str):
            raise InvalidParams(f"session {session_id} lives in the worktree {rec.get('worktree')}; "
                                "compare it from that folder", data={"sessionId": session_id})
        state = self.book.codec.read(rec["body"])
        state.frozen = bool(rec.get("frozen"))
        return state


def lineage(store: Store) -> dict:
    reader = Reader(store)
    sessions = [session_entry(reader.live, current=True)]
    sessions += [dict(session_entry(r, current=False), store=r.get("store"))
                 for r in sorted(reader.records.values(), key=lambda r: r.get("created") or 0.0)]
    known = {s["sessionId"] for s in sessions}
    edges, orphans = [], []
    for s in sessions:
        parent = s["parentId"]
        if parent is None:
            continue
        kind = "worktree" if s["worktree"] and s["sessionId"] != reader.live.session_id else \
            ("fork" if s["forkTurn"] is not None else "start")
        if parent in known:
            edges.append({"parentId": parent, "sessionId": s["sessionId"], "forkTurn": s["forkTurn"],
                          "kind": kind, "worktree": s["worktree"]})
            continue
        outside = _parent_elsewhere(reader, s)
        if outside is not None:
            edges.append({"parentId": parent, "sessionId": s["sessionId"], "forkTurn": s["forkTurn"],
                          "kind": "from-another-store", "parentStore": outside})
        else:
            orphans.append({"sessionId": s["sessionId"], "parentId": parent,
                            "reason": "its parent is in no session record of this store"
                            + (" nor in the parent store it names" if
                               reader.live.lineage.get("parentStore") else "")})
    if store.kind == "heads":
        for seq in store.heads.list_seqs():
            try:
                sid = store.heads.read(seq).session
            except Exception:
                continue
            if sid not in known:
                known.add(sid)
                orphans.append({"sessionId": sid, "parentId": None, "headSeq": seq,
                                "reason": "published heads name this session but no session "
                                          "record does; its lineage is unknown"})
    interrupted = [{"branchId": f["branchId"], "parentId": f.get("parentId"), "turn": f.get("turn"),
                    "phase": f.get("phase"), "worktree": f.get("worktree")}
                   for f in records.forks(store) if f.get("phase") != "complete"]
    return {"sessions": sessions, "edges": edges, "orphans": orphans, "interrupted": interrupted}


def _parent_elsewhere(reader: Reader, s: dict) -> str | None:
    """A worktree's live session names its parent's store: that edge closes only if that store
    really has the parent session."""
    if s["sessionId"] != reader.live.session_id:
        return None
    path = reader.live.lineage.get("parentStore")
    if not path:
        return None
    try:
        other = Reader.open(path)
    except Exception:
        return None
    return path if s["parentId"] in other.ids() else None


# -- compare ---------------------------------------------------------------------------------------
def compare(store: Store, a: str, b: str) -> dict:
    reader = Reader(store)
    a, b = reader.resolve(a), reader.resolve(b)
    sa, sb = reader.state(a), reader.state(b)
    shared = _shared_turns(sa, sb)
    out = {"sharedTurns": shared, "a": _side(sa, shared), "b": _side(sb, shared),
           "files": _differing_files(sa, sb)}
    live = _live_report(store, sa, sb, shared)
    if live is not None:
        side, effects = live
        out["liveReport"] = {"side": side, "effects": effects,
                             "agrees": out[side]["effects"] == effects}
    return out


def _shared_turns(sa: SessionState, sb: SessionState) -> int:
    """A fork's branch shares exactly the turns up to its fork turn; otherwise count equal turns."""
    for child, parent in ((sb, sa), (sa, sb)):
        lin = child.lineage or {}
        if lin.get("parentId") == parent.session_id and isinstance(lin.get("forkTurn"), int):
            return min(lin["forkTurn"], sa.turn_count, sb.turn_count)
    n = 0
    for ta, tb in zip(sa.turns, sb.turns):
        if _fingerprint(ta) != _fingerprint(tb):
            break
        n += 1
    return n


def _fingerprint(t) -> tuple:
    return (t.n, t.kind, t.prompt, t.response, t.state,
            tuple((s.id, s.kind, s.scope, s.summary) for s in t.steps),
            tuple(sorted((rel, e.before, e.after) for rel, e in t.files.items())))


def offline_effects(state: SessionState, keep: int) -> dict:
    """The partition a rewind or fork of `state` at turn `keep` reports, from the store alone: the
    same target images and recorded gaps the live derivation uses (it cannot see the disk, so a path
    unreadable right now is not known here; the live fork's recorded report is shown beside it)."""
    target = checkpoint(state, keep + 1)
    gaps = [g for t in state.turns[keep:] for g in t.gaps
            if g.reason != "unknown-before-image" or g.rel not in target]
    gaps += [g for g in state.live_gaps.values() if g.turn is None or g.turn <= keep]
    return tail_effects(state, keep, target, _unique(gaps))


def _side(state: SessionState, shared: int) -> dict:
    turns = []
    for t in state.turns[shared:]:
        turns.append({"turn": t.n, "prompt": t.prompt, "state": t.state,
                      "steps": [{"id": s.id, "kind": s.kind, "scope": s.scope, "summary": s.summary}
                                for s in t.steps],
                      "files": [{"path": rel, "before": e.before, "after": e.after}
                                for rel, e in sorted(t.files.items())]})
    return {"sessionId": state.session_id, "turnCount": state.turn_count, "frozen": state.frozen,
            "parentId": (state.lineage or {}).get("parentId"), "turns": turns,
            "effects": offline_effects(state, shared)}


def _differing_files(sa: SessionState, sb: SessionState) -> list[dict]:
    paths = sorted(set(sa.known) | set(sb.known))
    return [{"path": p, "a": sa.known.get(p), "b": sb.known.get(p)}
            for p in paths if sa.known.get(p) != sb.known.get(p)]


def _live_report(store: Store, sa: SessionState, sb: SessionState, shared: int):
    """The partition the live fork reported for the parent's tail, when A and B are parent and
    branch of a recorded fork at the shared turn."""
    for f in records.forks(store):
        if f.get("phase") != "complete" or f.get("turn") != shared:
            continue
        if (f.get("parentId"), f.get("branchId")) == (sa.session_id, sb.session_id):
            return "a", f.get("effects")
        if (f.get("parentId"), f.get("branchId")) == (sb.session_id, sa.session_id):
            return "b", f.get("effects")
    return None
