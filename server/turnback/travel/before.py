"""The *before* state of a file transaction (travel/transaction.py, step 1): the live state with the
disk images it never captured, which the transaction publishes as a *before* head so Redo can bring
back exactly what it overwrote. Its own module so the transaction reads in one sitting."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..model.images import ABSENT, Image
from ..model.known import KnownMap
from ..model.session import SessionState


def before_state(book: Any, backups: dict[str, Image],
                 backup_modes: dict[str, int | None]) -> SessionState | None:
    """The live state with the disk images (and permission bits) it did not capture, or None when it
    captured them all."""
    state: SessionState = book.state
    # An absent file the session never knew is nothing to bring back (a worktree's empty folder).
    unseen = {rel: image for rel, image in backups.items() if state.known.get(rel) != image
              and not (image == ABSENT and state.known.get(rel) is None)}
    bits = {rel: m for rel, m in backup_modes.items()
            if m is not None and state.known.mode(rel) not in (None, m)}
    if book.store.kind != "heads" or not (unseen or bits) or state.running is not None:
        return None
    known = KnownMap(state.known, state.known.modes())
    known.update(unseen)
    for rel, image in unseen.items():
        known.set_mode(rel, backup_modes.get(rel) if image != ABSENT else None)
    for rel, m in bits.items():
        known.set_mode(rel, m)
    return dataclasses.replace(state, known=known, **_as_loose_changes(state, unseen, bits))


def _as_loose_changes(state: SessionState, unseen: dict[str, Image],
                      bits: dict[str, int]) -> dict[str, Any]:
    """The before state's record of changes: each uncaptured image (or bits) is a change between
    turns after the last turn, as a sweep would have recorded it. Without it the before state's
    images were in no record, so every earlier checkpoint counted the edit as its own: a rewind
    after a Redo of that state neither put it back nor flagged it (issue 43, A)."""
    n = state.turn_count
    between = {k: dict(v) for k, v in state.between.items()}
    between_modes = {k: dict(v) for k, v in state.between_modes.items()}
    between_by = dict(state.between_by)
    bucket = between.setdefault(n, {})
    bucket_modes = between_modes.setdefault(n, {})
    for rel in sorted(set(unseen) | set(bits)):
        was = state.known.get(rel, ABSENT)
        if rel not in bucket:
            bucket_modes[rel] = state.known.mode(rel) if was != ABSENT else None
        bucket[rel] = (bucket[rel][0] if rel in bucket else was, unseen.get(rel, was))
        between_by[(n, rel)] = "sweep"  # seen on disk, not captured: "changed on disk"
    if not any(v is not None for v in bucket_modes.values()):
        between_modes.pop(n, None)
    return {"between": between, "between_modes": between_modes, "between_by": between_by}
