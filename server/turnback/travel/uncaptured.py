"""Edits on disk that turnback has not captured yet, wherever they are.

A rewind returns the files to C(n), and C(n)[p] of a path with no recorded change since turn n began
is its last known image (docs/capture.md, "The pre-turn checkpoint"). A change nobody captured yet (a
file deleted or edited after the last sweep, with no owner watching, or before the watcher's event was
swept) is such a path's only difference from C(n): the plan must put it back, and flag it as an
edit no turn made (`externalChange`), like an uncaptured edit to a path a turn touched. Without this
look the plan only saw paths with a recorded change, and such an edit stayed (issue 43).

Read only: nothing is captured or stored here, so a plan derived twice (prepare, then commit) is the
same plan. A job: it yields every `SLICE` paths, and after every file it reads whole. The stat cache (capture/sweep.py) spares reading a
file whose stat has not moved; a healthy watcher narrows the look to the paths it saw change.
"""

from __future__ import annotations

import os
import stat as statmod

from ..model.images import ABSENT, FOLDER, UNKNOWN, folder_key, is_digest, is_folder_key
from .disk import current_mode, disk_image, folder_image

SLICE = 256


def uncaptured_job(state, ws, hasher, *, max_bytes: int, cache=None, only=None, memo=None):
    """The known paths whose disk image (or permission bits) differs from what the session last
    knew. `only`: look at these paths alone (a healthy watcher's dirty set; None: every known path).
    `cache`: a StatCache whose fresh digests are trusted as a sweep trusts them; `memo`: the
    disk images hashed earlier (travel/diskmemo.py), filled with the ones read here."""
    if only is None:
        rels = list(state.known)
    else:
        rels = sorted({k for r in only for k in (r.rstrip("/"), folder_key(r.rstrip("/")))
                       if k in state.known})
    found: set[str] = set()
    cheap = 0
    for i, rel in enumerate(rels):
        if cheap >= SLICE:
            cheap = 0
            yield ("uncaptured", i)
        image = state.known.get(rel)
        if image in (None, UNKNOWN):
            continue
        now, read = _disk(ws, rel, hasher, cache, max_bytes, memo)
        if now is None and image == FOLDER:  # a file (or a link) stands where the folder was:
            found.add(rel)  # the plan lists it as a gap and leaves it (docs/rewind.md, Exact trees)
            continue
        if read:  # a file read and hashed whole: a step of its own, whatever the count
            cheap = SLICE
        else:
            cheap += 1
        if now is None:
            if is_digest(image) and _is_folder(ws, rel):  # a folder stands where the file was:
                found.add(rel)  # the plan restores the file or lists it as a gap, never silent
            continue  # unreadable, a link, too large: the plan's own look reports such a path
        if now != image:
            found.add(rel)
        elif is_digest(now) and state.known.mode(rel) not in (None, current_mode(ws, rel)):
            found.add(rel)
    return found


def _is_folder(ws, rel: str) -> bool:
    try:
        return statmod.S_ISDIR(os.lstat(ws.abs_path(rel)).st_mode)
    except OSError:
        return False


def _disk(ws, rel: str, hasher, cache, max_bytes: int, memo=None):
    """(its image now or None, whether a file was read whole to know it)."""
    if is_folder_key(rel):
        return folder_image(ws, rel)[0], False  # None: something other than a folder is there
    if cache is not None:
        try:
            st = os.lstat(ws.abs_path(rel))
        except FileNotFoundError:
            st = None
        except OSError:
            return None, False
        if st is not None and statmod.S_ISREG(st.st_mode):
            digest = cache.fresh(rel, st)
            if digest is not None:
                return digest, False
    image, problem = disk_image(ws, rel, hasher, max_bytes=max_bytes, memo=memo)
    return (None if problem is not None else image), True


__all__ = ["uncaptured_job", "ABSENT"]
