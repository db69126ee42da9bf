"""Selective restore (`turnback/restore/prepare|commit`): the confirmed-operation skeleton
(confirmed.py) with what a restore derives (travel/restore.py: chosen paths at a boundary) and
commits: the same shared tail as a rewind (workbench/commit.py: the file transaction, the report,
the notices), but no epoch, since the conversation does not change, and `restored` in the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidParams
from ..travel.restore import derive_restore_job
from ..travel.rewind import Derived
from . import params as P
from .commit import disk_memo
from .confirmed import (CandidateOperation, Commit, Confirmation, Job, KeepEdits, dirty_rels,
                        plan_hash_field)


@dataclass(frozen=True)
class RestoreArgs:
    paths: tuple[str, ...]  # file URIs, or workspace-relative paths and globs
    boundary: dict[str, Any]
    dirty: frozenset[str]  # paths an editor holds unsaved changes of

    @classmethod
    def parse(cls, wb: Any, p: dict[str, Any]) -> RestoreArgs:
        paths = P.field(p, "paths", list)
        if not paths or not all(isinstance(x, str) for x in paths):
            raise InvalidParams("paths must be a non-empty list of file URIs or workspace-relative "
                                "paths and globs", data={"field": "paths"})
        return cls(tuple(paths), P.field(p, "boundary", dict), dirty_rels(wb, p))


class RestoreFeature(CandidateOperation[RestoreArgs]):
    name = "restore"
    markers = False  # a kept edit stays as it is

    def parse(self, p: dict[str, Any]) -> RestoreArgs:
        return RestoreArgs.parse(self.wb, p)

    def parse_commit(self, p: dict[str, Any]) -> Confirmation[RestoreArgs]:
        plan_hash = plan_hash_field(p)  # a restore's commit has read these first
        keep = KeepEdits.parse(p, markers=False)
        return Confirmation(self.parse(p), plan_hash, keep)

    def derive_job(self, args: RestoreArgs, *, fresh: bool) -> Job[Derived]:
        wb = self.wb
        derived: Derived = yield from derive_restore_job(
            wb.state, wb.ws, wb.store.objects, list(args.paths), args.boundary,
            max_bytes=wb.options.max_file_bytes, dirty=args.dirty, memo=disk_memo(wb, fresh=fresh))
        return derived

    def keeping(self, plan: Derived, keep: KeepEdits) -> Derived:
        return plan.keeping_user_edits(self.wb.state)

    def committing(self, request: Confirmation[RestoreArgs], plan: Derived) -> Commit:
        return Commit(plan.changes, plan.new_state, plan.kept, plan.modes, conversation=False,
                      announce={"operation": "restore", "mode": "files",
                                "boundary": plan.candidate["boundary"]})

    def committed(self, result: dict[str, Any], plan: Derived) -> dict[str, Any]:
        if result.get("status") == "committed":
            result["restored"] = [self.wb.ws.to_uri(rel) for rel, _ in plan.changes]
        return result
