"""One skeleton for every confirmed operation: rewind, Redo, restore and fork.

Each is two requests. `prepare` settles an idle agent turn, derives the plan afresh and shows it (its
hash included); `commit` (fork: `confirm`) parses the same request plus the hash the person saw,
settles, derives again, and answers `stale` with the fresh plan when the hash no longer matches, so
nothing is ever done that was not shown. Only then are the user's edits kept (`keepUserEdits`) and the
plan committed. The steps are written here once (`ConfirmedOperation`); an operation supplies what
it parses (a typed, frozen parameter object), what it derives, what it shows and what it commits, each
in its own module (rewind.py, redo.py, restore.py, fork.py). The parameters are read once, before
anything else, with the stable `invalid-params` code the protocol has always used for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generator, Generic, TypeVar

from ..errors import InvalidParams
from ..travel import upstream
from ..travel.rewind import Derived
from . import params as P
from .agentlinks import annotate
from .commit import commit_tail_job

T = TypeVar("T")
Job = Generator[Any, Any, T]  # a job the workbench runs in slices (`Workbench.run`)
ArgsT = TypeVar("ArgsT")
PlanT = TypeVar("PlanT")


@dataclass(frozen=True)
class KeepEdits:
    """`keepUserEdits`, and `conflictMarkers` where the operation writes them (rewind, fork): the
    one reader of both. Markers are a way of keeping a conflicting edit, so alone they mean nothing,
    and a flag that means nothing is refused."""

    keep: bool = False
    markers: bool = False

    @classmethod
    def parse(cls, p: dict[str, Any], *, markers: bool) -> KeepEdits:
        keep = P.field(p, "keepUserEdits", bool, default=False)
        if not markers:  # Redo and restore keep an edit as it is: they read no markers
            return cls(keep)
        with_markers = P.field(p, "conflictMarkers", bool, default=False)
        if with_markers and not keep:
            raise InvalidParams("conflictMarkers says how a kept edit that conflicts is written: it "
                                "goes with keepUserEdits", data={"field": "conflictMarkers"})
        return cls(keep, with_markers)


@dataclass(frozen=True)
class Confirmation(Generic[ArgsT]):
    """A commit request: the operation's own parameters, the hash of the plan the person saw, and
    whether their edits are kept."""

    args: ArgsT
    plan_hash: str
    keep: KeepEdits


def plan_hash_field(p: dict[str, Any], *, alias: str | None = None) -> str:
    """`planHash`, the plan hash's one name on the wire; `alias` is an older name still read for
    clients already out (fork's `hash`), when `planHash` is not sent."""
    if alias is not None and p.get("planHash") is None and p.get(alias) is not None:
        return str(P.field(p, alias, str))
    return str(P.field(p, "planHash", str))


def dirty_rels(wb: Any, p: dict[str, Any]) -> frozenset[str]:
    """`dirty`: the URIs an editor holds unsaved changes of (the server is told, never guesses)."""
    return frozenset(wb.ws.to_rel(uri) for uri in P.str_list(p, "dirty", default=[]))


def left_the_machine_job(wb: Any, candidate: dict[str, Any]) -> Job[dict[str, Any]]:
    """The candidate, its files marked `pushed` where the change being undone is committed and pushed
    (travel/upstream.py): only for a confirmation, never part of the plan or its hash."""
    if candidate.get("noop") or candidate.get("mode") == "conversation":
        return candidate
    marked: dict[str, Any] = yield from upstream.annotate_job(candidate, wb.ws.root,
                                                              max_bytes=wb.options.max_file_bytes)
    return marked


@dataclass(frozen=True)
class Commit:
    """What a plan commits through the shared tail (workbench/commit.py): the file transaction's
    changes and new state, what keeping the user's edits made, and what `turnback/rewound` says."""

    changes: list[tuple[str, Any]]
    new_state: Any
    kept: Any
    modes: Any
    conversation: bool
    announce: dict[str, Any]


class ConfirmedOperation(Generic[ArgsT, PlanT]):
    """prepare -> settle -> derive -> show; commit -> settle -> derive -> compare hash -> stale ->
    keep the user's edits -> commit. Subclasses supply the steps below the line."""

    name: ClassVar[str]  # its settle, its transaction and its notices say this
    stale_key: ClassVar[str] = "candidate"  # where a stale answer carries the fresh plan
    markers: ClassVar[bool] = True  # whether it reads `conflictMarkers`

    def __init__(self, wb: Any) -> None:
        self.wb = wb

    # -- the skeleton ------------------------------------------------------------------------------
    def prepare(self, params: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.wb.run(self.prepare_job(params))
        return result

    def prepare_job(self, params: Any) -> Job[dict[str, Any]]:
        args = self.parse(P.obj(params))
        self.check(args)
        settled = yield from self.wb.turns.settle_idle_job(self.name)  # an idle agent turn
        plan = yield from self.derive_job(args, fresh=True)
        shown = yield from self.announce_job(plan)
        return annotate(dict(shown), settled)

    def commit(self, params: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.wb.run(self.commit_job(params))
        return result

    def commit_job(self, params: Any) -> Job[dict[str, Any]]:
        request = self.parse_commit(P.obj(params))
        self.wb.book.require_owner()
        self.check(request.args)
        request = self.check_commit(request)
        settled = yield from self.wb.turns.settle_idle_job(self.name)
        plan = yield from self.derive_job(request.args, fresh=False)
        shown = annotate(dict(self.shown(plan)), settled)
        refused = self.refusal(shown)
        if refused is not None:
            return refused
        if shown["planHash"] != request.plan_hash:
            return {"status": "stale", self.stale_key: shown}
        if self.is_noop(plan):
            return {"status": "nothing-to-do"}  # the plan is the current state: no epoch
        if request.keep.keep:
            plan = self.keeping(plan, request.keep)
        return (yield from self.commit_plan_job(request, plan, shown))

    def parse_commit(self, p: dict[str, Any]) -> Confirmation[ArgsT]:
        """The operation's parameters, then `planHash`, then the keep flags (the order a request
        with several faults has always been answered in)."""
        args = self.parse(p)
        plan_hash = plan_hash_field(p)
        return Confirmation(args, plan_hash, KeepEdits.parse(p, markers=self.markers))

    def commit_plan_job(self, request: Confirmation[ArgsT], plan: PlanT,
                        shown: dict[str, Any]) -> Job[dict[str, Any]]:
        """The plan through the shared tail: the file transaction, its report and notices."""
        c = self.committing(request, plan)
        result: dict[str, Any] = yield from commit_tail_job(
            self.wb, self.name, c.changes, c.new_state, c.kept, c.modes,
            conversation=c.conversation, announce=c.announce)
        return self.committed(result, plan)

    # -- what each operation supplies ------------------------------------------------------------
    def parse(self, p: dict[str, Any]) -> ArgsT:
        raise NotImplementedError

    def derive_job(self, args: ArgsT, *, fresh: bool) -> Job[PlanT]:
        """The plan: `fresh` for a preparation (its disk memo starts afresh), else the commit's."""
        raise NotImplementedError

    def shown(self, plan: PlanT) -> dict[str, Any]:
        """What the person is shown, its hash under `planHash`."""
        raise NotImplementedError

    def announce_job(self, plan: PlanT) -> Job[dict[str, Any]]:
        """A preparation's answer: what is shown, plus what is said but never hashed."""
        return self.shown(plan)
        yield  # a job

    def check(self, args: ArgsT) -> None:
        """Refusals before anything is settled or derived."""

    def check_commit(self, request: Confirmation[ArgsT]) -> Confirmation[ArgsT]:
        """A commit's own refusals before anything is settled; the request with what they found
        (fork: the worktree's folder, checked)."""
        return request

    def refusal(self, shown: dict[str, Any]) -> dict[str, Any] | None:
        """An answer that refuses the plan whatever its hash (fork's refusal)."""
        return None

    def is_noop(self, plan: PlanT) -> bool:
        return False

    def keeping(self, plan: PlanT, keep: KeepEdits) -> PlanT:
        """The plan with the user's edits carried onto it (travel/user_edits.py)."""
        raise NotImplementedError

    def committing(self, request: Confirmation[ArgsT], plan: PlanT) -> Commit:
        raise NotImplementedError

    def committed(self, result: dict[str, Any], plan: PlanT) -> dict[str, Any]:
        """The answer, once the tail has run (restore adds what it restored)."""
        return result


class CandidateOperation(ConfirmedOperation[ArgsT, Derived]):
    """An operation whose plan is a candidate (travel/rewind.py's `Derived`: rewind, restore): it
    shows the candidate, marks in a preparation what has left the machine, and does nothing when the
    candidate is the current state."""

    def shown(self, plan: Derived) -> dict[str, Any]:
        return plan.candidate

    def announce_job(self, plan: Derived) -> Job[dict[str, Any]]:
        return (yield from left_the_machine_job(self.wb, plan.candidate))

    def is_noop(self, plan: Derived) -> bool:
        return plan.noop  # the boundary is the current state
