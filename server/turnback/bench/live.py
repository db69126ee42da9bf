"""The live sidecar's scenarios: hook round trips, the watcher's dirty set, fallbacks, resources.

* `hook-roundtrip`: process start to exit of `turnback turn capture` through a live background owner,
  p50 and p99, beside the direct path (no owner: the command opens the store) and `python -c pass`,
  each with bytecode cached and not (this machine sets PYTHONDONTWRITEBYTECODE=1, so an installed
  turnback compiles its modules on every start unless a cache exists; the uncached figure is what a
  hook pays here, the cached one what it pays after `python -m compileall`).
* `live_column` (called by checkpoint-vs-shadow-git): the pre-turn checkpoint and the turn's capture
  and settle of a live owner whose watcher names the changed paths, beside git's add + commit.
* `watcher-fallback`: a forced queue overflow and a burst of renames must come out exact.
* `live-resources` (resources.py): the background owner's memory, descriptors and CPU at rest and
  under the attacks of issue 21 (idle connections past the descriptor limit, large bodies).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import gen
from .pyenvs import bytecode_envs
from .runner import percentile

SEED = "live"


# -- helpers ----------------------------------------------------------------------------------------
def _turnback() -> list[str]:
    """What a hook runs: the installed console script when there is one."""
    script = Path(sys.executable).parent / "turnback"
    return [str(script)] if script.exists() else [sys.executable, "-m", "turnback"]


def _times(argv: list[str], n: int, env: dict, cwd: Path) -> tuple[list[float], int]:
    out, bad = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
        bad += proc.returncode != 0
    return out, bad


def _package_bytecode() -> bool:
    """Whether turnback's own modules have bytecode beside their sources (then `uncached` is not)."""
    import importlib.util

    from ..cli import fast

    return os.path.exists(importlib.util.cache_from_source(fast.__file__))


def start_owner(root: Path, env: dict | None = None, idle: float = 600) -> dict:
    proc = subprocess.run([*_turnback(), "--workspace", str(root), "--json", "serve", "--background",
                           "--idle-exit", str(idle)], capture_output=True, text=True,
                          env=env or os.environ, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"serve --background failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def stop_owner(root: Path) -> None:
    subprocess.run([*_turnback(), "--workspace", str(root), "daemon", "stop"],
                   capture_output=True, timeout=60)


# -- hook-roundtrip ---------------------------------------------------------------------------------
def run_hook_roundtrip(ctx) -> None:
    from ..remote import client

    n = ctx.pick(5, 40, 100)
    root = ctx.dir("ws")
    (root / "a.txt").write_text("one\n")
    envs = bytecode_envs(ctx.work / ctx.scenario)
    capture = [*_turnback(), "--workspace", str(root), "turn", "capture", "a.txt"]
    # warm the private bytecode cache with one run of each path
    subprocess.run([sys.executable, "-c", "pass"], env=envs["cached"])
    subprocess.run([*_turnback(), "--workspace", str(root), "turn", "begin", "--prompt", "bench"],
                   env=envs["cached"], capture_output=True)

    direct = {k: _times(capture, n, env, root) for k, env in envs.items()}
    start_owner(root)
    try:
        ctx.require("a live owner answers", client.owner_socket(root) is not None)
        live = {k: _times(capture, n, env, root) for k, env in envs.items()}
        log = client.call(root, "turnback/session/log", {})
        ctx.check("every capture went through the owner and was recorded",
                  log["turns"] and log["turns"][-1]["prompt"] == "bench")
    finally:
        stop_owner(root)
    python = {k: _times([sys.executable, "-c", "pass"], n, env, root) for k, env in envs.items()}
    for k in envs:
        ctx.check(f"every {k} capture exited 0", live[k][1] == 0 and direct[k][1] == 0,
                  f"live {live[k][1]} / direct {direct[k][1]} failures")
        note = "bytecode cached" if k == "cached" else "no bytecode cache (PYTHONDONTWRITEBYTECODE=1)"
        for q, name in ((50, "p50"), (99, "p99")):
            base = percentile(python[k][0], q)
            ctx.fig(f"live-{k}-{name}", percentile(live[k][0], q), "s",
                    baseline=percentile(direct[k][0], q), source="the direct path (no owner)",
                    note=note)
            ctx.fig(f"python-pass-{k}-{name}", base, "s", note="python -c pass, same run")
    ctx.fig("live-uncached-median", statistics.median(live["uncached"][0]), "s", baseline=0.030,
            source="goal: 30 ms",
            note="turnback's bytecode " + ("IS cached beside its sources" if _package_bytecode()
                                           else "not cached: compiled at every start"))
    # The agent's own hook, fed the recorded payloads of a Claude Code session (agent-hooks has more).
    from ..hooks import replay
    from .agenthooks import MODULE, live_times

    hooks = live_times(ctx, replay.load(replay.fixture_path("claude-code")), MODULE,
                       envs["uncached"], 1, "agent")
    ctx.fig("agent-hook-uncached-median", statistics.median(hooks), "s", baseline=0.030,
            source="goal: 30 ms",
            note=f"`turnback hook claude-code`, {len(hooks)} recorded events, no bytecode cache")
    ctx.fig("load-average", round(os.getloadavg()[0], 2), None,
            note=f"{os.cpu_count()} cores; start-up figures are only as quiet as the machine")


# -- the live column of checkpoint-vs-shadow-git ------------------------------------------------------
def live_column(ctx, root: Path, changes: dict[str, bytes], git: dict[str, float],
                check_tree) -> None:
    """A live owner's checkpoints on the same tree: the workbench the server runs, with its watcher."""
    from ..capture.ignore import IgnoreRules
    from ..capture.watcher import Watcher
    from .common import begin, open_wb, settle, timed, uris, write

    wb = open_wb(root)
    watcher = Watcher(wb.ws, IgnoreRules(wb.ws))
    if not watcher.start():
        ctx.fig("live-watcher", "unavailable", None)
        wb.close()
        return
    wb.watcher = watcher
    try:
        ctx.require("the watcher is ready", watcher.wait_ready(120))
        t0 = begin(wb, "live: learn the tree")  # the sidecar's start-up sweep: a full walk
        settle(wb, t0)
        t1, pre = timed(begin, wb, "live: the same feature again")
        ctx.check("the live pre-turn checkpoint read the dirty set only", watcher.last_sweep == "dirty",
                  str(watcher.info()))
        for rel, data in changes.items():
            write(root, rel, data)
        res, t_capture = timed(wb.turns.capture, {"uris": uris(wb, sorted(changes))})
        _, t_settle = timed(settle, wb, t1)
        ctx.check("the live settle read the dirty set only", watcher.last_sweep == "dirty")
        ctx.check("the live capture saw every changed path",
                  len(res["captured"]) == len(changes) and all(c["digest"] for c in res["captured"]))
        boundary = {"kind": "beforePrompt", "turn": t1}
        cand = wb.rewind.prepare({"boundary": boundary})
        done = wb.rewind.commit({"boundary": boundary, "planHash": cand["planHash"]})
        ok, why = check_tree()
        ctx.check("the live turn rewinds to the pre-turn bytes", done.get("status") == "committed"
                  and ok, why or str(done.get("status")))
    finally:
        watcher.close()
        wb.close()
    src = "shadow git, same run"
    ctx.fig("live-pre-turn-checkpoint", pre, "s", baseline=git["pre"], source=src,
            note="live owner, watcher dirty set")
    ctx.fig("live-turn-capture-and-settle", t_capture + t_settle, "s", baseline=git["turn"],
            source=src, note=f"capture {t_capture:.4f} s + settle {t_settle:.4f} s")


# -- watcher-fallback -------------------------------------------------------------------------------
def run_watcher_fallback(ctx) -> None:
    from ..capture.ignore import IgnoreRules
    from ..capture.watcher import Watcher
    from .common import begin, open_wb, settle, timed

    n = ctx.pick(500, 5_000, 20_000)
    root = ctx.dir("ws")
    sizes = gen.write_tree(root, n, SEED)
    wb = open_wb(root)
    watcher = Watcher(wb.ws, IgnoreRules(wb.ws))
    if not watcher.start():
        wb.close()
        from .runner import Unavailable

        raise Unavailable("no inotify watcher on this system")
    wb.watcher = watcher
    rels = sorted(sizes)
    try:
        ctx.require("the watcher is ready", watcher.wait_ready(120))
        settle(wb, begin(wb, "learn"))
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        # 1. a forced overflow: the reader is held off while renames fill the kernel queue
        t = begin(wb, "renames while the reader is held")
        with watcher._reading:
            for rel in rels:
                os.rename(root / rel, root / (rel + ".r"))
        _, t_settle = timed(settle, wb, t)
        forced = watcher.last_reason
        files = wb.turns.log({})["turns"][-1]["files"]
        expect_overflow = 2 * len(rels) > limit
        ctx.check("a forced overflow is detected and falls back to a full sweep",
                  forced == "overflow" or not expect_overflow, f"last sweep: {forced}")
        ctx.check("after the fallback the turn names every renamed path, old and new",
                  len(files) == 2 * len(rels), f"{len(files)} files for {len(rels)} renames")
        ctx.fig("forced-overflow-settle", t_settle, "s", note=f"full sweep ({forced})")
        # 2. the same burst back with the reader running: exact either way
        t = begin(wb, "a burst of renames back")
        t0 = time.perf_counter()
        for rel in rels:
            os.rename(root / (rel + ".r"), root / rel)
        burst = time.perf_counter() - t0
        _, t_settle2 = timed(settle, wb, t)
        how = watcher.last_reason or "dirty set"
        files = wb.turns.log({})["turns"][-1]["files"]
        ctx.check("a burst of renames comes out exact", len(files) == 2 * len(rels),
                  f"{len(files)} files ({how})")
        ctx.fig("rename-burst", len(rels), "renames", note=f"in {burst:.2f} s; settled by {how}")
        ctx.fig("rename-burst-settle", t_settle2, "s", note=how)
        ctx.fig("fallbacks", json.dumps(watcher.info()["fallbacks"], sort_keys=True), None)
        # 3. rewind both turns: every file back under its first name with its bytes
        boundary = {"kind": "beforePrompt", "turn": 2}
        cand = wb.rewind.prepare({"boundary": boundary})
        done = wb.rewind.commit({"boundary": boundary, "planHash": cand["planHash"]})
        ctx.check("the rewind commits", done.get("status") == "committed", str(done.get("status")))
    finally:
        watcher.close()
        wb.close()
    wrong = [rel for rel in rels[:: max(1, len(rels) // 500)]
             if (root / rel).read_bytes() != gen.tree_content(SEED, rel, sizes[rel])]
    ctx.check("the tree holds its generated bytes again", not wrong, str(wrong[:5]))
