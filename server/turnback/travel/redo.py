"""Redo: bring back a published head that a rewind left behind, as a new head.

Preparation reads immutable bytes only (head records and objects) and takes no lease; commit goes
through the same file transaction as rewind. Redo restores the head's conversation, sidecar state,
instruction snapshots, agent transcripts, tool results and captured files. It keeps the current
directive records (a rewind's pruning of them is not undone) and never re-fires a step.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import InvalidParams, NoHeads, NotFound, TurnRunning
from ..model.gaps import Gap
from ..model.images import ABSENT, UNKNOWN, is_folder_key
from ..model.session import SessionState
from .disk import current_mode, disk_images_job, drain
from .filestate import keep_as_they_are
from .folders import cleared_by_plan, keep_full_folders
from .rewind import _file, _unique, _wire_gap, changed_behind, plan_hash
from .transaction import BEFORE_MARK
from .user_edits import kept_paths, user_edit_fields


@dataclass
class RedoPlan:
    result: dict  # {planHash, headSeq, turnCount, files, gaps, summary}
    new_state: SessionState
    changes: list[tuple[str, str]]
    modes: dict = field(default_factory=dict)  # (rel, image) -> permission bits, as in rewind
    # whether the turns (or agent transcripts) brought back differ from the current ones: Redo of
    # the state a file restore left behind changes files only, so it sends no epoch, as the restore
    conversation: bool = True


class ListingStep(NamedTuple):
    """A step of the Redo listing, yielded to whoever drives it: a served listing reports `progress`
    to a client that sent a work-done token (docs/protocol.md, `$/progress`)."""
    phase: str  # "read": the saved states' records; "compare": each group against the current state
    done: int
    total: int

    @property
    def progress(self) -> str:
        if self.phase == "read":
            return f"{self.done} of {self.total} saved states read"
        return f"{self.done} of {self.total} states compared with the current one"


def groups(store, current: SessionState | None, current_head, codec=None, *,
           everything: bool = False) -> list[dict]:
    return drain(groups_job(store, current, current_head, codec, everything=everything))


def groups_job(store, current: SessionState | None, current_head, codec=None, *,
               everything: bool = False):
    """Settled heads grouped by (settled turn count, fork point); the newest head of each group,
    leaving out the group of the current state. Newest first. A job: it yields after every head it
    looks at and before every packed object it reads (whose blocks are inflated on a helper thread
    meanwhile, `ObjectStore.iter_warm`), so a long listing never holds a server's loop.

    With a codec, each group says whether it is an `ancestor` of the current state (its turns are a
    prefix of the current turns: an earlier moment of this very line, nothing a rewind left behind)
    and what bringing it back would change (`changes`: how many paths differ, the first few).
    Ancestors are left out unless `everything` is asked for: Redo offers what rewinds discarded.
    Only this session's states count, and those of the frozen sessions it was forked from (a fork
    leaves its parent's state behind like a rewind). Shards are compared by digest, and a shard
    that differs is decoded once (`StateCodec.known_doc`), however many groups name it."""
    if store.kind != "heads":
        return []
    best: dict[tuple, object] = {}
    line = _forked_from(store, current)
    seqs = store.heads.list_seqs()
    for n, seq in enumerate(seqs, 1):
        head = store.heads.read(seq)
        yield ListingStep("read", n, len(seqs))
        if not head.settled:
            continue  # a head published inside a running turn is an incomplete turn
        if current is not None and head.session and head.session not in line:
            continue  # another session's state (parked, or a branch of this one): not this Redo
        key = (head.turn_count, head.fork_point)
        if key not in best or best[key].seq < head.seq:
            best[key] = head
    here = (current.settled_turn_count, current.fork_point) if current else None
    # The state just before each file restore that kept every turn: same turns, other files. It was
    # left behind like a rewind's, so it is offered, not hidden as an earlier moment of this line.
    restored = {(r.get("afterTurn"), r.get("forkPointBefore")) for r in (current.restores if current else ())}
    mine = yield from _outline_job(codec, current_head)
    out = []
    for n, (key, h) in enumerate(best.items(), 1):
        if key == here:
            continue
        group = {"headSeq": h.seq, "turnCount": h.turn_count, "forkPoint": h.fork_point,
                 "created": h.created, "lastPrompt": h.last_prompt, "sessionId": h.session,
                 # a state of a frozen session this one was forked from: Redo brings its content
                 # into the live session; the frozen one stays as it is
                 "frozenParent": bool(current is not None and h.session
                                      and h.session != current.session_id),
                 "keptBefore": kept_before(h)}
        theirs = yield from _outline_job(codec, h)
        if mine is not None and theirs is not None:
            # the turns both states share: Redo brings back turns sharedTurns+1..turnCount
            group["sharedTurns"] = _shared(mine[0], theirs[0])
            group["changes"] = yield from _differing_paths_job(codec, mine[1], theirs[1])
            # An earlier moment of this line: its turns are a prefix of the current ones. Equal
            # turns with other files are no earlier moment: a transaction left them (the git
            # checkout a worktree fork wrote over, a Redo's own source), so Redo offers them.
            # A *before* head (what a transaction overwrote that the session never captured) is
            # never an earlier moment: it is what the safety net kept, unless it is now exactly the
            # current state (its turns and files: a Redo brought it back), with nothing to redo.
            same = theirs[0] == mine[0] and not group["changes"]["files"]
            group["ancestor"] = same or (theirs[0] == mine[0][:len(theirs[0])]
                                         and not kept_before(h) and key not in restored
                                         and len(theirs[0]) < len(mine[0]))
            if group["ancestor"] and not everything:
                continue
        out.append(group)
        yield ListingStep("compare", n, len(best))
    return sorted(out, key=lambda g: -g["headSeq"])


def kept_before(head) -> bool:
    """A head a transaction published to keep the images it was about to overwrite."""
    return (getattr(head, "txn", None) or "").startswith(BEFORE_MARK)


def _shared(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _forked_from(store, current: SessionState | None) -> set:
    """This session and the frozen sessions it was forked from: a frozen parent's states stay
    Redo-able from its branch (docs/fork.md); unrelated sessions' states are not offered."""
    if current is None:
        return set()
    from ..store import lineage

    line = {current.session_id}
    parent = (current.lineage or {}).get("parentId")
    while parent and parent not in line:
        rec = lineage.read_session(store, parent)
        if rec is None or not rec.get("frozen"):
            break
        line.add(parent)
        parent = rec.get("parentId")
    return line


def _outline_job(codec, head):
    if codec is None or head is None:
        return None
    try:
        yield from codec.iter_warm_outline(head.body)
        return codec.outline(head.body)
    except Exception:  # noqa: BLE001 - an unreadable head is listed without the extras, fsck reports it
        return None


def _differing_paths_job(codec, mine: list[str], theirs: list[str], shown: int = 5):
    """Paths whose image (or permission bits) differ between two states, reading only the known
    shards that differ (equal digests, equal shards)."""
    paths: list[str] = []
    for a, b in zip(mine, theirs):
        if a == b:
            continue
        yield from codec.iter_warm(a)
        yield from codec.iter_warm(b)
        here, here_bits = codec.known_doc(a)
        yield ("shard", len(paths))  # a decode per step: two in one step came near the loop's budget
        there, there_bits = codec.known_doc(b)
        paths.extend(rel for rel, image in there.items() if here.get(rel) != image
                     or (image != ABSENT and there_bits.get(rel) not in (None, here_bits.get(rel))))
        yield ("shard", len(paths))
    paths.sort()
    return {"files": len(paths), "paths": paths[:shown]}


def prepare(store, codec, state: SessionState, current_head, ws, head_seq, *, max_bytes: int) -> RedoPlan:
    return drain(prepare_job(store, codec, state, current_head, ws, head_seq, max_bytes=max_bytes))


def prepare_job(store, codec, state: SessionState, current_head, ws, head_seq, *, max_bytes: int,
                memo=None):
    """`prepare` as a job: it yields while it hashes the files on disk (`memo`: travel/diskmemo.py)."""
    if store.kind != "heads":
        raise NoHeads("this store keeps one sidecar record (PID lock) and has no published heads; "
                      "Redo needs a store with heads")
    if not isinstance(head_seq, int) or isinstance(head_seq, bool):
        raise InvalidParams("headSeq must be an integer", data={"field": "headSeq"})
    if head_seq not in store.heads.list_seqs():
        raise NotFound(f"there is no head {head_seq}", data={"headSeq": head_seq})
    if state.running is not None:
        raise TurnRunning(f"turn {state.running.n} is still running; settle or cancel it first",
                          data={"turn": state.running.n})
    head = store.heads.read(head_seq)
    if not head.settled:
        raise InvalidParams(f"head {head_seq} was published inside a running turn; it cannot be "
                            "brought back", data={"headSeq": head_seq})
    target_state = yield from codec.read_job(head.body)
    gaps: list[Gap] = []
    files, changes = [], []
    modes: dict = {}
    # A path with the same image and the same permission bits in both states gives redo nothing to
    # do (a chmod alone is a change). A path the head never saw is one of two things: created later,
    # on this line (its first recorded change made it from nothing), so the head's tree never had it
    # and it goes (`delete`, listed; kept and listed as kept with keepUserEdits); or a file that was
    # there all along unseen, which is left as it is, with a gap that says so.
    paths = sorted(rel for rel, to in target_state.known.items()
                   if to != state.known.get(rel) or _mode_differs(target_state, state, rel))
    later = sorted(rel for rel, image in state.known.items()
                   if rel not in target_state.known and image not in (ABSENT, UNKNOWN))
    created = {rel for rel in later if first_before(state, rel) == ABSENT}
    on_disk = yield from disk_images_job(ws, paths + sorted(created), store.objects.hasher,
                                         max_bytes=max_bytes, memo=memo)
    loose = _last_loose(state)
    want_mode = target_state.known.mode
    for rel in later:  # (a folder of a head that never recorded folders is no news: learnt)
        if rel not in created and (not is_folder_key(rel) or target_state.config.get("folders")):
            what = "folder" if is_folder_key(rel) else "file"
            gaps.append(Gap(rel, "unknown-before-image", None,
                            f"the state Redo brings back never saw this {what}, and turnback cannot "
                            "tell whether it existed then (an ignore rule may have hidden it); it "
                            "is left as it is"))
    gone: set[str] = set()
    going = {rel: target_state.known[rel] for rel in paths}
    going.update((rel, ABSENT) for rel in created)
    for rel in sorted(created):
        now, problem = on_disk[rel]
        if problem is not None and cleared_by_plan(rel, problem, going, on_disk):
            now, problem = ABSENT, None
        if problem is not None:
            gaps.append(Gap(rel, problem))
            files.append(_file(ws, rel, "unchanged", None, ABSENT, False))
        elif now == ABSENT:
            gone.add(rel)  # already gone: the new state knows it absent too (below)
            continue
        else:
            external = changed_behind(state, ws, rel, now)
            changes.append((rel, ABSENT))
            files.append(_file(ws, rel, "delete", now, ABSENT, external, createdLater=True,
                               **user_edit_fields("delete", external, loose.get(rel, False))))
    for rel in paths:
        to = target_state.known[rel]
        now, problem = on_disk[rel]
        if problem is not None and cleared_by_plan(rel, problem, going, on_disk):
            now, problem = ABSENT, None
        if problem is not None:
            gaps.append(Gap(rel, problem))
            files.append(_file(ws, rel, "unchanged", None, to, False))
            continue
        external = changed_behind(state, ws, rel, now)
        if to == UNKNOWN:
            gaps.append(Gap(rel, "unknown-before-image"))
            files.append(_file(ws, rel, "unchanged", now, to, external))
        elif to == now and (to == ABSENT or want_mode(rel) in (None, current_mode(ws, rel))):
            files.append(_file(ws, rel, "unchanged", now, to, external))
        else:
            changes.append((rel, to))
            action = "delete" if to == ABSENT else "restore"
            files.append(_file(ws, rel, action, now, to, external,
                               **user_edit_fields(action, external, loose.get(rel, False))))
            if to != ABSENT and want_mode(rel) is not None:
                modes[(rel, to)] = want_mode(rel)
    unreachable = keep_full_folders(ws, changes, files, gaps)  # a folder goes only if empty
    for f in files:
        f.setdefault("mode", want_mode(f["path"]) if f["to"] != ABSENT else None)
    gaps.extend(g for t in target_state.turns for g in t.gaps)
    gaps = _unique(gaps)
    result = {"headSeq": head_seq, "turnCount": head.turn_count,
              "currentHead": current_head.seq if current_head else None,
              "files": files, "gaps": [_wire_gap(ws, g) for g in gaps]}
    result["planHash"] = plan_hash(store.objects.hasher, result)
    restored = len([f for f in files if f["action"] != "unchanged"])
    edits = kept_paths(files)
    result["summary"] = (f"Would bring back head {head_seq}: {head.turn_count} turn(s), last prompt "
                         f"\u201c{head.last_prompt[:60]}\u201d; writes or deletes {restored} file(s). "
                         + (f"Overwrites edits no turn of that state made: {', '.join(edits)}; "
                            "keeping your edits leaves them as they are. " if edits else "")
                         + "Directive records stay as they are now; no step is run again.")
    conversation = _talk(target_state) != _talk(state)
    # The state read for this plan is this plan's own (decoded afresh: nothing else holds it), so
    # it becomes the new state as it is, with no copy of every turn.
    new_state = target_state
    unreachable |= {g.rel for g in gaps if g.reason not in ("unknown-before-image",)}
    # created later and deleted now, or already gone (the user removed it, not captured yet): the
    # head's tree never had it. Kept with its image, it had no change record, and every earlier
    # checkpoint took it as there all along: a rewind recreated it (issue 43's long run, seed 2016)
    deleted = {rel for rel, to in changes if rel in created} | gone
    head_saw = set(target_state.known)
    staying = []
    for rel in state.known:
        if rel in deleted:
            new_state.known[rel] = ABSENT  # created later: the head's tree never had it
        elif rel not in head_saw or rel in unreachable:
            if rel in created and rel not in head_saw:
                new_state.known[rel] = ABSENT  # the head's tree never had it, and it stays
            staying.append(rel)
    # Paths the head never saw, or could not write, stay as they are, each a change after the
    # head's last turn (from the head's image, absent, or `unknown`: filestate.never_seen): known
    # with no record, every earlier checkpoint took them as there all along (seeds 2014, 2072).
    keep_as_they_are(new_state, state, staying)
    new_state.session_id = state.session_id
    new_state.directives = copy.deepcopy(state.directives)
    new_state.epoch = state.epoch + conversation  # a new context epoch only for a new conversation
    new_state.fork_point = uuid.uuid4().hex
    new_state.last_op = state.last_op
    new_state.frozen = False
    new_state.lineage = copy.deepcopy(state.lineage)  # a redo brings back content, not ancestry
    return RedoPlan(result, new_state, changes, modes, conversation=conversation)


def _talk(state: SessionState) -> tuple:
    """The conversation of a state: its turns and agent transcripts, as they are stored."""
    return ([t.to_dict() for t in state.turns],
            sorted((k, a.to_dict()) for k, a in state.agents.items()))


def first_before(state: SessionState, rel: str):
    """The image rel had before the first change the session recorded of it (ABSENT: the session's
    own line created it), or None when no change of it was ever recorded (only seen)."""
    for k in range(0, state.turn_count + 1):
        turn = state.turn(k) if k else None
        if turn is not None and rel in turn.files:
            return turn.files[rel].before
        change = state.between.get(k, {}).get(rel)
        if change is not None:
            return change[0]
    return None


def _mode_differs(target: SessionState, current: SessionState, rel: str) -> bool:
    """The head knows rel's permission bits and they are not the current state's."""
    want = target.known.mode(rel)
    return want is not None and target.known.get(rel) != ABSENT and want != current.known.mode(rel)


def _last_loose(state: SessionState) -> dict:
    """Paths whose latest change in the current state was made between turns (nobody's turn), with the
    capture source of it: a redo that replaces them undoes the user's edit."""
    last: dict[str, object] = {}
    for k in range(0, state.turn_count + 1):
        turn = state.turn(k) if k else None
        for rel in (turn.files if turn else {}):
            last[rel] = False
        for rel in state.between.get(k, {}):
            last[rel] = state.between_by.get((k, rel))
    return {rel: by for rel, by in last.items() if by is not False}
