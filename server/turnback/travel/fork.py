"""Fork planning: what a fork at turn k would do, whether it may, and the hash that binds it.

A fork keeps turns 1..k in a new branch session and freezes the parent. Its workspace side is a
rewind to the end of turn k, so the plan *is* the rewind derivation (`rewind.derive_job` with the
boundary "after the response of turn k"): the same file plan, the same gaps, the same effect
partition (`rewind.tail_effects`, one function). On top of it a fork adds its refusals, the parent's
held sends it drops, what the branch does not preserve, and a hash over the rewound span, the
would-cross set and the live session's composition, so a confirm against a changed session is stale.
"""

from __future__ import annotations

from dataclasses import dataclass

import cbor2

from ..errors import InvalidParams
from ..model.images import is_digest
from ..model.session import SessionState
from .rewind import Derived, derive_job

# Written into the branch's lineage (its first entry): what a fork cannot carry over.
NOT_PRESERVED = (
    "model seeds and sampling state",
    "the clock: the branch runs later than the parent did",
    "provider and model versions",
    "model decisions whose text was not captured (only logged prompts, responses and steps travel)",
    "the parent's held outbound sends (dropped, listed in the fork report)",
    "approvals and live workflow ownership (tasks, goals, agents, handoffs)",
)

CROSSED = ("crossedUncompensated", "crossedCompensated", "wouldCrossOnRewind")


@dataclass
class ForkPlan:
    report: dict  # {hash, turn, effects, files, gaps, droppedSends, notPreserved, refusal?, summary}
    derived: Derived


def check_turn(state: SessionState, turn) -> int:
    if not isinstance(turn, int) or isinstance(turn, bool):
        raise InvalidParams("turn must be an integer", data={"field": "turn"})
    return turn


def prepare_job(state: SessionState, ws, objects, turn: int, *, head_seq, max_bytes: int,
                busy: list[dict] = (), redo: bool = True):
    """The fork report for turn `turn` (a job: it hashes the files on disk while it derives).
    `redo`: the store keeps heads, so the frozen parent's states can be brought back later."""
    turn = check_turn(state, turn)
    derived = yield from derive_job(state, ws, objects, {"kind": "afterResponse", "turn": turn},
                                    max_bytes=max_bytes)
    c = derived.candidate
    held = [s.id for t in state.turns for s in t.steps if s.held]
    report = {
        "turn": turn,
        "sessionId": state.session_id,
        "keep": c["keep"], "discard": c["discard"],
        "files": c["files"], "gaps": c["gaps"], "effects": c["effects"],
        "effectWords": c["effectWords"],
        "steps": c.get("steps", []),
        "directives": c["directives"], "workflowCleared": c["workflowCleared"],
        "droppedSends": held,
        "notPreserved": list(NOT_PRESERVED),
        "redoable": bool(redo),
    }
    report["hash"] = fork_hash(objects.hasher, state, turn, c, head_seq, held)
    report["planHash"] = report["hash"]  # the name every other plan uses; `hash` stays for clients out
    refusal = refusal_of(state, turn, derived, objects, busy)
    if refusal is not None:
        report["refusal"] = refusal
    report["summary"] = summary(report)
    return ForkPlan(report, derived)


def refusal_of(state: SessionState, turn: int, derived: Derived, objects, busy) -> dict | None:
    """The first reason this fork cannot be made honestly, or None. Order: busy, opaque,
    non-idempotent, flushed."""
    if busy:
        other = busy[0]
        return {"code": "fork-busy",
                "message": f"a fork of session {other.get('parentId')} at turn {other.get('turn')} is "
                           "still under way (or was interrupted and not yet resolved); one fork at a "
                           "time", "branchId": other.get("branchId")}
    opaque = derived.candidate["effects"]["unrestored"]
    if opaque:
        return {"code": "fork-opaque-step",
                "message": f"step(s) {', '.join(opaque)} above turn {turn} did something on this "
                           "machine that turnback cannot put back (an unknown kind, or a host step "
                           "with no restorable inverse); the branch could not honestly start from "
                           f"turn {turn}", "steps": opaque}
    tail = [s for t in state.turns[turn:] for s in t.steps]
    non_idempotent = [s.id for s in tail if s.inverse is not None and s.inverse.idempotent is False]
    if non_idempotent:
        return {"code": "fork-non-idempotent",
                "message": f"step(s) {', '.join(non_idempotent)} above turn {turn} have an inverse "
                           "that is not safe to run twice; recovery after a crash in the middle of a "
                           "fork may run it again, so the fork is refused", "steps": non_idempotent}
    missing = sorted(rel for rel, to in derived.changes if is_digest(to) and not objects.has(to))
    if missing:
        return {"code": "fork-flushed",
                "message": f"the images of turn {turn}'s boundary are no longer in the store "
                           f"({', '.join(missing[:5])}); the workspace cannot be put back there",
                "paths": missing}
    return None


def fork_hash(hasher, state: SessionState, turn: int, candidate: dict, head_seq, held) -> str:
    """Bound to the rewound span, the would-cross set and the live session's composition (turn
    count, head, instruction snapshots, configuration), on top of the rewind's own plan hash."""
    span = [[t.n, t.kind, t.prompt, t.state, len(t.response),
             [s.to_dict() for s in t.steps]] for t in state.turns[turn:]]
    crossing = sorted(sid for name in CROSSED for sid in candidate["effects"][name])
    basis = {
        "turn": turn, "plan": candidate["planHash"], "span": span, "wouldCross": crossing,
        "composition": {"sessionId": state.session_id, "turnCount": state.turn_count,
                        "head": head_seq, "config": state.config,
                        "instructions": [[t.n, sorted(t.instructions.items())] for t in state.turns]},
        "held": sorted(held),
    }
    return hasher.digest(cbor2.dumps(basis, canonical=True))


def summary(r: dict) -> str:
    """What a fork does, in its own words: the turns after k stay in the frozen parent (nothing is
    discarded), the files are put back as they were at the end of turn k."""
    k = r["turn"]
    later = r["discard"]["turnCount"]
    redo = r.get("redoable", True)
    kept_where = ("this session is frozen: readable, and Redo can bring back its states"
                  if redo else "this session is frozen and readable; this store keeps no heads, so "
                  "nothing can bring this session's state back into the workspace later (no Redo)")
    parts = [f"Forks at turn {k}: a new branch session continues from turn {k} with turns "
             f"1\u2013{k}; {kept_where}." if k else
             f"Forks before the first turn: the branch starts empty; {kept_where}."]
    if later:
        parts.append(f"The {later} later turn(s) (from turn {k + 1} on) stay in the frozen session, "
                     "not in the branch.")
    restore = [f for f in r["files"] if f["action"] == "restore"]
    delete = [f for f in r["files"] if f["action"] == "delete"]
    if restore or delete:
        parts.append(f"The workspace is put back as it was at the end of turn {k}: {len(restore)} "
                     f"file(s) put back, {len(delete)} removed.")
    edits = [f["path"] for f in r["files"] if f.get("userEdit") and f["action"] != "unchanged"]
    if edits:
        parts.append("Overwrites edits no later turn made (yours, or another program's): "
                     + ", ".join(edits) + ("; Redo of the frozen session's last state brings them "
                                          "back" if redo else "; they cannot be brought back "
                                          "afterwards: fork keeping your edits to leave them")
                     + ".")
    crossed = [sid for name in CROSSED for sid in r["effects"][name]]
    if crossed:
        parts.append(f"{len(crossed)} step(s) already left this machine or would on rewind and stay "
                     "done (no inverse that could leave the machine is run): "
                     + ", ".join({d["id"]: d["what"] for d in r.get("steps") or []}.get(sid, sid)
                                 for sid in crossed) + ".")
    if r["droppedSends"]:
        parts.append(f"Drops {len(r['droppedSends'])} held outbound send(s) of this session: "
                     + ", ".join(r["droppedSends"]) + ".")
    if r["gaps"]:
        parts.append(f"{len(r['gaps'])} capture gap(s) cannot be undone.")
    parts.append("The branch does not preserve: " + "; ".join(r["notPreserved"][:4]) + ".")
    if r.get("refusal"):
        parts.append("Refused: " + r["refusal"]["message"] + ".")
    return " ".join(parts)
