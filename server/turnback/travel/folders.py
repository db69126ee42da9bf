"""Folders in a plan: a folder the target has is made, one it lacks is removed, but only when empty.

A plan (rewind, Redo, fork) treats a folder key like a file (model/images.py): `restore` makes the
folder, `delete` removes it. A folder can only be removed when nothing is left in it once the plan has
removed what it removes: a folder that also holds files turnback never captured (ignored ones, say)
is left as it is, with them, and the plan lists it as a gap (`folder-not-empty`) instead. Writes run
in the order that makes every step possible (`apply_order`): files removed, then folders removed
(deepest first), then folders made (shallowest first), then files written; a rollback runs it
backwards.
"""

from __future__ import annotations

from ..model.gaps import Gap
from ..model.images import ABSENT, folder_key, is_digest, is_folder_key
from .disk import empties_after

NOT_EMPTY = ("it holds files or folders turnback never captured (ignored ones, or never seen); the "
             "folder is left as it is, with them")
BLOCKED = ("a folder stands in this file's place and keeps files turnback never captured; the folder "
           "stays, with them, and the file is not written")


def keep_full_folders(ws, changes: list, files: list[dict], gaps: list) -> set[str]:
    """Drop from `changes` every folder removal that would not leave the folder empty; mark its
    FilePlan entry `unchanged` and add a `folder-not-empty` gap. A file to be written in a kept
    folder's place is dropped likewise, with a `not-a-file` gap. Returns the paths left as they are."""
    going = {rel for rel, to in changes if to == ABSENT}
    kept = {rel for rel, to in changes
            if to == ABSENT and is_folder_key(rel) and not empties_after(ws, rel, going)}
    if not kept:
        return kept
    # A file the plan writes in a kept folder's place (a swap `cleared_by_plan` counted on) cannot
    # be written either: it is a gap like any file a folder blocks (docs/rewind.md, "Exact trees").
    blocked = {rel for rel, to in changes
               if to != ABSENT and not is_folder_key(rel) and folder_key(rel) in kept}
    changes[:] = [(rel, to) for rel, to in changes if rel not in kept and rel not in blocked]
    for f in files:
        if f["path"] in kept or f["path"] in blocked:
            f.update(action="unchanged", userEdit=False)
            f.pop("userEditBy", None)
    gaps.extend(Gap(rel, "folder-not-empty", None, NOT_EMPTY) for rel in sorted(kept))
    gaps.extend(Gap(rel, "not-a-file", None, BLOCKED) for rel in sorted(blocked))
    return kept | blocked


def cleared_by_plan(rel: str, problem: str, target: dict, on_disk: dict) -> bool:
    """A path blocked only by what the same plan removes (a turn replaced a folder with a file, or
    a file with a folder) is absent once that has gone: the plan removes files, then folders,
    before it makes folders and writes files (`apply_order`). Without this the boundary's folder
    and its files (or its file) were left out of the plan as gaps, and lost (issue 43).

    Likewise a path the target lacks whose place holds something else (a file where the folder
    was, a folder where the file was): it is absent already. As a gap it was known as before, and
    a Redo to the head the plan published brought it back over what the user had put there (issue
    43's long run, seed 7233)."""
    if target.get(rel) == ABSENT and problem in ("not-a-folder", "not-a-file", "not-a-directory"):
        return True
    if problem == "not-a-file" and not is_folder_key(rel):  # a folder the plan removes
        return target.get(folder_key(rel)) == ABSENT
    if problem not in ("not-a-folder", "not-a-directory"):
        return False
    parts = rel.rstrip("/").split("/")
    for i in range(1, len(parts) + 1):
        above = "/".join(parts[:i])
        if target.get(above) == ABSENT and is_digest((on_disk.get(above) or (None,))[0]):
            return True
    return False


def apply_order(changes: list) -> list:
    """Files removed, folders removed deepest first, folders made shallowest first, files written."""
    def phase(change):
        rel, to = change
        depth = rel.rstrip("/").count("/")
        if is_folder_key(rel):
            return (1, -depth, rel) if to == ABSENT else (2, depth, rel)
        return (0, 0, rel) if to == ABSENT else (3, 0, rel)
    return sorted(changes, key=phase)
