"""Fork: `turnback/fork/prepare` and `turnback/fork/confirm`, and finishing an interrupted fork.

An in-place fork is one file transaction (travel/transaction.py) whose new state is the branch:
fork-begin record (durable) -> backups, intent, the scope-gated rewind of the workspace to turn k ->
the commit point, the head (or sidecar) naming the branch -> fork-frozen (the parent's session record,
frozen, with its last state) -> fork-complete. A crash before the commit point leaves the parent as it
was, files rolled back by the transaction's recovery, and the open removes the fork-begin record; a
crash after it is finished at the next open (the parent's record is written from the fork record).

A worktree fork (travel/worktree.py) leaves the workspace and the parent alone: it fills a new folder
with the captured files of turn k and gives it its own store and session.
"""

from __future__ import annotations

import time
import uuid

from ..errors import TurnbackError
from ..store import lineage
from ..travel import fork as plan_fork
from ..travel import transaction
from ..travel.user_edits import kept_report
from . import params as P
from .agentlinks import agent_resume, annotate, follow_fork
from .sessions import PRIVATE_CONFIG, parked_record


class ForkFeature:
    def __init__(self, wb):
        self.wb = wb

    def busy(self) -> list[dict]:
        return [r for r in lineage.forks(self.wb.store) if r.get("phase") == "begun"]

    def _plan_job(self, turn):
        wb = self.wb
        head = wb.book.head.seq if wb.book.head else None
        return plan_fork.prepare_job(wb.state, wb.ws, wb.store.objects, turn, head_seq=head,
                                     max_bytes=wb.options.max_file_bytes, busy=self.busy())

    # -- prepare ----------------------------------------------------------------------------------
    def prepare(self, params) -> dict:
        return self.wb.run(self.prepare_job(params))

    def prepare_job(self, params):
        p = P.obj(params)
        turn = P.field(p, "turn", int)
        self.wb.sessions.guard(p)  # a frozen session is never a fork's source
        settled = yield from self.wb.turns.settle_idle_job("fork")  # an idle agent turn
        plan = yield from self._plan_job(turn)
        return annotate(dict(plan.report), settled)

    # -- confirm ----------------------------------------------------------------------------------
    def confirm(self, params) -> dict:
        return self.wb.run(self.confirm_job(params))

    def confirm_job(self, params):
        p = P.obj(params)
        turn = P.field(p, "turn", int)
        expected = P.field(p, "hash", str)
        worktree = P.field(p, "worktree", str, default=None, allow_none=True)
        use_git = P.field(p, "git", bool, default=False)
        keep = P.field(p, "keepUserEdits", bool, default=False)
        if keep and worktree is not None:
            from ..errors import InvalidParams

            raise InvalidParams("keepUserEdits is for a fork in place: a worktree fork leaves this "
                                "workspace (and your edits in it) as it is", data={"field": "keepUserEdits"})
        wb = self.wb
        wb.book.require_owner()
        wb.sessions.guard(p)
        if worktree is not None:
            from ..travel.worktree import check_target

            target = check_target(wb.ws, worktree)  # a bad folder is refused before any work
        settled = yield from wb.turns.settle_idle_job("fork")
        plan = yield from self._plan_job(turn)
        report = plan.report = annotate(dict(plan.report), settled)
        if report.get("refusal"):
            return {"status": "refused", "refusal": report["refusal"], "report": report}
        if report["hash"] != expected:
            return {"status": "stale", "report": report}
        if worktree is not None:
            return (yield from self._worktree_job(plan, target, use_git))
        return (yield from self._in_place_job(plan, keep))

    def _in_place_job(self, plan, keep: bool = False):
        wb, book, store = self.wb, self.wb.book, self.wb.store
        report = plan.report
        # The user's edits (travel/user_edits.py) are carried onto the fork: the rewind's own rule.
        derived = plan.derived.keeping_user_edits(book.state) if keep else plan.derived
        try:
            if book.dirty:
                book.publish()
            parent = book.state
            parent_body = book.write_state(parent)
        except OSError as exc:
            raise _io_error(exc) from exc
        branch = derived.new_state
        branch.session_id = uuid.uuid4().hex
        branch.created = time.time()
        branch.config = {k: v for k, v in branch.config.items() if k not in PRIVATE_CONFIG}
        branch.frozen = False
        branch.lineage = {"parentId": parent.session_id, "forkTurn": report["turn"],
                          "notPreserved": list(report["notPreserved"]),
                          "droppedSends": list(report["droppedSends"]), "forked": branch.created}
        record = {"branchId": branch.session_id, "parentId": parent.session_id,
                  "turn": report["turn"], "hash": report["hash"], "created": branch.created,
                  "phase": "begun", "parentBody": parent_body, "effects": report["effects"],
                  "droppedSends": report["droppedSends"], "parentTurnCount": parent.turn_count,
                  "worktree": None}
        try:
            lineage.write_fork(store, record)  # fork-begin: durable before the first file is touched
        except OSError as exc:
            self._forget(record)
            raise _io_error(exc) from exc
        touched = {d.rel for d in parent.directives.values()}
        done: dict = {}
        try:
            outcome = yield from transaction.run_job(book, wb.ws, operation="fork",
                                                     changes=derived.changes, new_state=branch,
                                                     max_bytes=wb.options.max_file_bytes, done=done,
                                                     modes=derived.modes)
        except TurnbackError:
            self._forget(record)  # nothing was changed (the transaction says so)
            raise
        except GeneratorExit:
            # Closed after the first file was touched: the transaction ran on to its outcome.
            finished = done.get("outcome")
            if finished is not None and finished.status == "committed":
                self._finish_quietly(record, parent, finished.head_seq)
            elif finished is not None:
                self._forget(record)
            raise
        if outcome.status != "committed":
            self._forget(record)
            result = {"status": "rolled-back", "reason": outcome.reason, "report": report}
            if outcome.recovery:
                result["recovery"] = [wb.recovery.wire(r) for r in outcome.recovery]
            wb.emit_status()
            return result
        self._finish_quietly(record, parent, outcome.head_seq)
        wb.events.emit("epoch", {"source": "fork", "sessionId": branch.session_id,
                                 "parentId": parent.session_id, "turnCount": wb.state.turn_count,
                                 "epoch": wb.state.epoch})
        wb.announce_rewound({"operation": "fork", "mode": "all", "parentId": parent.session_id,
                             "boundary": {"kind": "afterResponse", "turn": report["turn"]},
                             "files": [rel for rel, _ in derived.changes]})
        wb.collection.schedule("fork")
        wb.directives.notify(touched | {d.rel for d in wb.state.directives.values()})
        wb.emit_status()
        result = {"status": "forked", "epoch": wb.state.epoch, "headSeq": outcome.head_seq,
                  "branch": {"sessionId": branch.session_id, "parentId": parent.session_id,
                             "worktree": None, "turnCount": wb.state.turn_count},
                  "droppedSends": report["droppedSends"], "report": report}
        follow_fork(wb, parent.session_id, branch.session_id, report["turn"])  # the agent goes on here
        resume = agent_resume(wb, wb.state.turn_count)
        if resume is not None:
            result["agentResume"] = resume  # the agent's conversation, resumed at the fork point
        if keep:  # what keeping the user's edits did: kept, merged, conflicts (travel/user_edits.py)
            result.update(kept_report(derived, wb.ws.to_uri))
        return result

    def _complete(self, record: dict, parent, head_seq) -> None:
        store = self.wb.store
        # fork-frozen: the parent's last state, readable and frozen, in its session record
        lineage.write_session(store, parked_record(parent, record["parentBody"], frozen=True,
                                                   branchId=record["branchId"]))
        # fork-complete
        lineage.write_fork(store, dict(record, phase="complete", headSeq=head_seq,
                                       completed=time.time()))

    def _finish_quietly(self, record: dict, parent, head_seq) -> None:
        try:
            self._complete(record, parent, head_seq)
        except OSError:
            pass  # committed: the next open finishes the records from the fork-begin record

    def _forget(self, record: dict) -> None:
        try:
            lineage.remove_fork(self.wb.store, record["branchId"])
        except OSError:
            pass  # the next open sees a fork-begin without its branch and removes it

    def _worktree_job(self, plan, target, use_git: bool):
        from ..travel import worktree as wt

        wb = self.wb
        report = plan.report
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
            raise _io_error(exc) from exc
        try:
            images = dict(plan.derived.new_state.known.items())  # every captured path at turn k
            made = yield from wt.materialise_job(wb.ws, wb.store.objects, images, target,
                                                 use_git=use_git)
            made["store"], made["turnCount"] = self._child_store(target, child_id, parent, report,
                                                                 made["mode"])
        except BaseException:
            # The folder is outside the workspace: it is reported, never deleted.
            try:
                lineage.write_fork(wb.store, dict(record, phase="abandoned", completed=time.time()))
            except OSError:
                pass  # the next open marks it abandoned
            raise
        lineage.write_session(wb.store, {
            "sessionId": child_id, "body": None, "frozen": False, "parentId": parent.session_id,
            "forkTurn": report["turn"], "worktree": str(target), "store": made["store"],
            "meta": {}, "created": record["created"], "parked": time.time(),
            "turnCount": made["turnCount"], "lastPrompt": "", "mode": made["mode"]})
        lineage.write_fork(wb.store, dict(record, phase="complete", completed=time.time(),
                                          mode=made["mode"]))
        wb.emit_status()
        return {"status": "forked",
                "branch": {"sessionId": child_id, "parentId": parent.session_id,
                           "worktree": str(target), "turnCount": made["turnCount"],
                           "mode": made["mode"]},
                "files": made["files"], "gaps": made["gaps"], "report": report}

    def _child_store(self, target, child_id: str, parent, report: dict, mode: str):
        """The worktree's own store and session, its lineage pointing at the parent."""
        from .core import Options, Workbench
        from .sessions import fresh_state

        wb = self.wb
        child = Workbench.open(target, Options(store_kind=wb.store.kind, sweep=wb.options.sweep,
                                               max_file_bytes=wb.options.max_file_bytes))
        try:
            state = fresh_state(child.state, {
                "parentId": parent.session_id, "forkTurn": report["turn"],
                "parentStore": str(wb.store.path), "parentWorkspace": str(wb.root),
                "worktree": str(target), "mode": mode, "notPreserved": list(report["notPreserved"])})
            state.session_id = child_id
            child.book.publish(state=state)
            child.run(child.sweep_job())  # the child knows its files: its first turn has before-images
            return str(child.store.path), child.state.turn_count
        finally:
            child.close()

    # -- at open ----------------------------------------------------------------------------------
    def recover_interrupted(self) -> list[dict]:
        """Finish or forget every fork that a crash interrupted (owner only; after the file
        transaction's own recovery has put the files on one side of its commit point)."""
        wb = self.wb
        out = []
        for record in self.busy():
            if record.get("worktree"):
                child = lineage.read_session(wb.store, record["branchId"])
                phase = "complete" if child is not None else "abandoned"
                lineage.write_fork(wb.store, dict(record, phase=phase, completed=time.time()))
                out.append({"branchId": record["branchId"], "action": phase})
            elif wb.state.session_id == record["branchId"]:
                parent = wb.book.codec.read(record["parentBody"])
                self._complete(record, parent, wb.book.head.seq if wb.book.head else None)
                out.append({"branchId": record["branchId"], "action": "finished"})
            else:
                lineage.remove_fork(wb.store, record["branchId"])
                out.append({"branchId": record["branchId"], "action": "rolled-back"})
        return out


def _io_error(exc: OSError) -> TurnbackError:
    return TurnbackError(f"could not write the fork's records ({exc}); nothing was changed",
                         code="io-error")
