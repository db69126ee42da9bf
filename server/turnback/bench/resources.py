"""`live-resources`: what a background owner costs, at rest and under the attacks of issue 21.

1. At rest: resident memory after its first checkpoint (the watcher running) and CPU while idle.
2. Idle connections: an owner started under RLIMIT_NOFILE 1024 is sent 1,100 connections that say
   nothing. Its RSS and descriptors before, during (all open) and after (all closed); whether the
   honest client is answered meanwhile, how long that took, how many were refused, and whether
   the lease was renewed during the attack.
3. Big bodies: clients each sending one large request at once (24 of 62 MiB at full scale). RSS
   before, its peak during (sampled every 10 ms) and after; the most request bytes the owner held
   at once beside its budget; the honest client's answer time meanwhile.

The "before" figures are the baselines (same run, same owner). Nothing here asserts a time.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time

from . import gen
from .live import SEED, _turnback

MIB = 1 << 20


def _start(root, *, nofile: int | None = None, env: dict | None = None) -> dict:
    import json

    def limit():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.run([*_turnback(), "--workspace", str(root), "--json", "serve",
                           "--background", "--idle-exit", "600"], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120, preexec_fn=limit)
    if proc.returncode != 0:
        raise RuntimeError(f"serve --background failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def _stop(root) -> None:
    subprocess.run([*_turnback(), "--workspace", str(root), "daemon", "stop"], capture_output=True,
                   timeout=60)


def _timed_info(root) -> tuple[float, dict | None]:
    from ..remote import client

    t0 = time.perf_counter()
    try:
        info = client.call(root, "turnback/session/info", {}, timeout=60)
    except (client.NoOwner, client.RemoteError):
        info = None
    return time.perf_counter() - t0, info


class _Peak:
    """Samples a process's resident memory every 10 ms until stopped; keeps the peak."""

    def __init__(self, proc):
        self.proc, self.peak, self._stop = proc, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except Exception:  # noqa: BLE001 - the process may be gone
                return
            self._stop.wait(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def _lease_expiry(root) -> float | None:
    from ..store.records import read_record

    try:
        return read_record(root / ".turnback" / "lease.cbor", "lease")["expires"]
    except Exception:  # noqa: BLE001
        return None


# -- 1. at rest -----------------------------------------------------------------------------------
def _at_rest(ctx) -> None:
    import psutil

    from ..remote import client
    from .live import start_owner, stop_owner

    n = ctx.pick(500, 5_000, 50_000)
    root = ctx.dir("ws")
    gen.write_tree(root, n, SEED)
    started = start_owner(root)
    try:
        proc = psutil.Process(started["pid"])
        client.call(root, "turnback/turn/begin", {"prompt": "first checkpoint"}, timeout=600)
        client.call(root, "turnback/turn/settle", {"turn": 1, "status": "settled"}, timeout=600)
        info = client.call(root, "turnback/session/info", {})
        ctx.check("the owner's watcher is healthy", (info.get("watcher") or {}).get("state") == "healthy",
                  str(info.get("watcher")))
        rss = proc.memory_info().rss
        time.sleep(1.0)  # let the post-turn collection and publication settle
        cpu0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
        time.sleep(ctx.pick(2.0, 5.0, 10.0))
        cpu = (sum(proc.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
        ctx.check("the owner stayed up", proc.is_running())
    finally:
        stop_owner(root)
    ctx.fig("workspace-files", n, "files")
    ctx.fig("resident-memory", rss, "bytes", baseline=150 * MIB, source="goal: 150 MiB")
    ctx.fig("idle-cpu", round(cpu, 5), "cpu-s/s", note="no busy polling: the watcher blocks in poll(2)")


# -- 2. idle connections --------------------------------------------------------------------------
COUNT, NOFILE = 1_100, 1_024


def _idle_connections(ctx, root, started, proc) -> None:
    from ..remote.wire import connect

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < COUNT + 64 and hard >= COUNT + 64:  # this process opens them: it needs the room
        resource.setrlimit(resource.RLIMIT_NOFILE, (COUNT + 64, hard))
    count, nofile = COUNT, NOFILE
    rss0, fds0 = proc.memory_info().rss, proc.num_fds()
    base, _ = _timed_info(root)
    expiry = _lease_expiry(root)
    socks = []
    for _ in range(count):
        try:
            socks.append(connect(started["socket"], 30))
        except Exception:  # noqa: BLE001 - a refusal at the door is counted by the owner
            pass
    during_rss, during_fds = proc.memory_info().rss, proc.num_fds()
    latency, info = _timed_info(root)
    deadline = time.monotonic() + 10
    while _lease_expiry(root) == expiry and time.monotonic() < deadline:
        time.sleep(0.05)
    renewed = _lease_expiry(root) != expiry
    for s in socks:
        s.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, now = _timed_info(root)
        if now and now["sockets"]["connections"] <= 1:
            break
        time.sleep(0.05)
    time.sleep(0.2)
    rss1, fds1 = proc.memory_info().rss, proc.num_fds()
    ctx.check("the honest client is answered during the idle-connection attack", info is not None)
    ctx.check("the lease is renewed during the idle-connection attack", renewed)
    ctx.check("the owner stays up through the idle-connection attack", proc.is_running())
    sockets = (info or {}).get("sockets") or {}
    note = f"{count} idle connections, owner under RLIMIT_NOFILE {nofile}"
    ctx.fig("idle-attack-rss-during", during_rss, "bytes", baseline=rss0, source="before the attack",
            note=note)
    ctx.fig("idle-attack-rss-after", rss1, "bytes", baseline=rss0, source="before the attack")
    ctx.fig("idle-attack-fds-during", during_fds, "descriptors", baseline=fds0,
            source="before the attack", note=f"cap {sockets.get('cap')} clients")
    ctx.fig("idle-attack-fds-after", fds1, "descriptors", baseline=fds0, source="before the attack")
    ctx.fig("idle-attack-honest-answer", latency, "s", baseline=base, source="before the attack")
    ctx.fig("idle-attack-refused", sum((sockets.get("refused") or {}).values()), "connections",
            note=str(sockets.get("refused")))


# -- 3. big bodies --------------------------------------------------------------------------------
def _big_bodies(ctx, root, started, proc) -> None:
    import json

    from ..remote.client import _Reader
    from ..remote.wire import connect

    clients, size = ctx.pick(4, 8, 24), ctx.pick(8, 32, 62) * MIB
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "turnback/session/status",
                       "params": {"padding": "x" * (size - 100)}}).encode()
    message = b"Content-Length: %d\r\n\r\n" % len(body) + body
    outcomes: list[str] = []
    go = threading.Barrier(clients + 1)

    def attacker():
        try:
            s = connect(started["socket"], 60)
            s.settimeout(120)
            go.wait()
            s.sendall(message)
            reply = _Reader(s).message()
            while reply.get("id") not in (1, None):
                reply = _Reader(s).message()
            outcomes.append("answered" if "result" in reply else
                            str((reply.get("error") or {}).get("data", {}).get("code")))
            s.close()
        except Exception as exc:  # noqa: BLE001
            outcomes.append(type(exc).__name__)

    rss0 = proc.memory_info().rss
    base, _ = _timed_info(root)
    threads = [threading.Thread(target=attacker) for _ in range(clients)]
    for t in threads:
        t.start()
    with _Peak(proc) as peak:
        go.wait()
        latency, info = _timed_info(root)
        for t in threads:
            t.join(300)
    time.sleep(0.5)
    rss1 = proc.memory_info().rss
    _, after = _timed_info(root)
    sockets = (after or {}).get("sockets") or {}
    ctx.check("the honest client is answered during the big-body attack", info is not None)
    ctx.check("every big body is answered or refused with a stable code",
              len(outcomes) == clients and all(o == "answered" or "-" in o for o in outcomes),
              str(outcomes))
    ctx.check("the request bytes held at once stay within the budget",
              0 < sockets.get("peakBuffered", 0) <= sockets.get("bufferBudget", 0), str(sockets))
    note = f"{clients} clients x {size // MIB} MiB"
    ctx.fig("bodies-rss-peak", peak.peak, "bytes", baseline=rss0, source="before the attack",
            note=note)
    ctx.fig("bodies-rss-after", rss1, "bytes", baseline=rss0, source="before the attack")
    ctx.fig("bodies-held-peak", sockets.get("peakBuffered"), "bytes",
            baseline=sockets.get("bufferBudget"), source="the budget of buffered request bytes")
    ctx.fig("bodies-honest-answer", latency, "s", baseline=base, source="before the attack",
            note="asked as the large bodies start arriving")
    ctx.fig("bodies-outcomes", ", ".join(sorted(set(outcomes))), None,
            note=f"{outcomes.count('answered')} of {clients} answered")


def run(ctx) -> None:
    import psutil

    _at_rest(ctx)
    root = ctx.dir("attacked")
    (root / "a.txt").write_text("one\n")
    # one owner takes both attacks, under the descriptor limit of the first
    started = _start(root, nofile=NOFILE, env={"TURNBACK_LEASE_TTL": "3"})
    try:
        proc = psutil.Process(started["pid"])
        _idle_connections(ctx, root, started, proc)
        _big_bodies(ctx, root, started, proc)
    finally:
        _stop(root)
