"""Decoded state objects kept by digest (timeline/parsed.py): Redo's listing reads no reference list,
decodes each shard once, and a second listing reads no object at all; the cache stays within its
weight and forgets what the collector removed."""

from __future__ import annotations

import cbor2
from sessionkit import Agent

from turnback.timeline.parsed import ParsedCache


def _session(root) -> Agent:
    a = Agent(root)
    for n in range(1, 7):
        a.turn(f"turn {n}", {f"src/m{i}.py": f"v{n} {i}\n" for i in range(n, n + 3)})
    for k in (5, 3):
        boundary = {"kind": "beforePrompt", "turn": k}
        plan = a.wb.rewind.prepare({"boundary": boundary})
        assert a.wb.rewind.commit({"boundary": boundary, "planHash": plan["planHash"]})["status"] \
            == "committed"
    return a


def test_a_second_listing_reads_no_object_and_the_first_reads_no_reference_list(tmp_path):
    a = _session(tmp_path)
    try:
        a.reopen()  # a fresh process: nothing decoded yet
        objects = a.wb.store.objects
        reads: list[str] = []
        real_get = objects.get

        def counted(digest):
            reads.append(digest)
            return real_get(digest)

        objects.get = counted
        first = a.wb.redo.list({"all": True})
        kinds = {cbor2.loads(real_get(d))["t"] for d in reads}
        assert "refs" not in kinds, "a reference list was read"
        assert kinds <= {"body", "session", "known"}, kinds
        assert len(reads) == len(set(reads)), "an object was read twice in one listing"
        reads.clear()
        second = a.wb.redo.list({"all": True})
        assert second == first
        assert reads == []
    finally:
        a.close()


def test_the_cache_keeps_to_its_weight_and_forgets_on_request():
    cache = ParsedCache(max_weight=10)
    for i in range(6):
        cache.put(f"d{i}", {"i": i}, 3)
    assert len(cache) == 3 and cache.get("d0") is None and cache.get("d5") == {"i": 5}
    cache.put("huge", {}, 11)  # past the whole budget: never kept
    assert cache.get("huge") is None
    cache.forget(["d5"])
    assert cache.get("d5") is None
    assert cache.drop_if_idle(idle=3600) == 0 and len(cache) == 2
    assert cache.drop_if_idle(idle=0) == 6 and len(cache) == 0
