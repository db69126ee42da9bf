"""Pre-turn checkpoints, derived from the chronological record of changes.

C(n)[p] is the image p had just before turn n began. It is the before-image of the first change to p
at or after that moment (in turn n, between n and n+1, in turn n+1, ...); a path with no such change
still has its last known image. Nothing here stores a full map per turn: the record of changes is
the checkpoint index.
"""

from __future__ import annotations

from typing import Iterator

from ..model.images import Image
from ..model.session import SessionState


def changes_from(state: SessionState, n: int) -> Iterator[tuple[str, Image, Image, int | None]]:
    """Every change from the start of turn n on, oldest first: (rel, before, after, turn or None)."""
    for k in range(n, state.turn_count + 1):
        turn = state.turn(k)
        for rel, entry in turn.files.items():
            yield rel, entry.before, entry.after, k
        for rel, (before, after) in state.between.get(k, {}).items():
            yield rel, before, after, None


def checkpoint_modes(state: SessionState, n: int) -> dict[str, int | None]:
    """The permission bits with each image of C(n): the before-mode of the same first change
    (None when it was not recorded)."""
    result: dict[str, int | None] = {}
    for k in range(n, state.turn_count + 1):
        for rel, entry in state.turn(k).files.items():
            result.setdefault(rel, entry.before_mode)
        for rel in state.between.get(k, {}):
            result.setdefault(rel, state.between_modes.get(k, {}).get(rel))
    return result


def checkpoint(state: SessionState, n: int) -> dict[str, Image]:
    """C(n) for every path changed since turn n began; paths not listed are unchanged since then."""
    result: dict[str, Image] = {}
    for rel, before, _after, _turn in changes_from(state, n):
        result.setdefault(rel, before)
    return result
