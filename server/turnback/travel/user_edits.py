"""The user's own edits in a rewind or redo plan: flagged, named, merged onto the restored image, and
kept on request.

A *user edit* is a change a rewind or redo would undo that no discarded turn made: an edit saved
between turns, a change a watcher or a sweep saw outside any turn, or a change on disk turnback has not
captured yet (`externalChange`). It is flagged whether or not it was captured, because a captured edit
is no less the user's.

`keepUserEdits` on a rewind commit carries each such change onto the image the rewind restores: a
three-way merge (merge3, the line merge of Breezy, pure Python) whose base is the image the user started
from, "mine" the image the user made, and the other side the restored image. When the discarded turns
never touched the file, that leaves it exactly as it is now. Where the user and a discarded turn
changed the same lines, the merge is a *conflict*: the file is left as it is now and the plan says so,
unless the commit asks for conflict markers (`conflictMarkers`), which are then written where the
changes met. Binary files, and files whose starting image turnback never saw, are kept whole, as they
are now, and the plan says so. A redo plan has no merge entries: there, keeping leaves the file as it is.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

from ..diffs.text import MAX_DIFF_BYTES, is_text
from ..model.images import ABSENT, UNKNOWN, is_digest, is_folder_key
from ..store.objects.interfaces import ObjectReader
from .filestate import keep_as_they_are


# Who made a change between turns (the capture source), in the contract's words, and in a person's.
USER_EDIT_BY = {"save": "editor-save", "watch": "disk-change", "sweep": "disk-change",
                "hook": "capture-request", "restore": "restore", "kept": "kept-on-rewind"}
USER_EDIT_WORDS = {"editor-save": "saved in the editor", "disk-change": "changed on disk",
                   "capture-request": "captured between turns", "uncaptured": "changed on disk, "
                   "not captured yet", "restore": "put back by turnback restore",
                   "kept-on-rewind": "kept by a conversation-only rewind"}

# FilePlan.merge.result: what keeping the user's edits does to one file.
MERGE_RESULTS = ("yours", "merged", "conflict", "binary", "unmergeable")
MARKER_MINE, MARKER_RESTORED = "your edit", "as restored"


@dataclass
class MergeOutcome:
    """The three-way merge of one file's user edits onto its restored image."""
    result: str  # one of MERGE_RESULTS
    data: bytes | None = None  # the bytes to write (merged, or with markers); None: absent
    marked: bytes | None = None  # the conflict version with markers, for `conflictMarkers`
    regions: list[dict] = field(default_factory=list)  # conflicts: {line, lines} in `marked`
    why: str = ""
    objects: object = None  # the object store the written image goes into, at commit


def user_edit_fields(action: str, external: bool, loose_by: str | None | bool = False) -> dict:
    """`userEdit` (and `userEditBy` when known) for one FilePlan entry.

    `loose_by` is False when no change between turns touched the path, else the capture source of the
    latest one (None when unknown)."""
    if action == "unchanged":
        return {"userEdit": False}
    if external:
        return {"userEdit": True, "userEditBy": "uncaptured"}
    if loose_by is False or loose_by == "restore":
        # turnback's own restore is not the user's edit: the next plan undoes it unflagged
        return {"userEdit": False}
    out = {"userEdit": True}
    if loose_by in USER_EDIT_BY:
        out["userEditBy"] = USER_EDIT_BY[loose_by]
    return out


def kept_paths(files: list[dict]) -> list[str]:
    return [f["path"] for f in files if f.get("userEdit") and f.get("action") != "unchanged"]


# -- planning the merges (prepare and commit both) ----------------------------------------------------
def merge_plan_job(state, ws, objects, files: list[dict], keep: int, *, read_disk, max_bytes: int):
    """Annotate every user-edited entry of a rewind's `files` with `merge` (what keeping the edits
    does to it) and return {rel: MergeOutcome}. A job: it yields after each file it merges.

    `keep` is the surviving turn count; `read_disk(rel)` returns the file's bytes now (None when
    absent), used only for a change turnback has not captured yet."""
    outcomes: dict[str, MergeOutcome] = {}
    for f in files:
        if not f.get("userEdit") or f.get("action") == "unchanged" or is_folder_key(f["path"]):
            continue  # (a folder has no bytes to merge: keeping one is keeping it as it is)
        rel = f["path"]
        segments = _user_segments(state, keep, rel)
        if f.get("externalChange"):
            segments.append((state.known.get(rel), "disk"))
        outcome = yield from _off_the_loop(_merge_segments, objects, segments, f["to"], f["from"],
                                           lambda rel=rel: read_disk(rel))
        outcome.objects = objects
        outcomes[rel] = outcome
        f["merge"] = _wire(outcome, _turns_that_changed(state, keep, rel))
        yield ("merge", rel)
    return outcomes


_POOL = None  # one worker thread for merges, made on first use


def _off_the_loop(fn, *args):
    """Run fn(*args) in a worker thread, yielding while it runs: a line merge of a long file takes
    tens of milliseconds, and a server advances this job on its event loop in slices of about 10 ms.
    Each wait gives the thread the GIL for a moment, then yields to the loop."""
    global _POOL
    import concurrent.futures

    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnback-merge")
    future = _POOL.submit(fn, *args)
    while True:
        try:
            return future.result(timeout=0.002)
        except concurrent.futures.TimeoutError:
            yield ("merging",)


def _user_segments(state, keep: int, rel: str) -> list[tuple]:
    """The user's changes to rel from the start of turn keep+1 on, oldest first: (before, after)."""
    return [state.between[k][rel] for k in range(keep + 1, state.turn_count + 1)
            if rel in state.between.get(k, {})]


def _turns_that_changed(state, keep: int, rel: str) -> list[int]:
    return [t.n for t in state.turns[keep:] if rel in t.files
            and t.files[rel].before != t.files[rel].after]


def _merge_segments(objects, segments, target, now_image, read_disk) -> MergeOutcome:
    """Carry each user change (base -> mine) onto the result so far, starting at the target image;
    `now_image` is the file's image on disk now (what "as it is now" means)."""
    try:
        out = _bytes(objects, target)
        pairs = [(_bytes(objects, b), read_disk() if a == "disk" else _bytes(objects, a))
                 for b, a in segments]
    except _Unknown as exc:
        return MergeOutcome("unmergeable", why=str(exc))
    regions, why = [], ""
    for base, mine in pairs:
        if any(x is not None and len(x) > MAX_DIFF_BYTES for x in (base, mine, out)):
            return MergeOutcome("unmergeable", why="too large to merge line by line")
        step = merge3_images(base, mine, out)
        if step.result == "binary":
            return step
        if step.result == "conflict":
            regions, why = regions + step.regions, step.why
        out = step.data
    if regions:
        return MergeOutcome("conflict", marked=out, regions=regions, why=why)
    same = (out is None and now_image == ABSENT) or (
        out is not None and is_digest(now_image) and objects.hasher.digest(out) == now_image)
    return MergeOutcome("yours" if same else "merged", data=out)


class _Unknown(Exception):
    pass


def _bytes(objects: ObjectReader, image) -> bytes | None:
    if image == ABSENT:
        return None
    if not is_digest(image):
        raise _Unknown("turnback never saw the file's starting image")
    return objects.get(image)


def merge3_images(base: bytes | None, mine: bytes | None, other: bytes | None) -> MergeOutcome:
    """The user's change base -> mine carried onto `other` (None is an absent file). The result is
    `clean` (data: the merged bytes), `conflict` (data: the bytes with conflict markers, regions:
    where) or `binary`."""
    if mine == base or mine == other:
        return MergeOutcome("clean", data=other)
    if other == base:
        return MergeOutcome("clean", data=mine)
    if not all(is_text(x) for x in (base, mine, other)):
        return MergeOutcome("binary", why="not a text file: kept whole, as it is now")
    if None in (base, mine, other):
        what = ("you deleted the file and the restored version differs" if mine is None
                else "the rewind removes a file you edited" if other is None
                else "you and a discarded turn both created it")
        return MergeOutcome("conflict", data=_whole_conflict(mine, other),
                            regions=[{"line": 1, "lines": 0}], why=what)
    import merge3  # imported here: only a keep with a real merge pays for it

    a, b, o = (x.decode("utf-8").splitlines(keepends=True) for x in (base, mine, other))
    m = merge3.Merge3(a, b, o)
    regions, line = [], 1
    for group in m.merge_groups():
        if group[0] == "conflict":
            size = len(group[2]) + len(group[3]) + 3
            regions.append({"line": line, "lines": size})
            line += size
        else:
            line += len(group[1])
    if not regions:
        return MergeOutcome("clean", data="".join(m.merge_lines()).encode("utf-8"))
    text = "".join(m.merge_lines(name_a=MARKER_MINE, name_b=MARKER_RESTORED))
    return MergeOutcome("conflict", data=text.encode("utf-8"), regions=regions,
                        why=f"your edit and a discarded turn changed the same lines "
                            f"({len(regions)} place{'s' if len(regions) != 1 else ''})")


def _whole_conflict(mine: bytes | None, other: bytes | None) -> bytes:
    def body(x):
        text = (x or b"").decode("utf-8")
        return text if not text or text.endswith("\n") else text + "\n"
    return (f"<<<<<<< {MARKER_MINE}\n{body(mine)}=======\n{body(other)}>>>>>>> {MARKER_RESTORED}\n"
            .encode("utf-8"))


def _wire(o: MergeOutcome, turns: list[int]) -> dict:
    out = {"result": o.result, "alsoChangedBy": turns}
    if o.result == "merged":
        out["image"] = ABSENT if o.data is None else o.objects.hasher.digest(o.data)
    if o.result == "conflict":
        out["conflicts"] = len(o.regions)
        out["regions"] = o.regions
    if o.why:
        out["detail"] = o.why
    return out


def keep_words(f: dict) -> str:
    """What keeping the user's edits does to one file, in words (for summaries and renderers)."""
    m = f.get("merge") or {}
    turns = m.get("alsoChangedBy") or []
    by = ("turn " if len(turns) == 1 else "turns ") + ", ".join(map(str, turns))
    return {
        "yours": "stays as you left it",
        "merged": f"your edit is carried onto the restored file ({by} changed it too)",
        "conflict": f"conflict with {by}: left as it is now (or with conflict markers, if you ask)",
        "binary": "not a text file: kept whole, as it is now",
        "unmergeable": f"kept as it is now ({m.get('detail') or 'it cannot be merged'})",
    }.get(m.get("result"), "stays as it is now")


# -- committing with the user's edits kept -------------------------------------------------------------
def _written(derived, edited: set[str], markers: bool) -> dict[str, str]:
    """The user-edited files the commit writes anew, rel -> image (stored now: the commit is under
    way): a clean merge, or a conflict with its markers when `markers`. The rest stay as they are."""
    merges: dict = getattr(derived, "merges", None) or {}
    written: dict[str, str] = {}
    for rel in sorted(edited):
        o = merges.get(rel)
        if o is not None and o.result == "merged":
            data = o.data
        elif o is not None and o.result == "conflict" and markers:
            data = o.marked
        else:
            continue  # stays as it is now
        written[rel] = ABSENT if data is None else o.objects.put(data)
    return written


def _report_on(clone, derived, edited: set[str], written: dict[str, str]):
    merges: dict = getattr(derived, "merges", None) or {}
    clone.kept = sorted(edited - set(written))
    clone.merged = sorted(r for r in written if merges[r].result == "merged")
    clone.marked = sorted(r for r in written if merges[r].result == "conflict")
    clone.conflicts = sorted(r for r in edited - set(written)
                             if r in merges and merges[r].result == "conflict")
    return clone


def keep_user_edits(derived, state, *, markers: bool = False):
    """A copy of a derived rewind (or redo plan) that keeps every user edit.

    A file with a clean merge gets the merged image; a conflict gets its conflict-marker version when
    `markers`, else it stays as it is now, as do binary and unmergeable files and every user-edited
    file of a redo plan. What stays is not written; the new state remembers each kept or merged file
    as a change between turns (nobody's turn made it, travel/filestate.py), named for who made it, so
    a later rewind to an earlier boundary still lists it as the user's."""
    files = derived.candidate["files"] if hasattr(derived, "candidate") else derived.result["files"]
    edited = set(kept_paths(files))
    if not edited:
        return derived
    written = _written(derived, edited, markers)
    clone = copy.copy(derived)
    clone.changes = [(rel, written.get(rel, to)) for rel, to in derived.changes
                     if rel not in edited or rel in written]
    holding = _folders_holding(clone.changes, files, edited, written)
    clone.changes = [(rel, to) for rel, to in clone.changes if rel not in holding]
    new = copy.deepcopy(derived.new_state)
    keep_as_they_are(new, state, sorted(edited | holding), images=written)
    for rel in edited:
        by = _latest_by(state, rel)
        if (new.turn_count, rel) in new.between_by or by is None:
            continue
        if rel in new.between.get(new.turn_count, {}):
            new.between_by[(new.turn_count, rel)] = by
    modes = dict(getattr(derived, "modes", {}) or {})
    for rel, image in written.items():
        bits = merged_bits(state, files, rel, keep=new.turn_count)
        if image != ABSENT and bits is not None:
            modes[(rel, image)] = bits
            new.known.set_mode(rel, bits)
    clone.new_state = new
    clone.modes = modes
    return _report_on(clone, derived, edited, written)


def keep_in_rebuild(derived, state, *, markers: bool = False):
    """`keep_user_edits` for a plan that keeps every turn (a files-only rewind, a restore): the kept
    files are left out of the restore, the merged ones restored to their merge, and the new state
    rebuilt for exactly those changes."""
    files = derived.candidate["files"]
    edited = set(kept_paths(files))
    if not edited:
        return derived
    written = _written(derived, edited, markers)
    chosen = [(rel, written.get(rel, to)) for rel, to in derived.changes
              if rel not in edited or rel in written]
    holding = _folders_holding(chosen, files, edited, written)
    chosen = [(rel, to) for rel, to in chosen if rel not in holding]
    new = derived.rebuild(chosen)
    # The rebuild records every written file as turnback's restore, which the next plan undoes
    # unflagged; a merge carries the user's edit, so it is named for who made that edit (seed 7102).
    external = {f["path"] for f in files if f.get("externalChange")}
    for rel in written:
        by = "sweep" if rel in external else _latest_by(state, rel)
        if by is None:
            new.between_by.pop((new.turn_count, rel), None)
        else:
            new.between_by[(new.turn_count, rel)] = by
    clone = dataclasses.replace(derived, changes=chosen, new_state=new)
    return _report_on(clone, derived, edited, written)


def _folders_holding(changes, files: list[dict], edited: set[str], written: dict) -> set[str]:
    """The folder removals of `changes` that a kept file would stop: a file kept as it is (or
    merged) stays in its folder, so that folder stays too (issue 43, B: the removal failed with
    "Directory not empty" and the whole rewind rolled back)."""
    now = {f["path"]: f.get("from") for f in files}
    staying = [rel for rel in edited
               if (written[rel] if rel in written else now.get(rel)) not in (ABSENT, None)]
    return {rel for rel, to in changes if to == ABSENT and is_folder_key(rel)
            and any(path.startswith(rel) for path in staying)}


def merged_bits(state, files: list[dict], rel: str, *, keep: int) -> int | None:
    """The permission bits of a merged file: the user's, when the user changed them, else the
    restored image's (the plan's `mode`). A three-way choice like the bytes' (issue 43, C: the
    merge took the bits turnback last captured, a discarded turn's)."""
    f = next((f for f in files if f["path"] == rel), {})
    target, mine = f.get("mode"), f.get("fromMode")
    base = state.known.mode(rel)
    for k in range(keep + 1, state.turn_count + 1):
        if rel in state.between.get(k, {}):
            base = state.between_modes.get(k, {}).get(rel)
            break
    if mine is not None and base is not None and mine != base:
        return mine
    return target if target is not None else mine


def _latest_by(state, rel: str) -> str | None:
    for k in range(state.turn_count, -1, -1):
        if rel in state.between.get(k, {}):
            return state.between_by.get((k, rel))
    return None


def kept_report(clone, to_uri) -> dict:
    """The commit result's lists of what keeping the user's edits did (only the non-empty ones);
    `clone` is the plan that kept them, or a plain list of the paths left as they are."""
    if isinstance(clone, (list, tuple)):
        return {"kept": [to_uri(rel) for rel in clone]} if clone else {}
    out = {}
    for key, attr in (("kept", "kept"), ("merged", "merged"), ("conflictMarkers", "marked"),
                      ("conflicts", "conflicts")):
        rels = getattr(clone, attr, None) or []
        if rels:
            out[key] = [to_uri(rel) for rel in rels]
    return out


__all__ = ["USER_EDIT_WORDS", "MERGE_RESULTS", "MergeOutcome", "user_edit_fields", "kept_paths",
           "merge_plan_job", "merge3_images", "keep_words", "keep_user_edits", "keep_in_rebuild",
           "kept_report", "UNKNOWN"]
