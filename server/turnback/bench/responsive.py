"""responsiveness: request latency of `turnback serve` while it scans and collects the history.

A client sends `turnback/session/info` every 10 ms (without waiting for answers) to a `turnback serve`
subprocess opened on a hard-linked copy of the history, and asks for `turnback/collect/run`. The server
collects on its own at startup too (the resume trigger), so the busy window opens at `initialized` and
closes when `collect/run` has answered: it covers a cold scan (with the batch child) and a full
collection. Then the same client pings the idle server for as many samples. Latency is from writing
the request to reading its answer, so it includes the JSON-RPC round trip; the record's figure is an
editor timer's delay (11 ms at most with its child process), the nearest thing it measured.
"""

from __future__ import annotations

import asyncio
import sys
import time

from .common import copy_store_tree, verify_objects
from .history import _figures_of_history, build, census
from .lspclient import LspClient
from .runner import percentile

PERIOD = 0.010


async def _ping(client: LspClient, stop: asyncio.Event, samples: int | None = None):
    sent: list[tuple[float, asyncio.Future]] = []
    next_t = time.perf_counter()
    while (samples is None and not stop.is_set()) or (samples is not None and len(sent) < samples):
        _rid, fut = client.send("turnback/session/info")
        sent.append((time.perf_counter(), fut))
        await client.proc.stdin.drain()
        next_t += PERIOD
        await asyncio.sleep(max(0.0, next_t - time.perf_counter()))
    latencies, answers = [], []
    for t_sent, fut in sent:
        result, t_recv = await asyncio.wait_for(fut, 600)
        latencies.append(t_recv - t_sent)
        answers.append(result)
    return latencies, answers


async def _session(root, expect_session: str) -> dict:
    client = await LspClient.start([sys.executable, "-m", "turnback", "serve"], cwd=str(root))
    try:
        await client.initialize(root.as_uri(), {"collect": {"graceSeconds": 0}})
        stop = asyncio.Event()
        t0 = time.perf_counter()
        pinger = asyncio.get_running_loop().create_task(_ping(client, stop))
        collected = await client.request("turnback/collect/run", {}, timeout=900)
        busy_window = time.perf_counter() - t0
        stop.set()
        busy, busy_answers = await pinger
        await asyncio.sleep(0.5)
        idle, idle_answers = await _ping(client, asyncio.Event(), samples=max(200, len(busy)))
        return {"busy": busy, "idle": idle, "window": busy_window, "collected": collected,
                "answers": busy_answers + idle_answers}
    finally:
        await client.shutdown()


def run(ctx) -> None:
    # Both subjects are built: an import error is a broken build and fails the scenario.
    import turnback.collect  # noqa: F401
    import turnback.lsp.server  # noqa: F401

    h = build(ctx)
    _figures_of_history(ctx, h)
    root = ctx.work / "responsiveness" / "ws"
    copy_store_tree(h["root"], root)
    from ..store.layout import Store
    from ..timeline.codec import StateCodec

    store = Store.open(root / ".turnback", kind="heads", create=False)
    session_id = StateCodec(store.objects).read(store.heads.current().body).session_id
    before = census(store.path)
    out = asyncio.run(_session(root, session_id))
    after = census(store.path)
    busy, idle = out["busy"], out["idle"]
    ms = 1000.0
    same = "same client, server idle"
    ctx.fig("busy-window", out["window"], "s", note="from initialized to the answer of collect/run")
    ctx.fig("samples-busy", len(busy), "requests")
    ctx.fig("p50-busy", percentile(busy, 50) * ms, "ms", baseline=percentile(idle, 50) * ms, source=same)
    ctx.fig("p99-busy", percentile(busy, 99) * ms, "ms", baseline=percentile(idle, 99) * ms, source=same)
    ctx.fig("max-busy", max(busy) * ms, "ms", baseline=11.0, source="record, editor timer delay")
    ctx.fig("max-idle", max(idle) * ms, "ms")
    # What held the server's loop longest, by the collector's phase (from collect/run's own stats).
    collected = out["collected"] if isinstance(out["collected"], dict) else {}
    for phase, slowest in sorted((collected.get("slowestByPhase") or {}).items(), key=lambda kv: -kv[1]):
        ctx.fig(f"slowest-slice-{phase}", slowest, "ms", note="the collector's longest slice in this phase")
    if "maxSliceMs" in collected:
        ctx.fig("slowest-slice", collected["maxSliceMs"], "ms", baseline=10.0, source="the loop's budget")
    ctx.fig("heads-before", before["heads"], "heads")
    ctx.fig("heads-after", after["heads"], "heads", note="what the server's collection kept")
    ctx.check("every request was answered with this session's info",
              all(isinstance(a, dict) and a.get("sessionId") == session_id for a in out["answers"]),
              f"{len(out['answers'])} answers")
    ctx.check("the server really collected the history meanwhile",
              after["heads"] < before["heads"] and after["objects"] < before["objects"],
              f"heads {before['heads']} -> {after['heads']}, objects {before['objects']} -> "
              f"{after['objects']}; collect/run said {out['collected']}")
    n, bad = verify_objects(store.objects, list(store.objects.list()))
    ctx.check("every retained object verifies", not bad, f"{len(bad)} of {n} damaged")
