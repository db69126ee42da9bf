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
        """Every session this store can show: its own, and the parent a worktree fork's store
        names (so a worktree fork and its parent compare from either folder)."""
        parent = self._parent_elsewhere_id()
        return [self.live.session_id, *self.records, *([parent] if parent else [])]

    def _parent_elsewhere_id(self) -> str | None:
        lin = self.live.lineage or {}
        pid = lin.get("parentId")
        return pid if lin.get("parentStore") and pid and pid not in self.records else None

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
        """Any session's state: this store's own, a worktree fork's (read from the store in its
        folder), or a worktree's parent (read from the store the worktree's lineage names)."""
        if session_id == self.live.session_id:
            return self.live
        rec = self.records.get(session_id)
        if rec is not None and isinstance(rec.get("body"), str):
            state = self.book.codec.read(rec["body"])
            state.frozen = bool(rec.get("frozen"))
            return state
        where = (rec or {}).get("store") or (self.live.lineage or {}).get("parentStore")
        other = self._other(where)
        if other is not None and session_id in other.ids() and other.live.session_id != \
                self.live.session_id:
            return other.state(session_id)
        raise InvalidParams(f"session {session_id} lives in another folder "
                            f"({(rec or {}).get('worktree') or where}) whose store cannot be read "
                            "from here", data={"sessionId": session_id})

    def _other(self, path):
        try:
            return Reader.open(path) if path else None
        except Exception:  # noqa: BLE001 - another folder's store may be gone or unreadable
            return None

    def fork_records(self) -> list[dict]:
        """This store's fork records, and the parent store's when this is a worktree's store."""
        out = list(records.forks(self.store))
        other = self._other((self.live.lineage or {}).get("parentStore"))
        if other is not None:
            out += records.forks(other.store)
        return out


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
    if a == b:  # one session named twice (`current current`, an id and its prefix)
        state = reader.state(a)
        side = _side(state, state.turn_count)
        return {"sameSession": True, "sessionId": a, "sharedTurns": state.turn_count,
                "a": side, "b": side, "files": []}
    sa, sb = reader.state(a), reader.state(b)
    skip_a, skip_b = _shared_turns(sa, sb)
    out = {"sameSession": False, "sharedTurns": max(skip_a, skip_b), "a": _side(sa, skip_a),
           "b": _side(sb, skip_b), "files": _differing_files(sa, sb)}
    live = _live_report(reader.fork_records(), sa, sb)
    if live is not None:
        side, effects, turn = live
        parent = sa if side == "a" else sb
        out["liveReport"] = {"side": side, "effects": effects, "forkTurn": turn,
                             "agrees": offline_effects(parent, turn) == effects}
    return out


def _shared_turns(sa: SessionState, sb: SessionState) -> tuple[int, int]:
    """How many leading turns of each side the two share, by content (the same prompts, answers,
    steps and files), not by what a lineage claims: a branch that went on identically shares those
    turns too. A worktree fork's own session holds none of its parent's turns: it shares exactly the
    parent's first `forkTurn` turns, and all of its own are its tail."""
    for child, parent, child_first in ((sb, sa, False), (sa, sb, True)):
        lin = child.lineage or {}
        if lin.get("parentStore") and lin.get("parentId") == parent.session_id \
                and isinstance(lin.get("forkTurn"), int):
            shared = min(lin["forkTurn"], parent.turn_count)
            return (0, shared) if child_first else (shared, 0)
    n = 0
    for ta, tb in zip(sa.turns, sb.turns):
        if _fingerprint(ta) != _fingerprint(tb):
            break
        n += 1
    return n, n


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


def _live_report(forks: list[dict], sa: SessionState, sb: SessionState):
    """(side of the parent, the partition the live fork reported, its fork turn), when A and B are
    the parent and branch of a recorded fork."""
    for f in forks:
        if f.get("phase") != "complete":
            continue
        if (f.get("parentId"), f.get("branchId")) == (sa.session_id, sb.session_id):
            return "a", f.get("effects"), f.get("turn")
        if (f.get("parentId"), f.get("branchId")) == (sb.session_id, sa.session_id):
            return "b", f.get("effects"), f.get("turn")
    return None
