"""The long history the record's archive had, and the scenarios that use it: close-save, scan, collect.

The history is a real session driven through the workbench (no head is forged): a workspace of a few
thousand source files and ten large data files that the agent regenerates; two long turns, a rewind
before the second, and a third long turn. Every tick appends assistant text, edits two small files and
one large one, logs a tool step with a persisted result, and publishes a head (the workbench's debounced
publication, driven by a simulated clock); the last tick of a turn is its settlement. At `full` that
makes 336 heads whose bodies hold about 1.37 million object references in total, and about 1.1 GB of
objects, like the record's archive (336 heads, 1.37 million artifact entries, 1,139,941,005 bytes).
With the default retention (current head, the newest settled head of every Redo group, the 8 newest
heads) the collector keeps 11 of them, as the record's policy did.

One deviation: retention also keeps every head younger than `graceSeconds` (600 s by default). The
record's archive was old; ours was built a minute ago, so the collection scenarios run with
`graceSeconds = 0`. Nothing else is changed.
"""

from __future__ import annotations

import os
import shutil
import time

from . import gen
from .common import (begin, copy_store_tree, keepalive, open_wb, settle, timed, uris, verify_objects,
                     write)
from .runner import Unavailable

SEED = "hist"
LARGE = 10


def _spec(scale: str) -> dict:
    return {
        "tiny": {"files": 150, "phases": (8, 8, 7), "large": 48 << 10, "result": 4 << 10},
        "small": {"files": 1000, "phases": (36, 36, 39), "large": 640 << 10, "result": 16 << 10},
        "full": {"files": 3700, "phases": (110, 110, 115), "large": 5 << 19, "result": 32 << 10},
    }[scale]


def _tick(wb, root, r, n, tick, spec, small_rels, sizes, version, publish: bool) -> None:
    keepalive(wb)
    wb.turns.respond({"turn": n, "text": gen.text(r, r.randrange(2000, 4000)).decode()})
    edited = r.sample(small_rels, 2)
    for rel in edited:
        write(root, rel, gen.content(f"{SEED}:{rel}", sizes[rel] + r.randrange(-200, 400), version))
    big = f"data/table_{tick % LARGE:02d}.json"
    write(root, big, gen.big(big, spec["large"] + r.randrange(0, spec["large"] // 4), version))
    wb.turns.capture({"uris": uris(wb, edited + [big])})
    wb.turns.step({"turn": n, "kind": "shell", "scope": "host", "summary": "run the test suite",
                   "result": gen.text(r, spec["result"]).decode()})
    if publish:
        wb.options.publish_interval = 0.0
        wb.maybe_publish()
        wb.options.publish_interval = 1e9


def _turn(wb, root, r, prompt, ticks, spec, small_rels, sizes, counter) -> int:
    n = begin(wb, prompt)
    for tick in range(1, ticks + 1):
        counter[0] += 1
        _tick(wb, root, r, n, tick, spec, small_rels, sizes, counter[0], publish=tick < ticks)
    settle(wb, n)
    return n


def build(ctx) -> dict:
    """Build (once per run and scale) the history; later scenarios copy it before changing it."""
    if "history" in ctx.shared:
        return ctx.shared["history"]
    if "history-failed" in ctx.shared:
        raise RuntimeError(f"the shared history could not be built: {ctx.shared['history-failed']}")
    try:
        return _build(ctx)
    except Exception as exc:
        ctx.shared["history-failed"] = f"{type(exc).__name__}: {exc}"
        raise


def _build(ctx) -> dict:
    spec = _spec(ctx.scale)
    root = ctx.work / "history" / "ws"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    t0 = time.perf_counter()
    sizes = gen.write_tree(root, spec["files"], SEED)
    for i in range(LARGE):
        rel = f"data/table_{i:02d}.json"
        write(root, rel, gen.big(rel, spec["large"], 0))
    r = gen.rng(SEED, "session", ctx.scale)
    small_rels = sorted(sizes)[: max(20, spec["files"] // 24)]  # the working set the agent edits
    counter = [0]
    a, b, c = spec["phases"]
    wb = open_wb(root, publish_interval=1e9)
    try:
        _turn(wb, root, r, "build the importer", a, spec, small_rels, sizes, counter)
        _turn(wb, root, r, "make it streaming", b, spec, small_rels, sizes, counter)
        boundary = {"kind": "beforePrompt", "turn": 2}
        cand = wb.rewind.prepare({"boundary": boundary})
        res = wb.rewind.commit({"boundary": boundary, "planHash": cand["planHash"]})
        if res.get("status") != "committed":
            raise RuntimeError(f"the history's rewind did not commit: {res}")
        _turn(wb, root, r, "make it streaming, but keep the old reader", c, spec, small_rels, sizes,
              counter)
    finally:
        wb.close()
    store_path = root / ".turnback"
    info = {"root": root, "store": store_path, "built": time.perf_counter() - t0,
            "sizes": sizes}
    info.update(census(store_path))
    ctx.shared["history"] = info
    return info


def census(store_path) -> dict:
    """Heads, total body references, object count and bytes of a store (read-only)."""
    from ..collect.scan import list_heads
    from ..store.layout import Store
    from ..timeline.codec import StateCodec

    store = Store.open(store_path, kind="heads", create=False)
    codec = StateCodec(store.objects)
    seqs = store.heads.list_seqs()
    refs = 0
    for s in seqs:
        refs += len(codec.read_body(store.heads.read(s).body)["refs"])
    n = total = 0
    for d in store.objects.list():
        n += 1
        total += store.objects.stat(d) or 0
    head_bytes = sum(size for size, _ in list_heads(store.heads.dir).values())  # loose or packed
    return {"heads": len(seqs), "refs": refs, "objects": n, "bytes": total + head_bytes}


def _collector():
    # Every subject of the bench is built now: an import error is a broken build, and it fails the
    # scenario like any other crash instead of hiding behind `unavailable`.
    from ..collect import Collector, HeadCache
    from ..collect.cache import FILE_NAME

    if not all(hasattr(Collector, a) for a in ("_scan", "_open_slice", "_close_slice")):
        raise Unavailable("this collector has no separable scan phase to time")
    return Collector, HeadCache, FILE_NAME


def _figures_of_history(ctx, h) -> None:
    full = ctx.scale == "full"
    ctx.fig("heads", h["heads"], "heads", baseline=336 if full else None, source="record" if full else None)
    ctx.fig("body-references", h["refs"], "refs", baseline=1.37e6 if full else None,
            source="record, artifact entries" if full else None)


# ------------------------------------------------------------------------------------ close-save

def run_close_save(ctx) -> None:
    """Open the history, save one file between turns, close (which publishes): the record's close
    and save of its archive took 97.2 s, then 1.16 s after its fix."""
    h = build(ctx)
    _figures_of_history(ctx, h)
    root = ctx.work / "close-save" / "ws"
    copy_store_tree(h["root"], root)
    wb, t_open = timed(open_wb, root)
    try:
        head_before = wb.book.head.seq
        turns = wb.state.turn_count
        data = gen.content("close-save", 5000, 1)
        write(root, "NOTES.md", data)
        wb.turns.capture({"uris": uris(wb, ["NOTES.md"])})
    except BaseException:
        wb.close()
        raise
    _, t_close = timed(wb.close)
    ctx.fig("open", t_open, "s", note="resume: read the current head's state, replay the journal")
    ctx.fig("close-save", t_close, "s", baseline=1.16, source="record, after its fix (97.2 s before)")
    wb = open_wb(root)
    try:
        head = wb.book.head
        ctx.check("closing published exactly one new head", head.seq == head_before + 1,
                  f"{head_before} -> {head.seq}")
        ctx.check("the reopened session has every turn", wb.state.turn_count == turns)
        ctx.check("the saved file's image is the one written",
                  wb.state.known.get("NOTES.md") == wb.store.hasher.digest(data)
                  and wb.store.objects.get(wb.state.known["NOTES.md"]) == data)
        refs = wb.book.codec.read_body(head.body)["refs"]
        n, bad = verify_objects(wb.store.objects, refs)
        ctx.check("every object the new head references verifies", not bad, f"{len(bad)} of {n} bad")
    finally:
        wb.close()


# ------------------------------------------------------------------------------------ scan

def _drive(job, wb=None) -> tuple[object, float, int, float]:
    """Run a job, timing each slice: (value, total seconds, slices, largest slice in seconds). Between
    slices (outside the timing) the lease is renewed, as the server's timer would."""
    total, slices, largest = 0.0, 0, 0.0
    while True:
        if wb is not None:
            keepalive(wb)
        t0 = time.perf_counter()
        try:
            next(job)
        except StopIteration as done:
            dt = time.perf_counter() - t0
            return done.value, total + dt, slices + 1, max(largest, dt)
        dt = time.perf_counter() - t0
        total += dt
        slices += 1
        largest = max(largest, dt)


def _scan_job(col):
    """The collector's scan phase alone, as its job would run it: the plan's scan, then the cache
    saved as the execution saves it first."""
    col._open_slice()
    yield from col._scan()
    col.cache.save()
    col._close_slice()


def run_scan(ctx) -> None:
    """Cold scan (no cache; over 16 uncached heads go to the batch child), cold scan in process,
    warm scan (cache loaded), and what the cache holds in memory."""
    Collector, HeadCache, FILE_NAME = _collector()
    h = build(ctx)
    _figures_of_history(ctx, h)
    wb = open_wb(h["root"], grace_seconds=0.0)
    try:
        cache_file = wb.store.cache_dir / FILE_NAME
        results = {}
        for label, kw in (("cold", {}), ("cold-batch-child", {"child_threshold": 0})):
            if cache_file.exists():
                os.unlink(cache_file)
            cache = HeadCache(cache_file, wb.store.store_id)
            col = Collector(wb, cache, **kw)
            t0 = time.perf_counter()
            _, work, slices, largest = _drive(_scan_job(col), wb)
            wall = time.perf_counter() - t0
            results[label] = (col, cache, wall, work, slices, largest)
        col, cache, wall, work, slices, largest = results["cold"]
        ctx.fig("cold-scan", wall, "s", baseline=1.38, source="record, after its fix",
                note=f"batch child: {col.stats.get('child')}; in-loop work {work:.3f} s "
                     f"over {slices} slices")
        ctx.fig("cold-scan-largest-slice", largest * 1000, "ms")
        _c2, _cache2, wall2, work2, slices2, largest2 = results["cold-batch-child"]
        ctx.fig("cold-scan-batch-child", wall2, "s", baseline=wall, source="the default policy, same run",
                note=f"every cold head through the child: its start-up; {slices2} slices, largest "
                     f"{largest2 * 1000:.1f} ms")
        # Warm: a fresh process would load the cache file; this one loads it too.
        t0 = time.perf_counter()
        warm_cache = HeadCache.load(wb.store)
        col_w = Collector(wb, warm_cache)
        _, work_w, slices_w, largest_w = _drive(_scan_job(col_w), wb)
        wall_w = time.perf_counter() - t0
        ctx.fig("warm-scan", wall_w, "s", baseline=0.045, source="record, after its fix",
                note="includes loading the cache file")
        mem = warm_cache.memory_bytes()
        ctx.fig("cache-memory", mem, "bytes", baseline=5.5 * (1 << 20), source="record, heap growth")
        ctx.fig("cache-file", cache_file.stat().st_size if cache_file.exists() else 0, "bytes")
        # Correctness: every scan observed every head with the facts the head records hold.
        seqs = wb.store.heads.list_seqs()
        ok = True
        for label, (c, _cache, *_rest) in results.items():
            ok &= sorted(c.known) == seqs and not c.broken
        ok &= bool(results["cold-batch-child"][0].stats.get("child"))
        ok &= sorted(col_w.known) == seqs and col_w.stats.get("coldHeads", 0) == 0
        for s in seqs:
            rec = wb.store.heads.read(s)
            f = col_w.known[s]
            ok &= (f.body, f.turn_count, f.fork_point, f.settled) == (rec.body, rec.turn_count,
                                                                     rec.fork_point, rec.settled)
            ok &= f.body_size == wb.store.objects.stat(rec.body)
        ctx.check("every scan saw every head with its true facts; the warm scan read none cold", ok)
    finally:
        wb.close()


# ------------------------------------------------------------------------------------ collect

def run_collect(ctx) -> None:
    """A full collection of the history (on a hard-linked copy), timed slice by slice; then every
    retained object is verified against its digest."""
    Collector, HeadCache, _ = _collector()
    h = build(ctx)
    _figures_of_history(ctx, h)
    root = ctx.work / "collect" / "ws"
    copy_store_tree(h["root"], root)
    wb = open_wb(root, grace_seconds=0.0)
    try:
        store = wb.store
        before = census(store.path)
        job = Collector(wb, HeadCache.load(store)).job()
        t0 = time.perf_counter()
        stats, work, slices, largest = _drive(job, wb)
        wall = time.perf_counter() - t0
        after = census(store.path)
        full = ctx.scale == "full"
        ctx.fig("work", work, "s", baseline=23.92 if full else None,
                source="record, 715 steps" if full else None,
                note="sum of slice times; the record advanced its idle steps explicitly")
        ctx.fig("wall-clock", wall, "s")
        ctx.fig("slices", slices, "slices", baseline=715 if full else None,
                source="record" if full else None)
        ctx.fig("largest-slice", largest * 1000, "ms", baseline=172 if full else None,
                source="record" if full else None)
        for phase, slowest in sorted((stats.get("slowestByPhase") or {}).items(), key=lambda kv: -kv[1]):
            ctx.fig(f"largest-slice-{phase}", slowest, "ms", note="as the collector timed it")
        ctx.fig("heads-kept", after["heads"], "heads", baseline=11 if full else None,
                source="record" if full else None)
        ctx.fig("bytes-before", before["bytes"], "bytes", baseline=1_139_941_005 if full else None,
                source="record" if full else None)
        ctx.fig("bytes-after", after["bytes"], "bytes", baseline=404_652_906 if full else None,
                source="record" if full else None)
        ctx.fig("objects-deleted", stats["objectsDeleted"], "objects")
        ctx.fig("objects-kept", after["objects"], "objects", baseline=6794 if full else None,
                source="record, files" if full else None)
        ctx.check("the collector's own accounting matches the store",
                  stats["headsRetired"] == before["heads"] - after["heads"]
                  and stats["objectsDeleted"] == before["objects"] - after["objects"],
                  f"{stats}")
        ctx.check("nothing blocked the collection", not stats.get("skipped"), str(stats.get("skipped")))
        # Every retained object verifies, and every object a kept head references is still there.
        n, bad = verify_objects(store.objects, list(store.objects.list()))
        ctx.check("every retained object verifies", not bad, f"{len(bad)} of {n} damaged")
        missing = 0
        for s in store.heads.list_seqs():
            body = store.heads.read(s).body
            for d in [body] + wb.book.codec.read_body(body)["refs"]:
                missing += not store.objects.has(d)
        ctx.check("every object a kept head references survived", missing == 0, f"{missing} missing")
        # A kept Redo group still restores: read each kept head's whole state.
        whole, broken = 0, []
        for s in store.heads.list_seqs():
            rec = store.heads.read(s)
            try:
                state = wb.book.codec.read(rec.body)
            except Exception as exc:  # noqa: BLE001 - a head that does not read back is the finding
                broken.append(f"head {s}: {type(exc).__name__}: {exc}")
                continue
            if state.settled_turn_count == rec.turn_count and state.session_id == wb.state.session_id:
                whole += 1
            else:
                broken.append(f"head {s}: {state.settled_turn_count} settled turns, its record says "
                              f"{rec.turn_count}")
        ctx.check("every kept head's state reads back whole",
                  whole == after["heads"] > 0 and not broken, "; ".join(broken[:3]))
    finally:
        wb.close()
