"""Selective restore (`turnback/restore/prepare|commit`), and the parameters rewind's modes share.

Thin wiring of `travel/restore.py` into the workbench: the same shared commit tail as a rewind
(`commit.commit_tail_job`: the file transaction, the report, the notices), but no epoch, since the
conversation does not change, and `restored` in the result.
"""

from __future__ import annotations

from ..errors import InvalidParams
from ..travel import upstream
from ..travel.restore import derive_restore_job
from ..travel.rewind import MODES
from . import params as P
from .agentlinks import annotate
from .commit import commit_tail_job, disk_memo


def dirty_rels(wb, p: dict) -> set[str]:
    """`dirty`: the URIs an editor holds unsaved changes of (the server is told, never guesses)."""
    return {wb.ws.to_rel(uri) for uri in P.str_list(p, "dirty", default=[])}


def rewind_args(wb, p: dict) -> tuple[dict, str, set[str]]:
    """(boundary, mode, dirty paths) of a `turnback/rewind/prepare|commit` request."""
    return (P.field(p, "boundary", dict), P.field(p, "mode", str, default="all", choices=MODES),
            dirty_rels(wb, p))


def left_the_machine_job(wb, candidate: dict):
    """The candidate, its files marked `pushed` where the change being undone is committed and pushed
    (travel/upstream.py): only for a confirmation, never part of the plan or its hash."""
    if candidate.get("noop") or candidate.get("mode") == "conversation":
        return candidate
    return (yield from upstream.annotate_job(candidate, wb.ws.root,
                                             max_bytes=wb.options.max_file_bytes))


class RestoreFeature:
    def __init__(self, wb):
        self.wb = wb

    def _derive_job(self, p: dict, *, fresh: bool = False):
        wb = self.wb
        paths = P.field(p, "paths", list)
        if not paths or not all(isinstance(x, str) for x in paths):
            raise InvalidParams("paths must be a non-empty list of file URIs or workspace-relative "
                                "paths and globs", data={"field": "paths"})
        return derive_restore_job(wb.state, wb.ws, wb.store.objects, paths,
                                  P.field(p, "boundary", dict), max_bytes=wb.options.max_file_bytes,
                                  dirty=dirty_rels(wb, p), memo=disk_memo(wb, fresh=fresh))

    def prepare(self, params) -> dict:
        return self.wb.run(self.prepare_job(params))

    def prepare_job(self, params):
        p = P.obj(params)
        settled = yield from self.wb.turns.settle_idle_job("restore")  # an idle agent turn
        derived = yield from self._derive_job(p, fresh=True)
        return annotate(dict((yield from left_the_machine_job(self.wb, derived.candidate))), settled)

    def commit(self, params) -> dict:
        return self.wb.run(self.commit_job(params))

    def commit_job(self, params):
        p = P.obj(params)
        plan = P.field(p, "planHash", str)
        keep = P.field(p, "keepUserEdits", bool, default=False)
        wb = self.wb
        wb.book.require_owner()
        settled = yield from wb.turns.settle_idle_job("restore")
        derived = yield from self._derive_job(p)
        if derived.candidate["planHash"] != plan:
            return {"status": "stale", "candidate": annotate(dict(derived.candidate), settled)}
        if derived.noop:
            return {"status": "nothing-to-do"}
        if keep:
            derived = derived.keeping_user_edits(wb.state)
        result = yield from commit_tail_job(wb, "restore", derived.changes, derived.new_state,
                                             derived.kept, derived.modes, conversation=False,
                                             announce={"operation": "restore", "mode": "files",
                                                       "boundary": derived.candidate["boundary"]})
        if result.get("status") == "committed":
            result["restored"] = [wb.ws.to_uri(rel) for rel, _ in derived.changes]
        return result
