"""Property: after a collection of any session, no retained head misses an object, the kept heads
are exactly what the rules keep, and no unreferenced object older than the scan survives."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from .conftest import age_objects, assert_sound, expected_live, objects, open_wb, rewind

TEXTS = ["alpha\n", "beta\n", "gamma\n", "delta\n"]

action = st.one_of(
    st.tuples(st.just("turn"), st.lists(st.tuples(st.sampled_from(["a.txt", "b.txt", "d/c.txt"]),
                                                  st.sampled_from(TEXTS)), min_size=0, max_size=3),
              st.booleans()),
    st.tuples(st.just("loose"), st.sampled_from(TEXTS)),
    st.tuples(st.just("rewind"), st.integers(min_value=1, max_value=6)),
)


def _scratch() -> Path:
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="tb-prop-", dir=base))


def _rules(records, grace_heads):
    """The retention rules, restated independently of collect/retention.py."""
    seqs = sorted(records)
    keep = {seqs[-1]} if seqs else set()
    groups = {}
    for s in seqs:
        if records[s].settled:
            groups[(records[s].turn_count, records[s].fork_point)] = s
    keep |= set(groups.values())
    if grace_heads:
        keep |= set(seqs[-grace_heads:])
    return keep


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(action, min_size=1, max_size=7), grace_heads=st.integers(0, 3),
       running=st.booleans(), use_child=st.booleans())
def test_collection_keeps_exactly_what_is_reachable(actions, grace_heads, running, use_child):
    scratch = _scratch()
    try:
        ws = scratch / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("start\n")
        wb = open_wb(ws, grace_heads=grace_heads)
        for a in actions:
            if a[0] == "turn":
                n = wb.run(wb.turns.begin_job({"prompt": "p"}))["turn"]
                for rel, text in a[1]:
                    (ws / rel).parent.mkdir(exist_ok=True)
                    (ws / rel).write_text(text)
                    wb.turns.capture({"uris": [(ws / rel).as_uri()]})
                wb.turns.step({"turn": n, "kind": "shell", "scope": "host", "result": f"out {a[1]}"})
                wb.run(wb.turns.settle_job({"turn": n, "status": "settled" if a[2] else "cancelled"}))
            elif a[0] == "loose":
                (ws / "a.txt").write_text(a[1])
                wb.turns.capture({"uris": [(ws / "a.txt").as_uri()]})
            elif a[0] == "rewind" and wb.state.turn_count >= 1:
                rewind(wb, min(a[1], wb.state.turn_count))
        if running:  # a turn in flight: what it captured is pinned by the journal only
            wb.options.publish_interval = 3600.0
            n = wb.run(wb.turns.begin_job({"prompt": "running"}))["turn"]
            (ws / "a.txt").write_text("in flight\n")
            wb.turns.capture({"uris": [(ws / "a.txt").as_uri()]})
        wb.store.objects.put(b"stray")
        records = {s: wb.store.heads.read(s) for s in wb.store.heads.list_seqs()}
        age_objects(wb.store)
        stats = wb.collection.run() if not use_child else wb.run(wb.collection.job(child_threshold=0))
        if not records:  # nothing published yet: a collection deletes nothing
            assert stats["skipped"] and stats["objectsDeleted"] == 0
            wb.close()
            return
        assert not stats["skipped"]
        assert set(wb.store.heads.list_seqs()) == _rules(records, grace_heads)
        assert objects(wb.store) == expected_live(wb.store, wb.state)
        assert_sound(wb.store.path)
        if running:
            wb.run(wb.turns.settle_job({"turn": n}))
        wb.close()
        assert_sound(wb.store.path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
