"""The seven-bucket partition, checked against an oracle that is written independently of the code."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnback.effects.partition import BUCKETS, assert_total, inverses_to_run, partition
from turnback.errors import CorruptStore
from turnback.model.steps import SCOPES, STEP_KINDS, Inverse, Step

# ---------------------------------------------------------------------------------------------------
# The oracle. It does not call the module: it restates docs/effects.md as "which buckets does a step
# qualify for" (each bucket judged on its own) and then takes the first qualifying bucket in priority
# order. The scope reading is a literal lookup table.

_SCOPE_WORD = {"host": "H", "crossing": "X", "unknown": "X", "none": "0"}  # anything else: X
_INVERSE_WORD = {"host": "H", "crossing": "X", "unknown": "X", "none": "-"}  # anything else: X
_WRITES_OR_SENDS = {"file-write", "file-delete", "file-move", "network-send"}
_FILES = {"file-write", "file-delete", "file-move"}
_MAY_BE_EMPTY = {"read", "think", "shell", "network-fetch", "other"}
_PRIORITY = ["droppedBeforeCrossing", "crossedCompensated", "provablyEmpty", "restored",
             "wouldCrossOnRewind", "crossedUncompensated", "unrestored"]


def oracle(kind, scope, inverse, held, compensated, restorable, rels) -> str:
    s = _SCOPE_WORD.get(scope, "X")
    if s == "0" and kind in _WRITES_OR_SENDS:
        s = "X"  # "I wrote a file and had no effect" cannot be true
    inv = "-" if inverse is None else _INVERSE_WORD.get(inverse, "X")
    qualifies = {
        "droppedBeforeCrossing": held,
        "crossedCompensated": s == "X" and compensated,
        "provablyEmpty": s == "0" and kind in _MAY_BE_EMPTY and (not rels or kind == "read"),
        "restored": s == "H" and ((kind in _FILES and bool(rels) and restorable)
                                  or (kind == "shell" and bool(rels) and restorable)
                                  or (kind not in _FILES and inv == "H")),
        "wouldCrossOnRewind": inv == "X",
        "crossedUncompensated": s == "X",
        "unrestored": True,
    }
    return next(b for b in _PRIORITY if qualifies[b])


KINDS = STEP_KINDS + ("telepathy",)  # a kind a newer agent might send
ALL_SCOPES = SCOPES + (None, "", "galactic")  # absent as None and "", and an unknown word
INVERSES = (None, "host", "crossing", "unknown")
MATRIX = list(itertools.product(KINDS, ALL_SCOPES, INVERSES, (True, False), (True, False),
                                (True, False), ((), ("a.py",))))


def make(i, kind, scope, inverse, held, rels) -> Step:
    return Step(id=f"s9.{i}", turn=9, kind=kind, scope=scope, rels=list(rels),
                inverse=None if inverse is None else Inverse("undo", inverse), held=held)


def compensator(target: str, n: int) -> Step:
    return Step(id=f"c{n}", turn=10, kind="network-send", scope="crossing", compensates=target)


def test_matrix_one_step_at_a_time():
    for i, (kind, scope, inverse, held, comp, restorable, rels) in enumerate(MATRIX):
        step = make(i, kind, scope, inverse, held, rels)
        steps, log = [step], []
        if comp:  # the compensating step is discarded for even cases, surviving for odd ones
            (steps if i % 2 == 0 else log).append(compensator(step.id, i))
        buckets = partition(steps, restorable=lambda s, r=restorable: r, log=log)
        assert_total(steps, buckets)
        got = [b for b, ids in buckets.items() if step.id in ids]
        want = oracle(kind, scope, inverse, held, comp, restorable, rels)
        assert got == [want], (kind, scope, inverse, held, comp, restorable, rels)


def test_matrix_all_at_once():
    steps, log, covered, want = [], [], set(), {}
    for i, (kind, scope, inverse, held, comp, restorable, rels) in enumerate(MATRIX):
        step = make(i, kind, scope, inverse, held, rels)
        steps.append(step)
        if comp:
            (steps if i % 3 else log).append(compensator(step.id, i))
        if restorable:
            covered.add(step.id)
        want[step.id] = oracle(kind, scope, inverse, held, comp, restorable, rels)
    buckets = partition(steps, restorable=lambda s: s.id in covered, log=log)
    assert_total(steps, buckets)
    assert list(buckets) == list(BUCKETS)
    for name, ids in buckets.items():
        for sid in ids:
            if sid in want:
                assert want[sid] == name, sid
    # the compensators (crossing sends nobody compensates) are crossed and uncompensated
    assert all(sid in buckets["crossedUncompensated"] for sid in (s.id for s in steps)
               if sid.startswith("c"))
    # every bucket is reachable from the matrix
    assert all(buckets[b] for b in BUCKETS)


# -- literal cases, one per decision a reader might question ----------------------------------------

def one(step: Step, *, restorable=True, log=(), runs_inverse=None) -> str:
    buckets = partition([step], restorable=lambda s: restorable, log=list(log),
                        runs_inverse=runs_inverse)
    assert_total([step], buckets)
    [name] = [b for b, ids in buckets.items() if ids]
    return name


def st_(kind, scope, inverse=None, rels=("a.py",), **kw) -> Step:
    return Step(id="s1.0", turn=1, kind=kind, scope=scope, rels=list(rels),
                inverse=None if inverse is None else Inverse("undo", inverse), **kw)


@pytest.mark.parametrize("step,restorable,bucket", [
    (st_("file-write", "host"), True, "restored"),
    (st_("file-write", "host"), False, "unrestored"),  # a capture gap on its path
    (st_("file-write", "host", inverse="host"), False, "unrestored"),  # declared inverse = the file restore
    (st_("file-write", "host", rels=()), True, "unrestored"),  # names nothing: no restore covers it
    (st_("file-write", "none"), True, "crossedUncompensated"),  # impossible claim, read as unknown
    (st_("network-send", "none", rels=()), True, "crossedUncompensated"),
    (st_("read", "none"), True, "provablyEmpty"),  # a read names what it read
    (st_("think", "none", rels=()), True, "provablyEmpty"),
    (st_("shell", "none", rels=()), True, "provablyEmpty"),
    (st_("shell", "none"), True, "unrestored"),  # names paths: not provable
    (st_("telepathy", "none", rels=()), True, "unrestored"),  # unknown kind: cannot vouch for it
    (st_("shell", "host"), True, "restored"),  # its turn's files (the sweep saw them) go back
    (st_("shell", "host", rels=()), True, "unrestored"),  # names nothing it wrote: cannot vouch
    (st_("shell", "host"), False, "unrestored"),  # a gap in what it changed: we cannot undo it
    (st_("shell", "host", inverse="host"), False, "restored"),
    (st_("shell", "host", inverse="crossing"), False, "wouldCrossOnRewind"),
    (st_("shell", "host", inverse="crossing"), True, "restored"),  # files put back, inverse not run
    (st_("network-send", "crossing", inverse="unknown"), True, "wouldCrossOnRewind"),
    (st_("network-send", "crossing", inverse="host"), True, "crossedUncompensated"),
    (st_("network-send", "crossing"), True, "crossedUncompensated"),
    (st_("network-send", "unknown"), True, "crossedUncompensated"),
    (st_("file-write", "unknown"), True, "crossedUncompensated"),  # fail closed even if restorable
    (st_("network-send", "crossing", held=True), True, "droppedBeforeCrossing"),
    (st_("telepathy", "host", inverse="host"), True, "restored"),  # scope, not kind, gates
    (st_("telepathy", "host"), True, "unrestored"),
    (st_("shell", "host", inverse="none"), False, "unrestored"),  # an inverse that does nothing
    (st_("shell", "host", inverse="weird"), False, "wouldCrossOnRewind"),
])
def test_literal_cases(step, restorable, bucket):
    assert one(step, restorable=restorable) == bucket


def test_absent_scope_counts_as_crossing():
    step = Step.from_dict({"id": "s1.0", "turn": 1, "kind": "network-send", "scope": None})
    assert one(step) == "crossedUncompensated"


def test_compensated_crossing_step_whether_compensator_is_discarded_or_surviving():
    sent = st_("network-send", "crossing", rels=())
    refund = Step(id="s2.0", turn=2, kind="network-send", scope="crossing", compensates="s1.0")
    b = partition([sent, refund], restorable=lambda s: True)
    assert b["crossedCompensated"] == ["s1.0"] and b["crossedUncompensated"] == ["s2.0"]
    assert one(sent, log=[refund]) == "crossedCompensated"
    # compensation of a held send: it never left, so it is dropped
    held = st_("network-send", "crossing", rels=(), held=True)
    assert one(held, log=[refund]) == "droppedBeforeCrossing"
    # a compensated host step is not "crossed": host rules apply
    assert one(st_("file-write", "host"), log=[refund]) == "restored"


def test_restorable_is_asked_only_about_host_file_and_shell_steps():
    asked = []
    steps = [st_("network-send", "crossing"), st_("shell", "host"), st_("shell", "unknown"),
             st_("other", "host"), st_("shell", "host", rels=())]
    for i, s in enumerate(steps):
        s.id = f"s1.{i}"
    partition(steps, restorable=lambda s: asked.append(s.id) or True)
    assert asked == ["s1.1"]


def test_runs_inverse_hook_keeps_restored_honest():
    step = st_("shell", "host", inverse="host")
    assert one(step, restorable=False, runs_inverse=lambda s: False) == "unrestored"
    assert one(step, restorable=False, runs_inverse=lambda s: True) == "restored"


def test_inverses_to_run_is_scope_gated_newest_first_and_skips_held():
    steps = [
        Step("s1.0", 1, "file-write", "host", rels=["a"], inverse=Inverse("restore", "host")),
        Step("s1.1", 1, "network-send", "crossing", inverse=Inverse("unsend", "crossing")),
        Step("s1.2", 1, "shell", "host", inverse=Inverse("rm", "unknown")),
        Step("s1.3", 1, "shell", "host", inverse=Inverse("rm", "host")),
        Step("s1.4", 1, "network-send", "crossing", inverse=Inverse("x", "host"), held=True),
        Step("s1.5", 1, "shell", "host", inverse=Inverse("x", "galactic")),
        Step("s1.6", 1, "shell", "host", inverse=Inverse("x", "none")),
        Step("s1.7", 1, "shell", "host"),
        Step("s1.8", 1, "network-send", "crossing", compensates="s1.1"),  # a compensation: never run
    ]
    assert [s.id for s in inverses_to_run(steps)] == ["s1.3", "s1.0"]


def test_duplicate_ids_are_refused():
    a = st_("read", "none")
    with pytest.raises(CorruptStore):
        partition([a, a], restorable=lambda s: True)


def test_assert_total_catches_every_kind_of_mistake():
    a, b = st_("read", "none"), st_("think", "none", rels=())
    b.id = "s1.1"
    good = {name: [] for name in BUCKETS}
    good["provablyEmpty"] = ["s1.0", "s1.1"]
    assert_total([a, b], good)
    for bad in (
        {**good, "provablyEmpty": ["s1.0"]},  # lost one
        {**good, "restored": ["s1.0"]},  # twice
        {**good, "restored": ["s9.9"]},  # not a discarded step
        {**good, "vanished": []},  # unknown bucket
        {k: v for k, v in good.items() if k != "unrestored"},  # a bucket missing
    ):
        with pytest.raises(AssertionError):
            assert_total([a, b], bad)


def test_empty_tail():
    buckets = partition([], restorable=lambda s: True)
    assert buckets == {b: [] for b in BUCKETS}
    assert inverses_to_run([]) == []


# -- property: the partition is total and disjoint for any log ---------------------------------------

_scope = st.one_of(st.sampled_from(SCOPES), st.none(), st.text(max_size=4))
_kind = st.one_of(st.sampled_from(STEP_KINDS), st.text(max_size=6))
_inverse = st.one_of(st.none(), st.builds(Inverse, st.just("undo"), _scope))


@st.composite
def step_lists(draw):
    n = draw(st.integers(0, 30))
    steps = []
    for i in range(n):
        steps.append(Step(
            id=f"s{i // 3 + 1}.{i % 3}", turn=i // 3 + 1, kind=draw(_kind), scope=draw(_scope),
            rels=draw(st.lists(st.sampled_from(["a", "b/c", "d"]), max_size=2)),
            inverse=draw(_inverse), held=draw(st.booleans()),
            compensates=draw(st.one_of(st.none(), st.sampled_from([f"s{j // 3 + 1}.{j % 3}"
                                                                    for j in range(max(n, 1))]))),
        ))
    covered = draw(st.sets(st.sampled_from([s.id for s in steps]) if steps else st.nothing()))
    return steps, covered


@settings(max_examples=300, deadline=None)
@given(step_lists())
def test_random_logs_partition_totally(case):
    steps, covered = case
    buckets = partition(steps, restorable=lambda s: s.id in covered)
    flat = [sid for ids in buckets.values() for sid in ids]
    assert len(flat) == len(set(flat))
    assert set(flat) == {s.id for s in steps}
    assert set(buckets) == set(BUCKETS)
    assert_total(steps, buckets)
    for s in steps:  # and each one agrees with the oracle
        comp = any(o.compensates == s.id for o in steps)
        inv = None if s.inverse is None else (s.inverse.scope or "<absent>")
        want = oracle(s.kind, s.scope, inv, s.held, comp, s.id in covered, s.rels)
        assert s.id in buckets[want]
