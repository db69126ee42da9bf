"""Redo (`turnback/redo/list|prepare|commit`): the listing of states a rewind left behind, and the
confirmed-operation skeleton (confirmed.py) with what bringing one back derives (travel/redo.py) and
commits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..travel import redo as redo_plan
from ..travel.redo import RedoPlan
from ..travel.user_edits import keep_user_edits
from . import params as P
from .commit import disk_memo
from .confirmed import Commit, Confirmation, ConfirmedOperation, Job, KeepEdits

NO_HEADS = ("this store keeps one sidecar record under a PID lock; it publishes no heads, so there "
            "is nothing to redo")


@dataclass(frozen=True)
class RedoArgs:
    head_seq: int  # the head (a state left behind) to bring back

    @classmethod
    def parse(cls, p: dict[str, Any]) -> RedoArgs:
        return cls(P.field(p, "headSeq", int))


class RedoFeature(ConfirmedOperation[RedoArgs, RedoPlan]):
    name = "redo"
    stale_key = "plan"
    markers = False  # a kept edit stays as it is

    def list(self, params: Any = None) -> dict[str, Any]:
        result: dict[str, Any] = self.wb.run(self.list_job(params))
        return result

    def list_job(self, params: Any = None) -> Job[dict[str, Any]]:
        """The Redo listing as a job (`turnback/redo/list` is a read-job: a served listing runs in
        slices, the owner answering everything else meanwhile, and a client may cancel it)."""
        p = P.obj(params)
        everything = P.field(p, "all", bool, default=False)
        wb = self.wb
        if wb.store.kind != "heads":
            return {"available": False, "groups": [], "reason": NO_HEADS}
        every = yield from redo_plan.groups_job(wb.store, wb.state, wb.book.head, wb.book.codec,
                                                everything=True)
        groups = every if everything else [g for g in every if not g.get("ancestor")]
        # `hidden`: earlier moments of the current line, one `{all: true}` away
        out = {"available": bool(groups), "groups": groups, "all": everything,
               "hidden": len(every) - len(groups)}
        if not groups:
            out["reason"] = ("no state has been left behind by a rewind"
                             + (f" ({out['hidden']} earlier state(s) of this line: ask for all states)"
                                if out["hidden"] else ""))
        return out

    def parse(self, p: dict[str, Any]) -> RedoArgs:
        return RedoArgs.parse(p)

    def derive_job(self, args: RedoArgs, *, fresh: bool) -> Job[RedoPlan]:
        wb = self.wb
        plan: RedoPlan = yield from redo_plan.prepare_job(
            wb.store, wb.book.codec, wb.state, wb.book.head, wb.ws, args.head_seq,
            max_bytes=wb.options.max_file_bytes, memo=disk_memo(wb, fresh=fresh))
        return plan

    def shown(self, plan: RedoPlan) -> dict[str, Any]:
        return plan.result

    def keeping(self, plan: RedoPlan, keep: KeepEdits) -> RedoPlan:
        kept: RedoPlan = keep_user_edits(plan, self.wb.state)
        return kept

    def committing(self, request: Confirmation[RedoArgs], plan: RedoPlan) -> Commit:
        return Commit(plan.changes, plan.new_state, plan if request.keep.keep else None, plan.modes,
                      conversation=plan.conversation,
                      announce={"operation": "redo", "mode": "all", "boundary": None,
                                "headSeq": request.args.head_seq})
