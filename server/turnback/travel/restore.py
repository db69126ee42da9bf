"""Selective restore: some paths back to their images at a boundary, every turn kept.

`turnback restore PATH… --turn K` is a files-only rewind of the paths named: the same candidate shape,
plan hash, user-edit flags, gaps and file transaction as a rewind (travel/rewind.py), with
`operation: "restore"`, `discard.turnCount: 0` and `files` listing the planned paths only. The
restored images become one change between turns after the last turn (travel/filestate.py), the
restore is listed in `state.restores`, and a new fork point makes the state before it a Redo group.

The boundary's moment (docs/rewind.md, "Restore"): `afterResponse` K is the files as turn K left them,
when it ended (an edit saved after turn K is not part of it); `beforePrompt` K is the files when
prompt K was sent (edits saved before it included). Paths are `file://` URIs or paths and globs
relative to the workspace (`*`, `?`, `[…]` within a folder, `**` across folders). A folder or a glob
expands to the files it held at the boundary; files created inside it since are left alone and listed
(`createdSince`). A named file absent at the boundary is deleted.
"""

from __future__ import annotations

import re

from ..errors import InvalidParams, NoMatch, UnknownPath
from ..model.gaps import Gap, disk_gap
from ..model.images import ABSENT, FOLDER, UNKNOWN, is_digest
from ..model.session import WORKFLOW_LISTS, SessionState
from ..timeline.checkpoints import checkpoint, checkpoint_modes
from .disk import disk_images_job, drain
from .folders import cleared_by_plan
from .plan_words import boundary_words, file_sentences
from .rewind import (Derived, _file, _loose_changes, _unique, _wire_gap, changed_behind, keep_count,
                     keeping_turns, plan_entry, plan_hash, refuse_unsaved)
from .user_edits import user_edit_fields

GLOB_CHARS = frozenset("*?[")
EXPAND_SLICE = 4096  # paths looked at between two yields while a glob or folder is expanded
NO_EFFECTS = ("restored", "droppedBeforeCrossing", "crossedUncompensated", "crossedCompensated",
              "wouldCrossOnRewind", "unrestored", "provablyEmpty")


def moment(state: SessionState, boundary: dict) -> tuple[int, dict, dict]:
    """(turns before the moment, images of the paths changed since it, their permission bits).
    A path not in the map still has its image now (`state.known`)."""
    keep = keep_count(state, boundary)  # validates the boundary; refuses while a turn runs
    images: dict = {}
    modes: dict = {}
    if boundary["kind"] == "afterResponse":  # the end of turn K: the edits saved after it go too
        for rel, (before, _after) in state.between.get(keep, {}).items():
            images[rel] = before
            modes[rel] = state.between_modes.get(keep, {}).get(rel)
    for rel, image in checkpoint(state, keep + 1).items():
        images.setdefault(rel, image)
    for rel, bits in checkpoint_modes(state, keep + 1).items():
        modes.setdefault(rel, bits)
    return keep, images, modes


def glob_regex(pattern: str) -> re.Pattern:
    """A workspace-relative glob as a regular expression over relative paths."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _spec_rel(ws, spec) -> tuple[str, bool]:
    """(workspace-relative path or glob, is a glob or a folder by its trailing slash). URIs are
    always literal paths."""
    if not isinstance(spec, str) or not spec:
        raise InvalidParams("paths must be a list of file URIs or workspace-relative paths and globs",
                            data={"field": "paths"})
    if spec.startswith("file:"):
        return ws.to_rel(spec), False
    if spec.strip("/") in ("", "."):
        return "", False  # the whole workspace
    glob = bool(GLOB_CHARS & set(spec)) or spec.endswith("/")
    return ws.to_rel(spec.rstrip("/")), glob


def expand_job(state: SessionState, ws, specs, images: dict, boundary: dict):
    """The paths a restore covers: (rels, gaps, createdSince). Raises `unknown-path` for a named file
    turnback has no image of at the boundary, and `no-match` for a folder or glob that held no file
    there. A job: it yields while it walks the known paths."""
    if not isinstance(specs, list) or not specs:
        raise InvalidParams("paths must be a non-empty list", data={"field": "paths"})
    where = boundary_words(boundary)
    chosen: dict[str, None] = {}
    gaps: list[Gap] = []
    created: set[str] = set()
    for spec in specs:
        rel, glob = _spec_rel(ws, spec)
        image = images.get(rel, state.known.get(rel)) if rel else None
        if not glob and rel and (is_digest(image) or not _is_folder(state, images, rel)):
            if image is None:
                raise UnknownPath(f"turnback has no image of {rel!r} {where}: it never saw that "
                                  "path", data={"path": rel, "uri": ws.to_uri(rel)})
            if image == UNKNOWN:
                raise UnknownPath(f"turnback does not know what {rel!r} held {where} (it never "
                                  "saw the file before it changed)", data={"path": rel,
                                                                           "uri": ws.to_uri(rel)})
            chosen[rel] = None
            continue
        match = glob_regex(rel).match if glob and GLOB_CHARS & set(rel) else _under(rel)
        found = 0
        for i, (path, at) in enumerate(_boundary_items(state, images)):
            if i and i % EXPAND_SLICE == 0:
                yield ("expand", i)
            if not match(path):
                continue
            if is_digest(at):
                chosen[path] = None
                found += 1
            elif at == UNKNOWN:
                gaps.append(Gap(path, "unknown-before-image", None,
                                f"turnback does not know what this file held {where}"))
            elif is_digest(state.known.get(path)):
                created.add(path)  # created since the boundary: a folder or glob leaves it alone
        if not found:
            what = "glob" if GLOB_CHARS & set(rel) else ("workspace" if not rel else "folder")
            raise NoMatch(f"the {what} {spec!r} matches no file that existed {where}",
                          data={"path": spec, "boundary": boundary})
    return list(chosen), gaps, sorted(created - set(chosen))


def _folders_to_make(state: SessionState, images: dict, rels) -> set[str]:
    """The folders a restore brings back with its files: each folder above a restored file that the
    boundary had and the session does not know now, or knows but the disk may have lost (the plan
    checks the disk: one already there is left out). Recorded like the files (model/images.py), so a
    Redo or rewind after the restore removes them again (issue 43, D: they were made unrecorded and
    stayed behind, empty; seed 7231: the user had removed a known folder, uncaptured)."""
    out = set()
    for rel in rels:
        if not is_digest(images.get(rel, state.known.get(rel))):
            continue
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            key = "/".join(parts[:i]) + "/"
            if images.get(key, state.known.get(key)) == FOLDER:
                out.add(key)
    return out


def _under(folder: str):
    prefix = folder + "/" if folder else ""
    return lambda path: path.startswith(prefix)


def _is_folder(state: SessionState, images: dict, rel: str) -> bool:
    prefix = rel + "/"
    return any(p.startswith(prefix) for p in images) or any(p.startswith(prefix) for p in state.known)


def _boundary_items(state: SessionState, images: dict):
    """Every path turnback knows, with its image at the boundary."""
    for rel, now in state.known.items():
        yield rel, images.get(rel, now)
    for rel, at in images.items():
        if rel not in state.known:
            yield rel, at


def derive_restore(state, ws, objects, specs, boundary, *, max_bytes: int, dirty=()) -> Derived:
    return drain(derive_restore_job(state, ws, objects, specs, boundary, max_bytes=max_bytes,
                                    dirty=dirty))


def derive_restore_job(state: SessionState, ws, objects, specs, boundary: dict, *, max_bytes: int,
                       dirty=(), memo=None):
    """The candidate of a restore of `specs` to `boundary`, and the state it commits (`memo`: the
    disk images hashed before, travel/diskmemo.py)."""
    keep, images, at_modes = moment(state, boundary)
    rels, gaps, created = yield from expand_job(state, ws, specs, images, boundary)
    folders = _folders_to_make(state, images, rels)
    rels = sorted(set(rels) | folders)
    on_disk = yield from disk_images_job(ws, rels, objects.hasher, max_bytes=max_bytes, memo=memo)
    first_loose = keep if boundary["kind"] == "afterResponse" else keep + 1
    loose = _loose_changes(state, first_loose)
    files, changes, modes = [], [], {}
    for rel in rels:
        to = images.get(rel, state.known.get(rel))
        want = at_modes.get(rel) if rel in images else state.known.mode(rel)
        now, problem = on_disk[rel]
        if problem is not None and cleared_by_plan(rel, problem, {rel: to}, on_disk):
            now, problem = ABSENT, None  # what the boundary lacked is absent already
        if problem is not None:
            gaps.append(disk_gap(rel, problem))
            files.append(_file(ws, rel, "unchanged", None, to, False, mode=None))
            continue
        external = changed_behind(state, ws, rel, now)
        action = plan_entry(ws, rel, to, now, want, changes, modes)
        if rel in folders and action == "unchanged":
            continue  # a folder already there: nothing to say
        files.append(_file(ws, rel, action, now, to, external, mode=want if to != ABSENT else None,
                           **user_edit_fields(action, external, loose.get(rel, False))))
    refuse_unsaved(ws, files, dirty)
    gaps = _unique(gaps)
    rebuild, consequences = keeping_turns(
        state, ws, objects, changes, modes, max_bytes,
        record={"operation": "restore", "mode": None, "boundary": boundary})
    n = state.turn_count
    candidate = {
        "operation": "restore", "mode": "files",
        "paths": list(specs),
        "keep": {"turnCount": n, "last": {"turn": n, "prompt": state.turns[-1].prompt} if n else None},
        "discard": {"turnCount": 0, "first": None},
        "boundary": boundary,
        "files": files,
        "createdSince": [ws.to_uri(rel) for rel in created],
        "gaps": [_wire_gap(ws, g) for g in gaps],
        "effects": {name: [] for name in NO_EFFECTS},
        "directives": consequences,
        "workflowCleared": {name: 0 for name in WORKFLOW_LISTS},
    }
    if not changes:
        candidate["noop"] = True
    candidate["planHash"] = plan_hash(objects.hasher, candidate)
    candidate["summary"] = restore_summary(candidate)
    return Derived(candidate, rebuild(changes), changes, modes, rebuild=rebuild)


def _gap_name(uri: str) -> str:
    """A gap's path by its last name (a folder's too: `p/` is `p`)."""
    return uri.rstrip("/").rsplit("/", 1)[-1] or uri


def restore_summary(c: dict) -> str:
    where = boundary_words(c["boundary"])
    if c.get("noop") and c["gaps"]:  # what stands in the way stays (docs/rewind.md, "Restore")
        said = "; ".join(f"{_gap_name(g['uri'])}: {g.get('words') or g['reason']}"
                         for g in c["gaps"][:5])
        return (f"Nothing restored: {len(c['gaps'])} path(s) cannot be put back to how they were "
                f"{where} ({said}). Every turn and the conversation stay.")
    if c.get("noop"):
        return (f"Nothing to restore: every file named already is as it was {where}. Every turn "
                "and the conversation stay.")
    parts = [f"Restores the files named to how they were {where}; keeps every turn "
             f"({c['keep']['turnCount']}) and the conversation."]
    parts.extend(file_sentences(c, "no turn since then"))
    if c.get("createdSince"):
        parts.append(f"{len(c['createdSince'])} file(s) created there since are left as they are "
                     "(name them to delete them).")
    return " ".join(parts)
