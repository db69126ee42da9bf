"""turn-fast-path: `turnback turn begin` and `turn capture` through a live owner cost a process start.

With a live owner whose watcher has an empty dirty set, a pre-turn checkpoint needs no walk and no
per-file work: its time should be the interpreter's start, one round trip and the journal's sync,
the same at 20,000 files as at 250,000. Measured as an agent's hook runs them: a new process each
time, from start to exit, beside `python -c pass` in the same environment, interleaved (each round
runs the three in a rotating order). Both with turnback's bytecode uncached (this machine sets
PYTHONDONTWRITEBYTECODE=1, so every start compiles turnback's modules) and cached.

The breakdown: the same requests from a warm client (no process start: the owner's handling plus one
round trip), and the fast path's imports (`python -X importtime`, turnback's modules and the rest).
The owner's RSS is taken right after the turns and, at the small and full scales, again 22 s later
(the owner waiting for the next turn, once its lease timer has given the idle pack cache back).
Checks: every command exits 0, each begin's sweep read the watcher's dirty set (no walk), and the
session records every turn.

Scales: 500 and 2,000 files (tiny), 5,000 and 20,000 (small), 20,000 and 250,000 (full).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import gen
from .live import _turnback, start_owner, stop_owner
from .pyenvs import bytecode_envs
from .runner import percentile

SEED = "fastpath"
IDLE_SECONDS = 22.0  # past a lease renewal (every 10 s) after the pack cache's 10 s of idleness


def _run(argv, env, cwd) -> tuple[float, int]:
    t0 = time.perf_counter()
    code = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - t0, code


def _wait_quiet(client, root, timeout=600.0) -> None:
    """Until the owner collects nothing (a settlement schedules a collection)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not client.call(root, "turnback/session/status", {}, timeout=600,
                           stall=None).get("collecting"):
            return
        time.sleep(0.05)


def first_checkpoint(client, root: Path) -> float:
    """Setup, not a measurement: the owner's first checkpoint of the tree, settled and collected;
    its seconds. Waited out (stall=None): at 250,000 files under load 13 the owner left a status
    question unanswered for 5 s meanwhile, which the client's wedge detector took for a hang, and
    the scenario died before any figure."""
    t0 = time.perf_counter()
    first = client.call(root, "turnback/turn/begin", {"prompt": "first checkpoint"}, timeout=3600,
                        stall=None)
    client.call(root, "turnback/turn/settle", {"turn": first["turn"]}, timeout=3600, stall=None)
    _wait_quiet(client, root)
    return time.perf_counter() - t0


def run(ctx) -> None:
    from ..remote import client

    rounds = ctx.pick(3, 20, 40)
    envs = bytecode_envs(ctx.work / ctx.scenario)
    results = {}
    for n in ctx.pick([500, 2_000], [5_000, 20_000], [20_000, 250_000]):
        root = ctx.dir(f"ws{n}")
        shutil.rmtree(root)  # a fresh workspace, even in a reused --workdir
        gen.write_tree(root, n, SEED)
        (root / "notes.txt").write_text("a file the hook captures\n")
        started = start_owner(root)
        try:
            first_s = first_checkpoint(client, root)
            results[n] = _measure(ctx, client, root, envs, rounds)
            results[n]["rss"] = _rss(started.get("pid"))
            idle = ctx.pick(0, IDLE_SECONDS, IDLE_SECONDS)
            if idle:  # the owner waiting for the next turn: its lease timer gives memory back
                time.sleep(idle)
                results[n]["rss-idle"] = _rss(started.get("pid"))
            results[n]["first"] = first_s
            if len(results) == 1:
                _imports(ctx, envs, root)  # with the owner live: what the fast path imports
            info = client.call(root, "turnback/session/info", {})
            ctx.check(f"the owner's watcher is healthy at {n} files",
                      (info.get("watcher") or {}).get("state") == "healthy", str(info.get("watcher")))
            log = client.call(root, "turnback/session/log", {})
            ctx.check(f"every turn at {n} files was recorded",
                      len(log["turns"]) == 1 + results[n]["turns"], f"{len(log['turns'])} turns")
        finally:
            stop_owner(root)
    load = round(os.getloadavg()[0], 2)
    small, big = sorted(results)
    for n, r in sorted(results.items()):
        for env in envs:
            base = statistics.median(r["pass", env])
            for what in ("begin", "capture"):
                times = r[what, env]
                ctx.fig(f"turn-{what}-{n}-{env}-median", statistics.median(times), "s", baseline=base,
                        source="python -c pass, same run, same environment",
                        note=f"goal: 2x; load {load}; {len(times)} runs")
                ctx.fig(f"turn-{what}-{n}-{env}-p99", percentile(times, 99), "s",
                        baseline=percentile(r["pass", env], 99), source="python -c pass, p99")
        for what in ("begin", "capture"):
            ctx.fig(f"owner-{what}-{n}", statistics.median(r["warm", what]), "s",
                    note="a warm client: the owner's handling and one round trip, no process start")
        ctx.fig(f"owner-first-checkpoint-{n}", r["first"], "s",
                note="setup: the live owner's first checkpoint and settle of the tree, then quiet")
        if r.get("rss"):
            ctx.fig(f"owner-rss-{n}", r["rss"], "bytes", baseline=200 * 2 ** 20,
                    source="goal: 200 MiB",
                    note="the live owner, watching, after its first checkpoint and the turns above")
        if r.get("rss-idle"):
            ctx.fig(f"owner-rss-idle-{n}", r["rss-idle"], "bytes", baseline=200 * 2 ** 20,
                    source="goal: 200 MiB",
                    note=f"the same owner {IDLE_SECONDS:.0f} s later, waiting for the next turn")
    for what in ("begin", "capture"):
        ctx.fig(f"turn-{what}-flatness", statistics.median(results[big][what, "uncached"]), "s",
                baseline=statistics.median(results[small][what, "uncached"]),
                source=f"the same at {small} files", note=f"{big} files against {small}")


def _rss(pid) -> int | None:
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except Exception:  # noqa: BLE001 - gone, or no pid: the figure is left out
        return None


def _measure(ctx, client, root: Path, envs: dict, rounds: int) -> dict:
    tb = [*_turnback(), "--workspace", str(root)]
    begin = [*tb, "turn", "begin", "--prompt", "a prompt"]
    capture = [*tb, "turn", "capture", str(root / "notes.txt")]
    python = [sys.executable, "-c", "pass"]
    out: dict = {"turns": 0}
    for env_name, env in envs.items():
        subprocess.run(python, env=env)  # warm the private bytecode cache (`cached`)
        for key in ("pass", "begin", "capture"):
            out[key, env_name] = []
        for i in range(rounds):
            order = ("pass", "begin", "capture")[i % 3:] + ("pass", "begin", "capture")[:i % 3]
            for key in order:
                if key == "capture" and client.call(root, "turnback/session/info",
                                                    {}).get("running") is None:
                    client.call(root, "turnback/turn/begin", {"prompt": "for the capture"})
                    out["turns"] += 1
                if key == "begin":
                    running = client.call(root, "turnback/session/info", {}).get("running")
                    if running is not None:
                        client.call(root, "turnback/turn/settle", {"turn": running}, timeout=600)
                        _wait_quiet(client, root)
                if key == "capture":  # a begin finds the dirty set empty; a capture, a changed file
                    (root / "notes.txt").write_text(f"edit {env_name} {i}\n")
                t, code = _run({"pass": python, "begin": begin, "capture": capture}[key], env, root)
                ctx.check(f"`{key}` exits 0", code == 0, f"exit {code}")
                out[key, env_name].append(t)
                if key == "begin":
                    out["turns"] += 1
                    info = client.call(root, "turnback/session/info", {})
                    ctx.check("the pre-turn sweep read the watcher's dirty set, no walk",
                              (info.get("watcher") or {}).get("lastSweep") == "dirty",
                              str(info.get("watcher")))
    out["warm", "begin"], out["warm", "capture"] = [], []
    for i in range(rounds):
        running = client.call(root, "turnback/session/info", {}).get("running")
        if running is not None:
            client.call(root, "turnback/turn/settle", {"turn": running}, timeout=600)
            _wait_quiet(client, root)
        t0 = time.perf_counter()
        client.call(root, "turnback/turn/begin", {"prompt": "warm"})
        out["warm", "begin"].append(time.perf_counter() - t0)
        out["turns"] += 1
        (root / "notes.txt").write_text(f"warm edit {i}\n")
        t0 = time.perf_counter()
        client.call(root, "turnback/turn/capture", {"uris": [(root / "notes.txt").as_uri()]})
        out["warm", "capture"].append(time.perf_counter() - t0)
    return out


def _import_times(argv, env, cwd) -> tuple[int, int, list[str], int]:
    """(turnback's modules, the others: microseconds of self time), turnback's names, exit code."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True)
    own = other = 0
    names = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line.split("|")
        try:
            us = int(parts[0].split(":")[1])
        except ValueError:
            continue
        name = parts[2].strip()
        if name.startswith("turnback"):
            own += us
            names.append(name)
        else:
            other += us
    return own, other, names, proc.returncode


def _imports(ctx, envs: dict, root: Path) -> None:
    """What the fast path imports, and what importing costs (self times, `-X importtime`)."""
    code = ("import sys; sys.argv = ['turnback', '--workspace', %r, 'turn', 'capture', %r];"
            "from turnback.cli.fast import main; main()" % (str(root), str(root / "notes.txt")))
    for env_name, env in envs.items():
        own, other, names, rc = _import_times(["-c", code], env, root)
        _, bare, _, _ = _import_times(["-c", "pass"], env, root)
        ctx.check(f"the import profile's capture ({env_name}) exits 0", rc == 0, f"exit {rc}")
        ctx.fig(f"fast-path-imports-turnback-{env_name}", own / 1e6, "s",
                note=f"{len(names)} modules: {' '.join(names)}")
        ctx.fig(f"fast-path-imports-other-{env_name}", other / 1e6, "s", baseline=bare / 1e6,
                source="a bare start's own imports (site, encodings...)",
                note="the standard library's, beyond turnback's")
