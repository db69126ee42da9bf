"""Which heads a collection keeps: a pure decision over head facts.

Kept (each head with every reason that applies):
- `current`  the newest head, and the head the live session stands on (they are the same head for
             the owner; both are named so that neither can ever be retired);
- `group`    the newest settled head of every Redo group, a group being the settled heads with the
             same (settled turn count, fork point). An unsettled head (published inside a running
             turn) is never a representative: Redo never offers incomplete turns;
- `recent`   the newest `grace_heads` heads, whatever they are;
- `young`    every head created less than `grace_seconds` before `now`.
Everything else is obsolete and is retired. Unreadable heads are not in `facts` and are never retired:
a collection does not remove what it cannot read (fsck reports it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .scan import HeadFacts


@dataclass
class Decision:
    keep: dict[int, list[str]] = field(default_factory=dict)  # seq -> reasons
    retire: list[int] = field(default_factory=list)  # oldest first


def kept_for(d: Decision) -> dict[str, int]:
    """How many heads were kept for each reason, each head counted once under its first reason."""
    out: dict[str, int] = {}
    for reasons in d.keep.values():
        first = next((r for r in ("current", "group", "recent", "young") if r in reasons), reasons[0])
        out[first] = out.get(first, 0) + 1
    return out


def decide(facts: dict[int, HeadFacts], *, now: float, grace_heads: int, grace_seconds: float,
           protect=()) -> Decision:
    d = Decision()
    if not facts:
        return d
    seqs = sorted(facts)

    def keep(seq: int, why: str) -> None:
        if seq in facts:
            d.keep.setdefault(seq, []).append(why)

    keep(seqs[-1], "current")
    for seq in protect:
        if seq is not None:
            keep(seq, "current")
    newest: dict[tuple[int, str], int] = {}
    for seq in seqs:
        f = facts[seq]
        if f.settled:
            newest[(f.turn_count, f.fork_point)] = seq  # seqs ascend: the last one wins
    for seq in newest.values():
        keep(seq, "group")
    for seq in seqs[-grace_heads:] if grace_heads > 0 else []:
        keep(seq, "recent")
    for seq in seqs:
        if now - facts[seq].created < grace_seconds:
            keep(seq, "young")
    d.retire = [s for s in seqs if s not in d.keep]
    return d
