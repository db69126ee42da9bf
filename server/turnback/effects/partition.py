"""The effect partition: every discarded step lands in exactly one of seven buckets.

Pure rules over plain data, no I/O. The rewind planner (travel/) calls `partition` for the discarded
tail and `inverses_to_run` for the plan; docs/effects.md states the rules in prose.

Law 5 of the house: scope, not kind, gates inverses. An inverse runs only when its logged scope is
exactly `host`; an absent, unknown or unrecognised scope counts as crossing; compensations are listed,
never fired; held outbound sends are dropped, never sent.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..errors import CorruptStore
from ..model.steps import SCOPES, STEP_KINDS, Step

# The contract's JSON names, in the order the confirmation shows them.
BUCKETS = (
    "restored",
    "droppedBeforeCrossing",
    "crossedUncompensated",
    "crossedCompensated",
    "wouldCrossOnRewind",
    "unrestored",
    "provablyEmpty",
)

# Kinds whose only job is to change a file in the workspace: the file transaction is their inverse.
FILE_KINDS = frozenset({"file-write", "file-delete", "file-move"})
# Kinds that cannot be done without an effect: a claim of scope `none` on them cannot be true, so the
# scope is not believed and is read as `unknown` (which counts as crossing).
EFFECT_KINDS = FILE_KINDS | {"network-send"}
# Known kinds whose claim of scope `none` we take at its word (when they name nothing, or for `read`,
# whose names are what it read). Unknown kinds are not here: we cannot vouch for a kind we do not know.
EMPTY_CAPABLE_KINDS = frozenset(STEP_KINDS) - EFFECT_KINDS
# A `read` names the paths it read; naming them does not make it effectful.
NAMES_ARE_INPUTS_KINDS = frozenset({"read"})


# -- small predicates ------------------------------------------------------------------------------

def effective_scope(step: Step) -> str:
    """The scope the rules act on: the logged one, unless it is absent, unrecognised or impossible."""
    scope = step.scope
    if scope not in SCOPES:  # absent (None, ""), or a word we do not know
        return "unknown"
    if scope == "none" and step.kind in EFFECT_KINDS:
        return "unknown"  # a write, delete, move or send that claims no effect: the claim is false
    return scope


def crosses(scope: str) -> bool:
    """Whether an (effective) scope left the machine, or might have: everything but host and none."""
    return scope not in ("host", "none")


def inverse_scope(step: Step) -> str | None:
    """The logged scope of the step's inverse, normalised; None when there is no inverse at all."""
    if step.inverse is None:
        return None
    scope = step.inverse.scope
    return scope if scope in SCOPES else "unknown"


def has_host_inverse(step: Step) -> bool:
    return inverse_scope(step) == "host"


def has_crossing_inverse(step: Step) -> bool:
    """An inverse that could leave the machine (crossing, unknown, absent): we refuse to run it.

    An inverse of scope `none` does nothing, so it undoes nothing: it counts as no inverse."""
    scope = inverse_scope(step)
    return scope is not None and crosses(scope)


def compensated_ids(steps: Iterable[Step], log: Iterable[Step] = ()) -> set[str]:
    """Ids of steps that some logged step (discarded or surviving) says it compensates."""
    out: set[str] = set()
    for s in list(steps) + list(log):
        if s.compensates:
            out.add(s.compensates)
    return out


# -- the ordered decision list ---------------------------------------------------------------------

def bucket_of(step: Step, *, compensated: bool, restorable: Callable[[Step], bool],
              runs_inverse: Callable[[Step], bool] | None = None) -> str:
    """The one bucket of one discarded step. The first rule that matches wins."""
    scope = effective_scope(step)
    # 1. A held outbound send has not left: the rewind drops it from the queue, nothing crossed.
    if step.held:
        return "droppedBeforeCrossing"
    # 2. It crossed (or might have), and a logged step compensates it. The compensation is listed,
    #    never fired by us; the compensating step is bucketed on its own by these same rules.
    if crosses(scope) and compensated:
        return "crossedCompensated"
    # 3. It claims no effect and the claim is believable: a known effect-free kind naming nothing
    #    (a read may name what it read).
    if (scope == "none" and step.kind in EMPTY_CAPABLE_KINDS
            and (not step.rels or step.kind in NAMES_ARE_INPUTS_KINDS)):
        return "provablyEmpty"
    # 4. A host file step that names paths, all of which the file transaction puts back.
    if scope == "host" and step.kind in FILE_KINDS and step.rels and restorable(step):
        return "restored"
    # 4b. A host shell step that names the files it wrote (the scope table read them off its
    #     redirections): restored when the file restore puts those, and all its turn changed, back.
    if scope == "host" and step.kind == "shell" and step.rels and restorable(step):
        return "restored"
    # 5. Any other host step whose inverse is host-confined: the rewind runs that inverse. For file
    #    kinds the host inverse IS the file restore, already answered by rule 4, so they never get here
    #    with a claim of their own.
    if (scope == "host" and step.kind not in FILE_KINDS and has_host_inverse(step)
            and (runs_inverse is None or runs_inverse(step))):
        return "restored"
    # 6. Its inverse could leave the machine: we refuse to run it.
    if has_crossing_inverse(step):
        return "wouldCrossOnRewind"
    # 7. It crossed (or might have) and nothing compensates it.
    if crosses(scope):
        return "crossedUncompensated"
    # 8. The fall-through: host steps we cannot put back, unknown kinds, unbelievable empty claims.
    return "unrestored"


def partition(steps: list[Step], *, restorable: Callable[[Step], bool], log: Iterable[Step] = (),
              runs_inverse: Callable[[Step], bool] | None = None) -> dict[str, list[str]]:
    """Every step id of the discarded tail, in exactly one bucket (ids keep log order per bucket).

    `restorable(step)` is supplied by the rewind planner: True when the file restore of this rewind
    puts back every path the step names. `log` is any further logged steps (for example the surviving
    ones) whose `compensates` field counts; the discarded steps themselves always count.
    `runs_inverse`, when given, says whether the rewind really executes a host inverse of a non-file
    step; by default every host inverse in `inverses_to_run` is taken to run."""
    seen: set[str] = set()
    for s in steps:
        if s.id in seen:
            raise CorruptStore(f"step {s.id} is logged twice", data={"step": s.id})
        seen.add(s.id)
    comp = compensated_ids(steps, log)
    out: dict[str, list[str]] = {b: [] for b in BUCKETS}
    for s in steps:
        out[bucket_of(s, compensated=s.id in comp, restorable=restorable,
                      runs_inverse=runs_inverse)].append(s.id)
    return out


def inverses_to_run(steps: list[Step]) -> list[Step]:
    """The steps whose inverse the rewind may run: inverse scope exactly `host`, newest first.

    Held steps are left out: they never ran, so undoing them would itself be an effect. Compensations
    are never here (a compensation is a forward step, not an inverse). In turnback the host inverse
    actually executed is the file restore, done by the file transaction."""
    return [s for s in reversed(steps) if has_host_inverse(s) and not s.held]


def assert_total(steps: list[Step], buckets: dict[str, list[str]]) -> None:
    """Raise AssertionError unless every step id is in exactly one known bucket and nothing else is."""
    problems: list[str] = []
    unknown = sorted(set(buckets) - set(BUCKETS))
    if unknown:
        problems.append(f"unknown buckets {unknown}")
    missing_names = [b for b in BUCKETS if b not in buckets]
    if missing_names:
        problems.append(f"buckets absent {missing_names}")
    ids = [s.id for s in steps]
    if len(set(ids)) != len(ids):
        problems.append("duplicate step ids in the log")
    where: dict[str, list[str]] = {}
    for name, members in buckets.items():
        for sid in members:
            where.setdefault(sid, []).append(name)
    doubled = {sid: names for sid, names in where.items() if len(names) > 1}
    if doubled:
        problems.append(f"ids in more than one place {doubled}")
    lost = [sid for sid in ids if sid not in where]
    if lost:
        problems.append(f"ids in no bucket {lost}")
    extra = sorted(set(where) - set(ids))
    if extra:
        problems.append(f"ids that are not discarded steps {extra}")
    if problems:
        raise AssertionError("effect partition is not total: " + "; ".join(problems))
