"""Slices, the batch child, the cache, the workbench wiring, plain file stores."""

from __future__ import annotations

import subprocess
import sys

import cbor2

from turnback.collect import Collector, HeadCache
from turnback.collect.collector import MAX_STEPS
from turnback.collect.scan import facts_of, observe_many
from turnback.workbench import Workbench

from .conftest import age_objects, assert_sound, expected_live, objects, open_wb, turn


def _many_heads(ws, turns=6, edits=6, **kw):
    wb = open_wb(ws, **kw)
    for i in range(turns):
        turn(wb, ws, f"p{i}", [(f"f{j % 3}.txt", f"{i}.{j}\n") for j in range(edits)])
    return wb


def _drive(job):
    yields = []
    try:
        while True:
            yields.append(next(job))
    except StopIteration as done:
        return yields, done.value


def test_many_heads_many_slices_each_of_few_steps(ws):
    wb = _many_heads(ws)
    heads = len(wb.store.heads.list_seqs())
    assert heads > 30
    age_objects(wb.store)
    yields, stats = _drive(wb.collection.job(use_child=False))
    assert stats["headsRetired"] >= heads - 8
    assert len(yields) >= heads // MAX_STEPS  # the cold scan alone takes this many slices
    assert stats["slices"] == len(yields) + 1
    assert 0 < stats["maxSliceSteps"] <= MAX_STEPS
    assert {y["phase"] for y in yields} >= {"scan", "retire", "mark", "sweep"}
    assert all(set(y) == {"phase", "done", "total"} for y in yields)
    assert objects(wb.store) == expected_live(wb.store, wb.state)
    wb.close()


def test_batch_child_observations_equal_an_in_process_scan(ws):
    wb = _many_heads(ws, turns=3)
    store = wb.store
    r = subprocess.run([sys.executable, "-m", "turnback.collect.child", str(store.path)],
                       input=b"", capture_output=True, check=True)
    doc = cbor2.loads(r.stdout)
    assert doc["v"] == 1 and doc["obs"] == observe_many(store.path)
    some = store.heads.list_seqs()[::3]
    r = subprocess.run([sys.executable, "-m", "turnback.collect.child", str(store.path)],
                       input=cbor2.dumps(some), capture_output=True, check=True)
    assert cbor2.loads(r.stdout)["obs"] == observe_many(store.path, some)
    assert [o[0] for o in observe_many(store.path, some)] == some
    wb.close()


def test_cold_scan_over_sixteen_heads_goes_to_the_child_and_warms_the_cache(ws):
    wb = _many_heads(ws, turns=4)
    assert len(wb.store.heads.list_seqs()) > 16
    collector = Collector(wb, HeadCache.load(wb.store), grace_heads=1000, child_threshold=16)
    yields, stats = _drive(collector.job())
    assert stats["child"] and stats["coldHeads"] == len(wb.store.heads.list_seqs())
    # the child's observations are what the parent cached, and they equal an in-process scan
    cached = {s: f for s, f in collector.cache.facts.items()}
    assert cached == {o[0]: facts_of(o) for o in observe_many(wb.store.path)}
    assert stats["cacheBytes"] > 0 and stats["cacheBytes"] < 2000 * len(cached)
    # the cache is on disk: a fresh collector scans warm, in process
    again = Collector(wb, HeadCache.load(wb.store), grace_heads=1000)
    _y, stats2 = _drive(again.job())
    assert stats2["coldHeads"] == 0 and not stats2["child"]
    wb.close()


def test_child_with_few_uncached_heads_is_not_launched(ws):
    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "1\n")])
    assert not wb.collection.run()["child"]
    wb.close()


def test_a_new_head_between_slices_adds_an_observation(ws):
    wb = _many_heads(ws, turns=2)
    age_objects(wb.store)
    job = wb.collection.job(use_child=False)
    phases = []
    while True:
        y = next(job)
        phases.append(y["phase"])
        if y["phase"] == "sweep" or (y["phase"] == "mark" and phases.count("mark") > 1):
            break
    # a turn published meanwhile: its head is kept and its objects marked before any deletion
    turn(wb, ws, "meanwhile", [("new.txt", "published during collection\n")])
    new_head = wb.book.head
    _y, stats = _drive(job)
    assert stats["observations"] >= 1
    assert new_head.seq in wb.store.heads.list_seqs()
    assert_sound(wb.store.path)
    wb.close()


def test_collection_feature_wiring(ws):
    events = []
    wb = open_wb(ws)
    wb.events.subscribe(lambda name, payload: events.append((name, payload.get("collecting"))))
    assert not wb.collection.pending  # a fresh store has nothing published: no resume
    turn(wb, ws, "one", [("a.txt", "1\n")])
    assert wb.collection.pending and "settlement" in wb.collection.reasons
    job = wb.collection.job()
    next(job)
    assert wb.collecting and wb.status()["collecting"]
    wb.collection.schedule("late-trigger")  # arrives while running: stays pending
    stats = wb.run(job)
    assert not wb.collecting and set(stats) >= {"headsRetired", "objectsDeleted", "bytesFreed",
                                                "bytesKept", "slices", "maxSliceMs"}
    assert wb.collection.reasons == {"late-trigger"}
    assert ("status", True) in events and events[-1] == ("status", False)
    assert wb.collection.run(None)["headsRetired"] == 0 and not wb.collection.pending
    wb.close()
    wb = Workbench.open(ws, wb.options)
    assert wb.collection.reasons == {"resume"}  # resume schedules collection at open
    wb.close()


def test_observer_cannot_collect(ws):
    import pytest

    from turnback.errors import NotOwner

    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "1\n")])
    other = Workbench.open(ws, wb.options)
    assert not other.is_owner and not other.collection.pending
    with pytest.raises(NotOwner):
        other.collection.run()
    assert not other.collecting
    wb.close()


def test_plain_file_store_collects_after_the_sidecar_commit(ws):
    wb = open_wb(ws, store_kind="pid")
    stray = wb.store.objects.put(b"nothing references this")
    age_objects(wb.store)
    assert wb.collection.run()["skipped"]  # no sidecar commit yet: nothing is deleted
    assert wb.store.objects.has(stray)
    turn(wb, ws, "one", [("a.txt", "one\n"), ("a.txt", "two\n")])
    turn(wb, ws, "two", [("a.txt", "three\n")])
    old_sidecar_objects = objects(wb.store)
    age_objects(wb.store)
    stats = wb.collection.run()
    assert stats["headsRetired"] == 0 and stats["objectsDeleted"] > 0
    assert not wb.store.objects.has(stray)
    assert objects(wb.store) == expected_live(wb.store, wb.state) & old_sidecar_objects
    wb.close()
    assert_sound(wb.store.path)


def test_lost_lease_stops_the_collection_before_its_next_mutation(ws):
    import pytest

    from turnback.errors import NotOwner
    from turnback.store.ownership.lease import Lease

    from .conftest import expire_lease

    wb = _many_heads(ws, turns=3)
    age_objects(wb.store)
    job = wb.collection.job(use_child=False)
    while next(job)["phase"] != "retire":
        pass
    expire_lease(wb.store.path)
    thief = Lease.acquire(wb.store.path, ttl=60.0)
    before = (wb.store.heads.list_seqs(), objects(wb.store))
    with pytest.raises(NotOwner):
        wb.run(job)
    assert (wb.store.heads.list_seqs(), objects(wb.store)) == before
    assert not wb.collecting and wb.collection.pending
    thief.release()
