"""A collection job runs with cyclic gc off and freezes what it leaves (lsp/slices.py), so no full
gc pass over its structures lands on the loop; the garbage cycles it leaves frozen are reclaimed by
`reclaim_frozen`, which the server calls after a quiet minute."""

from __future__ import annotations

import gc
import weakref

import pytest

from turnback.lsp import slices


class Node:
    def __init__(self):
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def thawed():
    yield
    gc.unfreeze()  # leave this test process as it was
    gc.enable()


def test_no_collection_inside_and_the_leftover_cycle_is_reclaimed_later():
    passes = []

    def count(phase, info):
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(count)
    try:
        with slices.cycles_deferred():
            garbage = weakref.ref(Node())
            junk = [[i] for i in range(50_000)]  # enough allocations to trigger gc if it were on
            del junk
            assert not gc.isenabled()
            inside = len(passes)
        assert inside == 0  # nothing ran while the job did
        assert gc.isenabled() and gc.get_freeze_count() > 0
        gc.collect()
        assert garbage() is not None  # frozen with the job's survivors: out of the collector's sight
        assert slices.reclaim_frozen() is True
        assert garbage() is None  # ... until the quiet-time pass
        assert slices.reclaim_frozen() is False  # once per deferred job
    finally:
        gc.callbacks.remove(count)


def test_a_disabled_gc_stays_disabled():
    gc.disable()
    with slices.cycles_deferred():
        pass
    assert not gc.isenabled()
    assert slices.reclaim_frozen() is False  # never turns gc on behind the caller's back
