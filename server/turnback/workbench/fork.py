"""Fork: `turnback/fork/prepare` and `turnback/fork/confirm`, and finishing an interrupted fork.

An in-place fork is one file transaction (travel/transaction.py) whose new state is the branch:
fork-begin record (durable) -> backups (an uncaptured edit it overwrites is kept in a *before* head
of the parent, which Redo offers), intent, the scope-gated rewind of the workspace to turn k -> the
commit point, the head (or sidecar) naming the branch -> fork-frozen (the parent's session record,
frozen, with its last state) -> fork-complete. A crash before the commit point leaves the parent as it
was, files rolled back by the transaction's recovery, and the open removes the fork-begin record; a
crash after it is finished at the next open (the parent's record is written from the fork record).

Every check that can refuse runs before the fork-begin record (`confirm_job`), so `turnback branch`
lists only forks that really began. A fork closed (cancelled) before its first file leaves nothing
behind, its record included; closed after it, it runs to its outcome and tells the clients exactly as
an uncancelled one does (`_told`).

A worktree fork is forktree.py.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InvalidParams, TurnbackError
from ..store import lineage
from ..travel import fork as plan_fork
from ..travel import transaction
from ..travel import worktree as wt
from ..travel.user_edits import kept_report
from . import params as P
from .agentlinks import agent_resume, follow_fork
from .confirmed import Confirmation, ConfirmedOperation, Job, KeepEdits, plan_hash_field
from .forktree import forget, io_error, worktree_job
from .sessions import PRIVATE_CONFIG, parked_record


@dataclass(frozen=True)
class ForkArgs:
    turn: int  # the fork point: the branch keeps turns up to this one
    session: dict[str, Any]  # `sessionId` as sent: the fork's source must be the live session
    worktree: str | None = None  # a folder for the branch; none: the fork is made in place
    git: bool = False  # the worktree folder is a git worktree
    # found by the confirmation's checks (`check_commit`), before anything is written
    target: Path | None = None
    git_plan: Any = None

    @classmethod
    def parse(cls, p: dict[str, Any]) -> ForkArgs:
        return cls(P.field(p, "turn", int), {"sessionId": p.get("sessionId")})


class ForkFeature(ConfirmedOperation[ForkArgs, plan_fork.ForkPlan]):
    name = "fork"
    stale_key = "report"

    def busy(self) -> list[dict[str, Any]]:
        return [r for r in lineage.forks(self.wb.store) if r.get("phase") == "begun"]

    # -- the skeleton's steps ---------------------------------------------------------------------
    def parse(self, p: dict[str, Any]) -> ForkArgs:
        return ForkArgs.parse(p)

    def parse_commit(self, p: dict[str, Any]) -> Confirmation[ForkArgs]:
        args = ForkArgs.parse(p)
        plan_hash = plan_hash_field(p, alias="hash")  # `hash`: its older name (docs/protocol.md)
        worktree = P.field(p, "worktree", str, default=None, allow_none=True)
        use_git = P.field(p, "git", bool, default=False)
        keep = KeepEdits.parse(p, markers=True)  # conflictMarkers: as a rewind writes a conflict
        if use_git and worktree is None:
            raise InvalidParams("git makes the branch's folder a git worktree, so it needs a "
                                "worktree folder; without one the fork is made in place",
                                data={"field": "git"})
        if keep.keep and worktree is not None:
            raise InvalidParams("keepUserEdits is for a fork in place: a worktree fork leaves this "
                                "workspace (and your edits in it) as it is", data={"field": "keepUserEdits"})
        return Confirmation(replace(args, worktree=worktree, git=use_git), plan_hash, keep)

    def check(self, args: ForkArgs) -> None:
        self.wb.sessions.guard(args.session)  # a frozen session is never a fork's source

    def check_commit(self, request: Confirmation[ForkArgs]) -> Confirmation[ForkArgs]:
        args = request.args
        if args.worktree is None:
            return request
        wb = self.wb  # every refusal before the fork writes its first record
        target = wt.check_target(wb.ws, args.worktree)
        git_plan = wt.check_git(wb.root) if args.git else None
        return replace(request, args=replace(args, target=target, git_plan=git_plan))

    def derive_job(self, args: ForkArgs, *, fresh: bool) -> Job[plan_fork.ForkPlan]:
        wb = self.wb
        head = wb.book.head.seq if wb.book.head else None
        plan: plan_fork.ForkPlan = yield from plan_fork.prepare_job(
            wb.state, wb.ws, wb.store.objects, args.turn, head_seq=head,
            max_bytes=wb.options.max_file_bytes, busy=self.busy(), redo=wb.store.kind == "heads")
        return plan

    def shown(self, plan: plan_fork.ForkPlan) -> dict[str, Any]:
        return plan.report

    def refusal(self, shown: dict[str, Any]) -> dict[str, Any] | None:
        if shown.get("refusal"):
            return {"status": "refused", "refusal": shown["refusal"], "report": shown}
        return None

    def keeping(self, plan: plan_fork.ForkPlan, keep: KeepEdits) -> plan_fork.ForkPlan:
        # The user's edits (travel/user_edits.py) are carried onto the fork: the rewind's own rule.
        return replace(plan, derived=plan.derived.keeping_user_edits(self.wb.state,
                                                                      markers=keep.markers))

    def commit_plan_job(self, request: Confirmation[ForkArgs], plan: plan_fork.ForkPlan,
                        shown: dict[str, Any]) -> Job[dict[str, Any]]:
        plan = replace(plan, report=shown)
        args = request.args
        if args.target is not None:
            return (yield from worktree_job(self.wb, plan, args.target, args.git_plan))
        return (yield from self._in_place_job(plan, request.keep.keep))

    # `turnback/fork/confirm`: the skeleton's commit
    def confirm(self, params: Any) -> dict[str, Any]:
        return self.commit(params)

    def confirm_job(self, params: Any) -> Job[dict[str, Any]]:
        return self.commit_job(params)

    # -- in place ---------------------------------------------------------------------------------
    def _in_place_job(self, plan, keep: bool = False):
        wb, book, store = self.wb, self.wb.book, self.wb.store
        report = plan.report
        derived = plan.derived  # the user's edits kept on it already, with `keep` (`keeping`)
        kept = derived if keep else None  # the plan that kept them: its kept, merged, … lists
        try:
            if book.dirty:
                book.publish()
            parent = book.state
            parent_body = book.write_state(parent)
        except OSError as exc:
            raise io_error(exc) from exc
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
            forget(store, record)
            raise io_error(exc) from exc
        touched = {d.rel for d in parent.directives.values()}
        done: dict = {}
        try:
            outcome = yield from transaction.run_job(book, wb.ws, operation="fork",
                                                     changes=derived.changes, new_state=branch,
                                                     max_bytes=wb.options.max_file_bytes, done=done,
                                                     modes=derived.modes)
        except GeneratorExit:
            finished = done.get("outcome")
            if finished is None:
                forget(store, record)  # closed before the first file: nothing changed, nothing busy
            else:  # closed after it: the transaction ran on; the clients hear of it all the same
                self._told(report, record, parent, branch, finished, touched, kept, derived.changes)
            raise
        except Exception as exc:
            if not (isinstance(exc, TurnbackError) and exc.data.get("txn")):
                forget(store, record)  # nothing was changed (the transaction says so)
            raise  # else its intent is unsettled: the next open decides, and finishes the records
        return self._told(report, record, parent, branch, outcome, touched, kept, derived.changes)

    def _told(self, report, record, parent, branch, outcome, touched, kept, changes) -> dict:
        """The records, the notices and the answer of a fork transaction's outcome: one path for an
        uncancelled fork and one closed after its first file."""
        wb = self.wb
        if outcome.status != "committed":
            forget(self.wb.store, record)
            result = {"status": "rolled-back", "reason": outcome.reason, "report": report}
            if outcome.message:
                result["message"] = outcome.message
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
                             "files": [rel for rel, _ in changes]})
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
        if kept is not None:  # what keeping the user's edits did: kept, merged, conflicts
            result.update(kept_report(kept, wb.ws.to_uri))  # (travel/user_edits.py)
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

    # -- at open ----------------------------------------------------------------------------------
    def recover_interrupted(self) -> list[dict]:
        """Finish or forget every fork that a crash interrupted (owner only; after the file
        transaction's own recovery has put the files on one side of its commit point)."""
        wb = self.wb
        out = []
        for record in self.busy():
            said = {"parentId": record.get("parentId"), "turn": record.get("turn")}
            if record.get("worktree"):
                child = lineage.read_session(wb.store, record["branchId"])
                phase = "complete" if child is not None else "abandoned"
                lineage.write_fork(wb.store, dict(record, phase=phase, completed=time.time()))
                out.append({"branchId": record["branchId"], "action": phase,
                            "worktree": record["worktree"], **said})
            elif wb.state.session_id == record["branchId"]:
                parent = wb.book.codec.read(record["parentBody"])
                self._complete(record, parent, wb.book.head.seq if wb.book.head else None)
                out.append({"branchId": record["branchId"], "action": "finished", **said})
            else:
                lineage.remove_fork(wb.store, record["branchId"])
                out.append({"branchId": record["branchId"], "action": "rolled-back", **said})
        return out
