"""Rewind (`turnback/rewind/prepare|commit`): the confirmed-operation skeleton (confirmed.py) with
what a rewind derives (travel/rewind.py, after finding the edits turnback has not captured yet),
shows (each file marked where its change has left the machine) and commits (an epoch unless only
files go back)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..capture.statcache import StatCache
from ..travel.diskmemo import DiskMemo
from ..travel.rewind import MODES, Derived, derive_job
from ..travel.uncaptured import uncaptured_job
from . import params as P
from .commit import disk_memo
from .confirmed import CandidateOperation, Commit, Confirmation, Job, KeepEdits, dirty_rels


@dataclass(frozen=True)
class RewindArgs:
    boundary: dict[str, Any]  # checked against the session by the derivation (travel/rewind.py)
    mode: str  # all | files | conversation
    dirty: frozenset[str]  # paths an editor holds unsaved changes of

    @classmethod
    def parse(cls, wb: Any, p: dict[str, Any]) -> RewindArgs:
        return cls(P.field(p, "boundary", dict), P.field(p, "mode", str, default="all", choices=MODES),
                   dirty_rels(wb, p))


def uncaptured_edits_job(wb: Any, memo: DiskMemo | None = None) -> Job[Any]:
    """Known paths changed on disk since turnback last captured them (travel/uncaptured.py): a
    healthy watcher names where to look, else every known path, with the stat cache's help."""
    watcher = getattr(wb, "watcher", None)
    only = watcher.pending() if watcher is not None else None
    kept = getattr(wb, "_stat_cache", None)
    cache = kept.cache if kept is not None and kept.cache is not None and not kept.partial else None
    if cache is None and only is None:
        cache = StatCache.load(wb.store.cache_dir / "stat.cbor")
    return (yield from uncaptured_job(wb.state, wb.ws, wb.store.objects.hasher,
                                      max_bytes=wb.options.max_file_bytes, cache=cache, only=only,
                                      memo=memo))


class RewindFeature(CandidateOperation[RewindArgs]):
    name = "rewind"

    def parse(self, p: dict[str, Any]) -> RewindArgs:
        return RewindArgs.parse(self.wb, p)

    def derive_job(self, args: RewindArgs, *, fresh: bool) -> Job[Derived]:
        wb = self.wb
        memo = disk_memo(wb, fresh=fresh)
        edits = yield from uncaptured_edits_job(wb, memo)
        derived: Derived = yield from derive_job(
            wb.state, wb.ws, wb.store.objects, args.boundary, max_bytes=wb.options.max_file_bytes,
            mode=args.mode, dirty=args.dirty, uncaptured=edits, memo=memo)
        return derived

    def keeping(self, plan: Derived, keep: KeepEdits) -> Derived:
        # `conflictMarkers`: a conflicting file gets conflict markers instead of staying as it is
        return plan.keeping_user_edits(self.wb.state, markers=keep.markers)

    def committing(self, request: Confirmation[RewindArgs], plan: Derived) -> Commit:
        args = request.args
        return Commit(plan.changes, plan.new_state, plan if request.keep.keep else None, plan.modes,
                      conversation=args.mode != "files",
                      announce={"operation": "rewind", "mode": args.mode, "boundary": args.boundary})
