"""The user's own edits in a rewind or redo plan: flagged, named, and kept on request.

A *user edit* is a change a rewind or redo would undo that no discarded turn made: an edit saved
between turns, a change a watcher or a sweep saw outside any turn, or a change on disk turnback has not
captured yet (`externalChange`). It is flagged whether or not it was captured, because a captured edit
is no less the user's. `keepUserEdits` on commit leaves those files exactly as they are now.
"""

from __future__ import annotations

import copy

from .filestate import keep_as_they_are

# Who made a change between turns (the capture source), in the contract's words, and in a person's.
USER_EDIT_BY = {"save": "editor-save", "watch": "disk-change", "sweep": "disk-change",
                "hook": "capture-request", "restore": "restore", "kept": "kept-on-rewind"}
USER_EDIT_WORDS = {"editor-save": "saved in the editor", "disk-change": "changed on disk",
                   "capture-request": "captured between turns", "uncaptured": "changed on disk, "
                   "not captured yet", "restore": "put back by turnback restore",
                   "kept-on-rewind": "kept by a conversation-only rewind"}


def user_edit_fields(action: str, external: bool, loose_by: str | None | bool = False) -> dict:
    """`userEdit` (and `userEditBy` when known) for one FilePlan entry.

    `loose_by` is False when no change between turns touched the path, else the capture source of the
    latest one (None when unknown)."""
    if action == "unchanged":
        return {"userEdit": False}
    if external:
        return {"userEdit": True, "userEditBy": "uncaptured"}
    if loose_by is False:
        return {"userEdit": False}
    out = {"userEdit": True}
    if loose_by in USER_EDIT_BY:
        out["userEditBy"] = USER_EDIT_BY[loose_by]
    return out


def kept_paths(files: list[dict]) -> list[str]:
    return [f["path"] for f in files if f.get("userEdit") and f.get("action") != "unchanged"]


def keep_user_edits(derived, state):
    """A copy of a derived rewind (or redo plan) that leaves every user edit as it is now.

    The kept files are not written; the new state remembers them as they were last known, with the
    kept change recorded as a change between turns (nobody's turn made it), so a later rewind to an
    earlier boundary still lists it as the user's."""
    files = derived.candidate["files"] if hasattr(derived, "candidate") else derived.result["files"]
    kept = set(kept_paths(files))
    if not kept:
        return derived
    clone = copy.copy(derived)
    clone.changes = [(rel, to) for rel, to in derived.changes if rel not in kept]
    new = copy.deepcopy(derived.new_state)
    keep_as_they_are(new, state, kept)
    clone.new_state = new
    clone.kept = sorted(kept)
    return clone
