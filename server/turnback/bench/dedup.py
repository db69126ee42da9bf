"""dedup-scaling: artifact deduplication and generation assembly at 10 k, 100 k and 1 M entries.

The record's writer deduplicated a generation's artifacts with a quadratic rescan (2.47 s), then with
hash membership (3 ms). Our equivalent is publishing a state: `state_refs` folds every artifact entry
into one set of referenced objects (the deduplication), and `StateCodec.write` assembles the whole
publication (the changed known-image shard and its reference list, the session root, and the body).
The state holds N path entries over N/4 distinct images, so three of every four entries deduplicate.
We time both at each N and fit the growth exponent (slope of log time over log N): 1.0 is linear.
"""

from __future__ import annotations

import hashlib
import math
import time

from ..model.session import SessionState
from ..store.layout import Store
from ..model.known import KnownMap
from ..timeline.codec import StateCodec
from ..timeline.staterefs import state_refs


def _digest(i: int) -> str:
    return hashlib.blake2b(i.to_bytes(8, "big"), digest_size=16).hexdigest()


def _state(n: int) -> SessionState:
    distinct = max(1, n // 4)
    pool = [_digest(i) for i in range(distinct)]
    st = SessionState(session_id="bench-dedup", created=0.0, fork_point="f" * 32)
    step = 7919  # a prime stride spreads equal images over distant paths
    st.known = KnownMap({f"src/d{i // 500:05d}/f{i:07d}.py": pool[(i * step) % distinct]
                         for i in range(n)})  # as the reducer keeps it: shards know when they change
    return st


def _slope(ns, ts) -> float:
    xs = [math.log(n) for n in ns]
    ys = [math.log(max(t, 1e-9)) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def run(ctx) -> None:
    sizes = ctx.pick((1_000, 3_000, 10_000), (10_000, 100_000), (10_000, 100_000, 1_000_000))
    store = Store.open(ctx.dir("store") / ".turnback", kind="heads")
    dedup_t, asm_t = [], []
    ok = True
    for n in sizes:
        state = _state(n)
        label = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M"
        t0 = time.perf_counter()
        refs = state_refs(state)
        td = time.perf_counter() - t0
        codec = StateCodec(store.objects)
        t0 = time.perf_counter()
        with store.objects.batch():
            body = codec.write(state)
        ta = time.perf_counter() - t0
        want = set(state.known.values())
        ok &= refs == want and len(refs) == max(1, n // 4)
        # One entry changes: only its shard, the root and the body are new.
        rel = next(iter(state.known))
        state.known[rel] = _digest(10**9 + n)
        t0 = time.perf_counter()
        with store.objects.batch():
            body2 = codec.write(state)
        tr = time.perf_counter() - t0
        dedup_t.append(td)
        asm_t.append(ta)
        if n == sizes[0] and ctx.scale != "tiny":
            ctx.fig(f"dedup-{label}", td, "s", baseline=0.003, source="record, after its fix",
                    note="the record names no entry count; one of its generations held ~4 k entries")
        else:
            ctx.fig(f"dedup-{label}", td, "s")
        ctx.fig(f"assembly-{label}", ta, "s", note="state_refs + shards + root + body, one durable batch")
        ctx.fig(f"republish-1-change-{label}", tr, "s")
        # Correctness: the body references exactly the distinct images (plus metadata objects), and
        # the published state reads back equal to the one we wrote.
        distinct = set(state.known.values())
        body_doc = codec.read_body(body2)
        image_refs = set(body_doc["refs"]) & (want | distinct)
        ok &= image_refs == distinct
        shards = set(codec.outline(body2)[1])  # equal shards (empty ones, say) are one object
        # each distinct shard has one reference list; plus root, directives, workflow and agents
        ok &= len(set(body_doc["refs"])) == len(distinct) + 2 * len(shards) + 4
        back = codec.read(body2)
        ok &= back.known == state.known
        ok &= body != body2
        del state, back, body_doc
    ctx.fig("dedup-exponent", _slope(sizes, dedup_t), "exponent", note="1.0 = linear, 2.0 = quadratic")
    ctx.fig("assembly-exponent", _slope(sizes, asm_t), "exponent", note="1.0 = linear, 2.0 = quadratic")
    ctx.check("references are exactly the distinct images and every state reads back equal", ok)
