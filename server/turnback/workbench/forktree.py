"""A worktree fork (`turnback/fork/confirm` with `worktree`; travel/worktree.py): it leaves the
workspace and the parent alone, makes a new folder, gives it its own store and session, and puts the
captured files of turn k there as a transaction of *that* store, so what it overwrites in a git
checkout is kept there for Redo, and a crash in the middle is recovered when the folder is opened.
Its own module beside fork.py (the confirmation, the fork in place, the records at open), which
calls it once every check has passed."""

from __future__ import annotations

import copy
import time
import uuid

from ..errors import TurnbackError
from ..model.gaps import Gap
from ..model.images import ABSENT, FOLDER, is_digest, is_folder_key
from ..store import lineage
from ..travel import transaction
from ..travel import worktree as wt
from ..travel.folders import keep_full_folders
from .sessions import fresh_state


def forget(store, record: dict) -> None:
    """Remove a fork-begin record of a fork that changed nothing (of either kind)."""
    try:
        lineage.remove_fork(store, record["branchId"])
    except OSError:
        pass  # the next open sees a fork-begin without its branch and removes it


def worktree_job(wb, plan, target, git_plan):
    """A worktree fork of `plan` into `target` (checked): fork-begin, the folder, its store and
    session, the turn-k files; told once done, also when closed after its files."""
    report = plan.report
    use_git = git_plan is not None
    if wb.book.dirty:
        wb.book.publish()
    parent = wb.state
    child_id = uuid.uuid4().hex
    record = {"branchId": child_id, "parentId": parent.session_id, "turn": report["turn"],
              "hash": report["hash"], "created": time.time(), "phase": "begun",
              "effects": report["effects"], "droppedSends": [],
              "parentTurnCount": parent.turn_count, "worktree": str(target)}
    try:
        lineage.write_fork(wb.store, record)  # fork-begin
    except OSError as exc:
        raise io_error(exc) from exc
    try:
        wt.create_folder(target, use_git=use_git, root=wb.root)
    except BaseException:
        forget(wb.store, record)  # refused before anything was written: the fork never began
        raise
    made: dict = {}
    try:
        gaps = wt.init_submodules(wb.root, target, git_plan.submodules) if use_git else []
        yield from _fill_child(wb, plan, target, child_id, parent, gaps, use_git, made)
    except BaseException as exc:
        if isinstance(exc, GeneratorExit) and made:
            _worktree_done(wb, record, parent, target, made)  # closed after its files: told
            raise
        # The folder is outside the workspace: it is reported, never deleted.
        try:
            lineage.write_fork(wb.store, dict(record, phase="abandoned", completed=time.time()))
        except OSError:
            pass  # the next open marks it abandoned
        raise
    return _worktree_done(wb, record, parent, target, made)


def _worktree_done(wb, record: dict, parent, target, made: dict) -> dict:
    child_id = record["branchId"]
    lineage.write_session(wb.store, {
        "sessionId": child_id, "body": None, "frozen": False, "parentId": parent.session_id,
        "forkTurn": record["turn"], "worktree": str(target), "store": made["store"],
        "meta": {}, "created": record["created"], "parked": time.time(),
        "turnCount": made["turnCount"], "lastPrompt": "", "mode": made["mode"]})
    lineage.write_fork(wb.store, dict(record, phase="complete", completed=time.time(),
                                      mode=made["mode"]))
    wb.emit_status()
    return {"status": "forked",
            "branch": {"sessionId": child_id, "parentId": parent.session_id,
                       "worktree": str(target), "turnCount": made["turnCount"],
                       "mode": made["mode"]},
            "files": made["files"], "gaps": made["gaps"], "report": made["report"]}


def _fill_child(wb, plan, target, child_id: str, parent, gaps: list[dict], use_git: bool,
                made: dict):
    """The worktree's own store and session (lineage pointing at the parent), then the turn-k
    images written as a transaction of that store: a git checkout's files it replaces stay in
    the child's first head (Redo there brings them back), and a crash is recovered there."""
    mode = "git" if use_git else "copy"
    report = plan.report
    # The same kind of workbench and options, through the instance: no import of core here,
    # which imports this module (the one direction: core -> features).
    options = type(wb.options)(store_kind=wb.store.kind, sweep=wb.options.sweep,
                               max_file_bytes=wb.options.max_file_bytes)
    child = type(wb).open(target, options)
    try:
        state = fresh_state(child.state, {
            "parentId": parent.session_id, "forkTurn": report["turn"],
            "parentStore": str(wb.store.path), "parentWorkspace": str(wb.root),
            "worktree": str(target), "mode": mode, "notPreserved": list(report["notPreserved"])})
        state.session_id = child_id
        child.book.publish(state=state)
        # The checkout as git made it: the child's first state (its sync binds the sweep, not
        # the fork, which a cancel still abandons until its first file: workbench/core.sweep_job).
        yield from child.sweep_job()
        if child.book.dirty:
            child.book.publish()
        skip = [g["path"] for g in gaps]  # uninitialised submodules stay empty
        theirs, mine = wb.store.objects, child.store.objects
        with mine.batch():  # the images travel into the child's store (its own digest seed)
            changes, modes, files = yield from _overlay_job(
                plan.derived.new_state.known, child.state, skip, gaps,
                lambda image: mine.put(theirs.get(image)))
        keep_full_folders(child.ws, changes, files, gaps)  # what git checked out stays
        gaps[:] = [{"path": g.rel, "reason": g.reason, "detail": g.detail} if isinstance(g, Gap)
                   else g for g in gaps]
        new = copy.deepcopy(child.state)
        for rel, image in changes:
            new.known[rel] = image
            new.known.set_mode(rel, modes.get((rel, image)))
        new.epoch += 1
        new.fork_point = uuid.uuid4().hex
        result = {"mode": mode, "files": files, "gaps": gaps, "store": str(child.store.path),
                  "turnCount": child.state.turn_count, "report": report}
        done: dict = {}
        try:
            if changes:
                yield from transaction.run_job(
                    child.book, child.ws, operation="fork", changes=changes, new_state=new,
                    max_bytes=options.max_file_bytes, modes=modes, done=done)
        except GeneratorExit:
            if getattr(done.get("outcome"), "status", None) == "committed":
                made.update(result)  # closed after its first file: it ran on and committed
            raise
        outcome = done.get("outcome")
        if outcome is not None and outcome.status != "committed":
            raise TurnbackError(f"the worktree fork could not write its files into {target} "
                                f"({outcome.reason}); the folder is left as it is",
                                code="io-error", data={"path": str(target)})
        made.update(result)
    finally:
        child.close()


def _overlay_job(images, disk_state, skip, gaps: list[dict], carry):
    """What the child's transaction writes: every captured path at its turn-k image where the
    checkout (as the child's sweep saw it) differs. `carry` stores an image in the child's store and
    returns its name there. Returns (changes, modes, file list); adds a gap for each path whose turn-k
    image turnback never saw. A job: it yields after each image it carries."""
    changes, modes, files = [], {}, []
    for rel in sorted(images):
        image = images[rel]
        if rel == ".git" or rel.startswith(".git/") or "/.git/" in rel or rel.endswith("/.git"):
            continue
        if wt.inside(rel, skip):
            continue
        if is_folder_key(rel):  # a folder of turn k's tree: made, or removed (when empty)
            there = disk_state.known.get(rel) == FOLDER
            if image == FOLDER and not there or image == ABSENT and there:
                changes.append((rel, image))
                files.append({"path": rel, "action": "restore" if image == FOLDER else "delete"})
            continue
        if image == ABSENT:
            if disk_state.known.get(rel) not in (None, ABSENT):  # git checked it out: it goes
                changes.append((rel, ABSENT))
                files.append({"path": rel, "action": "delete"})
            continue
        if not is_digest(image):
            gaps.append({"path": rel, "reason": "unknown-before-image"})
            continue
        mine = carry(image)
        yield ("carry", len(files))
        mode = images.mode(rel)
        if disk_state.known.get(rel) == mine and mode in (None, disk_state.known.mode(rel)):
            continue  # the checkout holds it already
        changes.append((rel, mine))
        if mode is not None:
            modes[(rel, mine)] = mode
        files.append({"path": rel, "action": "restore", "to": image})
    return changes, modes, files


def io_error(exc: OSError) -> TurnbackError:
    """The error of a fork whose records could not be written (before any file was touched)."""
    return TurnbackError(f"could not write the fork's records ({exc}); nothing was changed",
                         code="io-error")
