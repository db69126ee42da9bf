"""The session state after a plan that moves files and turns apart.

Two shapes, both recorded as changes *between turns* (nobody's turn made them), so every later
checkpoint, user-edit flag and Redo group stays true:

* files change, every turn stays (`turnback restore`, a files-only rewind): each restored path gets
  an entry `between[N]` (N = the turn count) from its image now to the restored one, marked with who
  did it (`restore`), and the restore is listed in `state.restores`. A new fork point is minted, so
  the state before it is a Redo group of its own;
* turns go, every file stays (a conversation-only rewind, and `keepUserEdits`): each kept path gets an
  entry `between[keep]` from its image at the boundary to its image now, so a later rewind further
  back still puts it back (and names it a change no turn made).
"""

from __future__ import annotations

import time
import uuid

from ..model.images import ABSENT, UNKNOWN, is_folder_key
from ..model.session import SessionState, clone

RECORD_PATHS = 20  # paths a restore record names; the record is in every later publication


def files_changed_state(state: SessionState, changes, modes: dict, *, record: dict,
                        directives=None, by: str = "restore") -> SessionState:
    """`state` with `changes` (rel, image) applied as one change between turns after its last turn."""
    new = clone(state)
    n = state.turn_count
    bucket = new.between.setdefault(n, {})
    bucket_modes = new.between_modes.setdefault(n, {})
    for rel, to in changes:
        if rel not in bucket:
            bucket_modes[rel] = state.known.mode(rel)
        first = bucket[rel][0] if rel in bucket else state.known.get(rel, ABSENT)
        bucket[rel] = (first, to)
        new.between_by[(n, rel)] = by
        new.known[rel] = to
        if to == ABSENT:
            new.known.set_mode(rel, None)
        elif (rel, to) in modes:
            new.known.set_mode(rel, modes[(rel, to)])
    if not bucket:
        del new.between[n]
    if not any(v is not None for v in bucket_modes.values()):
        new.between_modes.pop(n, None)
    if directives is not None:
        new.directives = directives
    rels = [rel for rel, _ in changes]
    new.fork_point = uuid.uuid4().hex  # a new line: the state before it is a Redo group of its own
    new.restores = list(state.restores) + [dict(
        record, afterTurn=n, paths=rels[:RECORD_PATHS], count=len(rels), created=time.time(),
        forkPointBefore=state.fork_point, forkPoint=new.fork_point)]
    return new


def keep_as_they_are(new: SessionState, state: SessionState, rels, *, by: str | None = None,
                     images: dict | None = None) -> None:
    """In `new` (a state whose turns end at `new.turn_count`), leave each of `rels` as `state` knows it
    now (or as `images` says, for a file the commit writes anew: a merge of the user's edit): its
    change since the boundary becomes a change between turns after the last kept turn."""
    keep = new.turn_count
    for rel in rels:
        now = (images or {}).get(rel, state.known.get(rel))
        if now is None:
            continue
        target = new.known.get(rel)
        if target is None and now not in (ABSENT, UNKNOWN):
            target = never_seen(new, rel)
        # A change of bits alone is a change too (issue 43, F: a conversation-only rewind dropped a
        # discarded turn's chmod from the record, so a later rewind further back kept the bits).
        moved = rel not in (images or {}) and None not in (new.known.mode(rel), state.known.mode(rel)) \
            and new.known.mode(rel) != state.known.mode(rel)
        if target is not None and (target != now or moved):
            bucket = new.between.setdefault(keep, {})
            if rel not in bucket:
                bits = new.known.mode(rel)
                if bits is not None:
                    new.between_modes.setdefault(keep, {})[rel] = bits
            bucket[rel] = (bucket[rel][0] if rel in bucket else target, now)
            if by is not None:
                new.between_by[(keep, rel)] = by
        new.known[rel] = now
        new.known.set_mode(rel, state.known.mode(rel))


def never_seen(new: SessionState, rel: str):
    """The image `rel` had in a state that never saw it (a Redo's head): `unknown`, so a later
    rewind lists `unknown-before-image` and leaves it as it is (an ignore rule may have hidden it
    there, folder or file: docs/rewind.md, "Exact trees"). None: a folder of a state that never
    recorded folders, learnt as it is like a first sweep learns it (no record)."""
    if is_folder_key(rel) and not new.config.get("folders"):
        return None
    return UNKNOWN


def left_behind(new: SessionState, state: SessionState, target: dict, target_modes: dict, rels) -> None:
    """In `new` (a rewound state), record each of `rels`, a path the plan had to leave as it is (a
    folder that still holds the user's files, a file a folder blocks), as a change between turns
    after the last kept turn, from its image at the boundary: without it the path was known with no
    change record, every earlier checkpoint took it as there all along, and a later rewind further
    back left it (issue 43's long run, seeds 2014, 2072, 5019: an empty `d/` no checkpoint had)."""
    rels = [rel for rel in rels if target.get(rel) not in (None, UNKNOWN)]
    for rel in rels:
        new.known[rel] = target[rel]
        new.known.set_mode(rel, target_modes.get(rel) if target[rel] != ABSENT else None)
    keep_as_they_are(new, state, rels)
