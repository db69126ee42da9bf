"""The one derivation from a boundary to a candidate state.

Confirmation (prepare) and commit both call `derive`; commit compares the plan hash, so what the user
approved is exactly what happens. The candidate fixes: the surviving turn count and transcript cutoff,
the activity pruned with the discarded turns, the file plan (and which files were changed behind our
back), every known gap, the effect partition, directive consequences, workflow ownership to clear, and
a readable summary. The new session state is derived alongside it.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass
from typing import Callable

import cbor2

from ..directives import rules as directive_rules
from ..effects.partition import partition
from ..effects.words import describe, effect_words
from ..errors import InvalidParams, TurnRunning, UnknownTurn, UnsavedChanges
from ..model.gaps import Gap, disk_gap
from ..model.images import ABSENT, UNKNOWN, is_digest
from ..model.session import WORKFLOW_LISTS, SessionState, clone
from ..store.objects.interfaces import ObjectReader
from ..timeline.checkpoints import changes_from, checkpoint, checkpoint_modes
from .disk import current_mode, disk_images_job, drain, read_bytes, read_text
from .filestate import files_changed_state, keep_as_they_are, left_behind
from .folders import cleared_by_plan, keep_full_folders
from .plan_words import summary
from .user_edits import keep_in_rebuild, keep_user_edits, merge_plan_job, user_edit_fields

FILE_STEPS = ("file-write", "file-delete", "file-move")


@dataclass
class Derived:
    candidate: dict  # the contract's Candidate
    new_state: SessionState
    changes: list[tuple[str, str]]  # (rel, target image) for every file the commit writes or deletes
    # (rel, target image) -> the permission bits to write it with (the transaction reads the
    # backups' own bits from disk, for a rollback)
    modes: dict = dataclasses.field(default_factory=dict)
    # rel -> user_edits.MergeOutcome: what keeping the user's edits writes (travel/user_edits.py)
    merges: dict = dataclasses.field(default_factory=dict)
    # For plans that keep every turn (a files-only rewind, a restore): the new state for a chosen
    # subset of `changes`, so keeping the user's edits leaves them out of the restore altogether.
    rebuild: Callable | None = None
    kept: list = dataclasses.field(default_factory=list)  # user edits left as they are (keepUserEdits)

    @property
    def noop(self) -> bool:
        return bool(self.candidate.get("noop"))

    def keeping_user_edits(self, state: SessionState, *, markers: bool = False) -> "Derived":
        """The same plan with the user's edits carried onto it (`keepUserEdits`): merged where a
        three-way merge is clean, left as they are otherwise (conflicts with markers, when
        `markers`, that is `conflictMarkers`)."""
        if self.rebuild is None:
            return keep_user_edits(self, state, markers=markers)
        return keep_in_rebuild(self, state, markers=markers)


def keep_count(state: SessionState, boundary: dict) -> int:
    """How many turns survive a boundary (validated against the session)."""
    if not isinstance(boundary, dict):
        raise InvalidParams("boundary must be an object")
    kind = boundary.get("kind")
    n = boundary.get("turn")
    if kind not in ("afterResponse", "beforePrompt", "beforeDirectiveAttempt"):
        raise InvalidParams("boundary.kind must be afterResponse, beforePrompt or "
                            "beforeDirectiveAttempt", data={"field": "boundary.kind"})
    if not isinstance(n, int) or isinstance(n, bool):
        raise InvalidParams("boundary.turn must be an integer", data={"field": "boundary.turn"})
    turn = state.turn(n)
    if turn is None:
        raise UnknownTurn(f"there is no turn {n}; the session has {state.turn_count}",
                          data={"turn": n})
    if state.running is not None:
        raise TurnRunning(f"turn {state.running.n} is still running; settle or cancel it before "
                          "rewinding", data={"turn": state.running.n})
    if kind == "afterResponse":
        return n
    if kind == "beforeDirectiveAttempt":
        did = boundary.get("directiveId")
        if turn.directive_id is None or turn.directive_id != did:
            raise InvalidParams(f"turn {n} is not an attempt at directive {did!r}",
                                data={"turn": n, "directiveId": did})
    return n - 1


MODES = ("all", "files", "conversation")  # what a rewind puts back: both, the files, the conversation
# Gaps that concern the conversation when no file is touched (a conversation-only rewind).
CONVERSATION_GAPS = ("step-scope-unknown",)


def derive(state: SessionState, ws, objects, boundary: dict, *, max_bytes: int, **kw) -> Derived:
    return drain(derive_job(state, ws, objects, boundary, max_bytes=max_bytes, **kw))


def derive_job(state: SessionState, ws, objects, boundary: dict, *, max_bytes: int,
               mode: str = "all", dirty=(), uncaptured=(), memo=None):
    """`derive` as a job: it yields while it hashes the files on disk (the only slow part).

    `mode` is what the rewind puts back (docs/rewind.md, "Code only, conversation only"): `all`, the
    `files` alone (every turn stays), or the `conversation` alone (every file stays, listed `kept`).
    `dirty` names paths with unsaved changes in an editor: a plan that would write one is refused.
    `uncaptured` names paths whose disk differs from their last known image (travel/uncaptured.py):
    with no recorded change since the boundary, the boundary's image is that last known one.
    `memo`: the disk images hashed before (travel/diskmemo.py), reused while nothing touched them."""
    if mode not in MODES:
        raise InvalidParams("mode must be all, files or conversation", data={"field": "mode"})
    keep = keep_count(state, boundary)
    discarded = state.turns[keep:]
    target = checkpoint(state, keep + 1)  # C(keep+1): the files as they were when turn keep ended
    target_modes = checkpoint_modes(state, keep + 1)
    for rel in uncaptured if keep < state.turn_count else ():  # C(last+1) is the disk itself
        if rel not in target:
            target[rel] = state.known.get(rel)
            target_modes[rel] = state.known.mode(rel)
    modes: dict = {}
    on_disk = yield from disk_images_job(ws, sorted(target), objects.hasher, max_bytes=max_bytes,
                                         memo=memo)
    loose = _loose_changes(state, keep + 1)
    transients = _transients(state, keep + 1)
    gaps: list[Gap] = []
    files, changes = [], []
    unreachable: set[str] = set()
    for rel in sorted(target):
        to = target[rel]
        now, problem = on_disk[rel]
        if problem is not None and cleared_by_plan(rel, problem, target, on_disk):
            now, problem = ABSENT, None
        if problem is not None:
            unreachable.add(rel)
            gaps.append(disk_gap(rel, problem))
            files.append(_file(ws, rel, "unchanged", None, to, False))
            continue
        external = changed_behind(state, ws, rel, now)
        if to in (UNKNOWN, None):
            first = _first_turn(state, keep + 1, rel)
            gaps.append(Gap(rel, "unknown-before-image", first, _unknown_why(state, first, rel)))
            files.append(_file(ws, rel, "unchanged", now, to, external))
            continue
        action = plan_entry(ws, rel, to, now, target_modes.get(rel), changes, modes)
        if action == "unchanged" and rel in transients:
            continue  # created and removed inside a turn: a transient, nothing to do
        files.append(_file(ws, rel, action, now, to, external,
                           **user_edit_fields(action, external, loose.get(rel, False))))

    unreachable |= keep_full_folders(ws, changes, files, gaps)  # a folder is removed only if empty
    merges = yield from merge_plan_job(
        state, ws, objects, files, keep, max_bytes=max_bytes,
        read_disk=lambda rel: read_bytes(ws, rel, max_bytes=max_bytes))

    for turn in discarded:
        gaps.extend(g for g in turn.gaps if g.reason != "unknown-before-image" or g.rel not in target)
    gaps.extend(g for g in state.live_gaps.values() if g.turn is None or g.turn <= keep)
    if os.path.isdir(ws.root / ".git"):
        gaps.append(Gap("", "git-head-and-index"))  # its words say all; a detail would repeat them
    gaps = _unique(gaps)
    for f in files:
        f["mode"] = target_modes.get(f["path"]) if f["to"] != ABSENT else None
    settled_target = {rel: to for rel, to in target.items() if rel not in unreachable}

    if mode == "conversation":  # every file stays as it is now: listed, never written
        files = [dict(f, action="kept", userEdit=False) for f in files
                 if f["action"] in ("restore", "delete")]
        for f in files:
            f.pop("userEditBy", None)
            f.pop("merge", None)  # nothing is written: there is nothing to merge
        changes, modes = [], {}
        gaps = [g for g in gaps if g.reason in CONVERSATION_GAPS]
    refuse_unsaved(ws, files, dirty)
    effects = tail_effects(state, keep, {} if mode == "conversation" else target, gaps)
    steps = describe([s for t in state.turns[keep:] for s in t.steps], effects)  # in words
    workflow = {name: len(state.workflow.get(name, [])) for name in WORKFLOW_LISTS}
    rebuild = None
    if mode == "files":  # every turn stays; the restored files are a change between turns
        discarded, workflow = [], {name: 0 for name in WORKFLOW_LISTS}
        rebuild, consequences = keeping_turns(
            state, ws, objects, changes, modes, max_bytes,
            record={"operation": "rewind", "mode": "files", "boundary": boundary})
        new_state = rebuild(changes)
    else:
        written = {} if mode == "conversation" else target  # the text each directive's file will hold
        directives, consequences = directives_after(state, ws, objects, written, max_bytes,
                                                    discard_from=keep + 1)
        new_state = _new_state(state, keep, settled_target, directives)
        for rel in settled_target:
            if target.get(rel) not in (UNKNOWN, None, ABSENT) and target_modes.get(rel) is not None:
                new_state.known.set_mode(rel, target_modes[rel])
        if mode == "conversation":  # the full rewind's state, with every file left as it is now
            keep_as_they_are(new_state, state, [f["path"] for f in files], by="kept")
        else:  # what the plan could not put back is a change after the last kept turn
            left_behind(new_state, state, target, target_modes, sorted(unreachable))
    kept_turns = state.turn_count if mode == "files" else keep
    candidate = {
        "mode": mode,
        "keep": {"turnCount": kept_turns,
                 "last": ({"turn": kept_turns, "prompt": state.turns[kept_turns - 1].prompt}
                          if kept_turns else None)},
        "discard": {"turnCount": len(discarded),
                    "first": ({"turn": keep + 1, "prompt": discarded[0].prompt} if discarded else None)},
        "boundary": boundary,
        "files": files,
        "gaps": [_wire_gap(ws, g) for g in gaps],
        "effects": effects,
        "steps": steps,  # each discarded step in words, with its bucket (effects/words.py)
        "directives": consequences,
        "workflowCleared": workflow,
    }
    if (not changes) if mode == "files" else (not discarded):
        # The boundary is the current state (or, for files alone, every file already is as it was
        # there): nothing to rewind, no confirmation, no epoch.
        candidate["files"] = []
        candidate["noop"] = True
    candidate["planHash"] = plan_hash(objects.hasher, candidate)
    candidate["summary"] = summary(candidate)
    candidate["effectWords"] = effect_words()  # words, not plan: outside the hash like the summary
    return Derived(candidate, new_state, changes, modes, merges, rebuild=rebuild)


def plan_entry(ws, rel: str, to, now, want, changes: list, modes: dict) -> str:
    """`unchanged` when the disk already holds `to` with the bits `want` (None: any bits), else
    `restore` or `delete`, with the change (and the bits to write) added to the plan."""
    if to == now and (to == ABSENT or want is None or want == current_mode(ws, rel)):
        return "unchanged"
    changes.append((rel, to))
    if want is not None and to != ABSENT:
        modes[(rel, to)] = want
    return "delete" if to == ABSENT else "restore"


def refuse_unsaved(ws, files: list[dict], dirty) -> None:
    """A plan that would write or delete a file the editor holds unsaved changes of is refused before
    anything is written: the buffer would silently disagree with the disk (docs/rewind.md)."""
    dirty = set(dirty or ())
    hit = [f["path"] for f in files if f["action"] in ("restore", "delete") and f["path"] in dirty]
    if hit:
        raise UnsavedChanges(
            f"{', '.join(hit)} {'has' if len(hit) == 1 else 'have'} unsaved changes in the editor; "
            "save or revert them first, nothing was changed", data={"uris": [ws.to_uri(r) for r in hit]})


def keeping_turns(state: SessionState, ws, objects, changes, modes: dict, max_bytes: int, *,
                  record: dict):
    """For a plan that keeps every turn (a files-only rewind, a restore): (the new state for a
    chosen subset of `changes`, the directive consequences of all of them)."""
    def rebuild(chosen):
        directives, _ = directives_after(state, ws, objects, dict(chosen), max_bytes,
                                         discard_from=state.turn_count + 1)
        return files_changed_state(state, chosen, modes, record=record, directives=directives)

    _, consequences = directives_after(state, ws, objects, dict(changes), max_bytes,
                                       discard_from=state.turn_count + 1)
    return rebuild, consequences


def directives_after(state: SessionState, ws, objects, target: dict, max_bytes: int, *,
                     discard_from: int):
    """The directives (and the consequences to show) after a plan that writes `target` and discards
    the attempts of turns >= `discard_from`; anchors are reattached against the text each file will
    hold."""
    texts = {}
    for d in state.directives.values():
        if d.rel not in texts:
            texts[d.rel] = _text_after(ws, objects, d.rel, target, max_bytes)
    return directive_rules.prune_for_rewind(state.directives, discard_from_turn=discard_from,
                                            texts=texts)


# Gaps that stop the file restore from putting a path back.
BLOCKING_GAPS = ("symlink", "unreadable", "too-large", "not-a-file", "git-internal")


def tail_effects(state: SessionState, keep: int, target: dict, gaps) -> dict:
    """The effect partition of every step above turn `keep`, given the file plan's target images
    and the known gaps. Rewind, fork and the offline `compare` all call this one function."""
    steps = [s for t in state.turns[keep:] for s in t.steps]
    restorable_paths = {rel for rel, to in target.items() if to not in (UNKNOWN, None)} - \
        {g.rel for g in gaps if g.reason in BLOCKING_GAPS}
    blocked_turns = {g.turn for g in gaps if g.reason in BLOCKING_GAPS}

    def restorable(s) -> bool:
        if s.kind == "shell":  # what the sweeps saw its turn change, and what it names
            turn = state.turn(s.turn)
            paths = set(s.rels) | set(turn.files if turn else ())
            return s.turn not in blocked_turns and all(r in restorable_paths for r in paths)
        return bool(s.rels) and all(r in restorable_paths for r in s.rels)

    return partition(
        steps, log=[s for t in state.turns[:keep] for s in t.steps], restorable=restorable,
        runs_inverse=lambda s: False)  # the only host inverse turnback runs is the file restore


def _transients(state: SessionState, n: int) -> set[str]:
    """Paths whose every recorded change since turn n began was absent -> absent: files created and
    removed inside one turn (a tool's scratch file). They were never there at any boundary."""
    seen: dict[str, bool] = {}
    for rel, before, after, _turn in changes_from(state, n):
        seen[rel] = seen.get(rel, True) and before == ABSENT and after == ABSENT
    return {rel for rel, yes in seen.items() if yes}


def _loose_changes(state: SessionState, n: int) -> dict[str, str | None]:
    """Paths changed between turns from the start of turn n on (no turn made those changes), with
    who made the latest of them when a capture source said (None when it did not)."""
    out: dict[str, str | None] = {}
    for k in range(n, state.turn_count + 1):
        for rel in state.between.get(k, {}):
            out[rel] = state.between_by.get((k, rel))
    return out


def plan_hash(hasher, candidate: dict) -> str:
    basis = {k: v for k, v in candidate.items() if k not in ("planHash", "summary", "effectWords")}
    return hasher.digest(cbor2.dumps(basis, canonical=True))


def _new_state(state: SessionState, keep: int, target: dict, directives) -> SessionState:
    new = clone(state)
    new.turns = new.turns[:keep]
    new.between = {k: v for k, v in new.between.items() if k <= keep}
    new.between_modes = {k: v for k, v in new.between_modes.items() if k <= keep}
    new.between_by = {key: by for key, by in new.between_by.items() if key[0] <= keep}
    for rel, to in target.items():
        if to not in (UNKNOWN, None):
            new.known[rel] = to
    new.directives = directives
    new.workflow = {name: [] for name in WORKFLOW_LISTS}
    new.agents = {k: a for k, a in new.agents.items() if a.turn <= keep}
    new.live_gaps = {k: g for k, g in new.live_gaps.items() if g.turn is None or g.turn <= keep}
    new.restores = [r for r in new.restores if r.get("afterTurn", 0) <= keep]
    new.epoch += 1
    new.fork_point = uuid.uuid4().hex
    return new


def _unknown_why(state: SessionState, turn: int | None, rel: str) -> str:
    """The capture's own words for an unknown before-image (say, a file that was ignored)."""
    recorded = state.turn(turn) if turn else None
    for g in (recorded.gaps if recorded else ()):
        if g.rel == rel and g.reason == "unknown-before-image" and g.detail:
            return g.detail
    return "turnback never saw this file before it changed"


def _first_turn(state: SessionState, n: int, rel: str) -> int | None:
    for t in state.turns[n - 1:]:
        if rel in t.files:
            return t.n
    return None


def _text_after(ws, objects: ObjectReader, rel: str, target: dict, max_bytes: int) -> str | None:
    """The text a directive's file will hold after the rewind: its target image, else the disk's."""
    image = target.get(rel)
    if image == ABSENT:
        return None
    if is_digest(image):
        try:
            return objects.get(image).decode("utf-8", "replace")
        except Exception:
            return None
    return read_text(ws, rel, max_bytes=max_bytes)


def changed_behind(state: SessionState, ws, rel: str, now) -> bool:
    """The disk differs from the image (or the permission bits) the session last knew: someone's
    change turnback has not captured, which the plan would overwrite."""
    known = state.known.get(rel)
    if known is None or known == UNKNOWN:
        return False
    if now != known:
        return True
    bits = state.known.mode(rel)
    return now != ABSENT and bits is not None and current_mode(ws, rel) != bits


def _file(ws, rel, action, now, to, external, *, userEdit=False, **more) -> dict:
    """One FilePlan entry; `fromMode` is the permission bits on disk now (a mode change alone shows
    as bits, not as a digest that stays the same)."""
    out = {"uri": ws.to_uri(rel), "path": rel, "action": action,
           "from": now, "to": to, "externalChange": bool(external), "userEdit": bool(userEdit),
           "fromMode": current_mode(ws, rel) if is_digest(now) else None}
    out.update(more)
    return out


def _wire_gap(ws, g: Gap) -> dict:
    return g.to_wire(ws.to_uri)


def _unique(gaps: list[Gap]) -> list[Gap]:
    seen, out = set(), []
    for g in gaps:
        key = (g.rel, g.reason, g.turn)
        if key not in seen:
            seen.add(key)
            out.append(g)
    return out
