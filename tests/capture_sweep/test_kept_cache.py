"""The stat cache on disk (version 2, packed; version 1 still loads) and between sweeps: a live
owner whose watcher is healthy spills it after a full walk and holds only what it swept since; the
next full walk and the close lay those entries over the file, so nothing it learnt is lost."""

from __future__ import annotations

import os

from turnback.capture.sealed import seal
from turnback.capture.statcache import CacheEntry, KeptCache, StatCache
from turnback.capture.sweep import iter_dirty, sweep
from turnback.capture.ignore import IgnoreRules

D1, D2 = "1" * 32, "2" * 32


def _entry(digest=D1, size=3):
    return CacheEntry(size, 1_000, 2_000, 42, digest, 10 ** 18)


def test_version_2_round_trips_and_version_1_still_loads(tmp_path):
    cache = StatCache({"a.txt": _entry(), "odd": _entry(digest="not-a-digest")})
    again = StatCache.decode(cache.encode())
    assert again.get("a.txt") == _entry() and again.get("odd") == _entry(digest="not-a-digest")
    v1 = seal(b"TBSC", 1, {"entries": {"a.txt": list(_entry())}})
    assert StatCache.decode(v1).get("a.txt") == _entry()
    bad = seal(b"TBSC", 2, {"rels": ["a", "b"], "packed": b"x" * 57, "other": {}})
    (tmp_path / "bad").write_bytes(bad)
    assert len(StatCache.load(tmp_path / "bad")) == 0  # entries that do not match: loads empty


def test_a_spilled_cache_keeps_what_was_swept_since(tmp_path):
    path = tmp_path / "stat.cbor"
    kept = KeptCache(path)
    whole = kept.for_sweep(True)
    whole.put("a.txt", _entry(D1))
    whole.put("b.txt", _entry(D1))
    kept.after_full_walk(spill=True)
    recent = kept.for_sweep(False)
    assert len(recent) == 0 and kept.partial  # not held between full walks
    recent.put("b.txt", _entry(D2, size=4))  # a dirty sweep learnt something newer
    merged = kept.for_sweep(True)  # the next full walk sees both
    assert merged.get("a.txt") == _entry(D1) and merged.get("b.txt") == _entry(D2, size=4)
    kept.after_full_walk(spill=True)
    kept.for_sweep(False).put("c.txt", _entry(D2))
    kept.save()  # the close: the file gets everything
    on_disk = StatCache.load(path)
    assert {r: on_disk.get(r).digest for r in on_disk} == {"a.txt": D1, "b.txt": D2, "c.txt": D2}


def test_a_dirty_sweep_with_a_spilled_cache_rehashes_and_gets_the_same_answer(ws, mem_objects):
    for name, data in (("a.txt", b"alpha"), ("b.txt", b"beta")):
        p = ws.root / name
        p.write_bytes(data)
        old = os.stat(p).st_mtime - 10
        os.utime(p, (old, old))
    full = StatCache()
    first = sweep(ws, mem_objects, full, max_bytes=100)
    (ws.root / "b.txt").write_bytes(b"BETA!")
    gen = iter_dirty(ws, mem_objects, StatCache(), {"a.txt", "b.txt"}, max_bytes=100,
                     rules=IgnoreRules(ws))
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            res = stop.value
            break
    assert res.images["a.txt"] == first.images["a.txt"] and res.hashed == 2
    assert mem_objects.get(res.images["b.txt"]) == b"BETA!"
