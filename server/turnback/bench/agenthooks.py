"""`agent-hooks`: a recorded Claude Code session's hook events, each a `turnback hook claude-code`
process timed from start to exit: through a live sidecar (the goal: a median of 30 ms or less), on the
direct path (no sidecar: the store opened by every hook), and beside `python -c pass`. The live
figures are taken three ways: `python -m turnback` with no bytecode cache (as this machine runs
everything: the goal's figure), the same with a warmed cache, and the `turnback` script that
`hooks install` writes when it is on PATH (pip's script imports `re` first, which costs a few ms).

The events are those of server/turnback/hooks/recordings/claude-code/session.json, replayed in order with the agent's
own file changes between them, so the figures include real captures, steps and settles. Then the
real Claude Code runs a scripted session with and without turnback's hooks, and reports what each
hook cost it (bench/realhooks.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..hooks import replay
from .pyenvs import bytecode_envs


MODULE = [sys.executable, "-m", "turnback", "hook", "claude-code"]


def _times(recording, root, scratch, env, argv=MODULE) -> list[float]:
    rep = replay.setup(recording, root, scratch)
    (root / "turnback.toml").write_text("")
    times: list[float] = []
    for step in recording["steps"]:
        for s in step.get("parallel", [step]):
            replay._before(s, rep)
            body = replay._fill(s["payload"], rep)
            start = time.perf_counter()
            proc = subprocess.run(argv, input=json.dumps(body).encode(), capture_output=True,
                                  cwd=root, env=env)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0 or (proc.stdout.strip() and not _guard_warning(proc.stdout)):
                raise RuntimeError(f"a hook exited {proc.returncode}: {proc.stderr.decode()}"
                                   f"{proc.stdout.decode()[:300]}")
            replay._after(s, rep)
    return times


def _guard_warning(stdout: bytes) -> bool:
    """The one thing the recorded session's hooks print: the guard's default warning before its
    `git push` (hooks/guard.py), which a hook says and the agent goes on."""
    try:
        out = json.loads(stdout)
    except ValueError:
        return False
    return str(out.get("systemMessage", "")).startswith("turnback: turnback cannot rewind this") \
        and "permissionDecision" not in out.get("hookSpecificOutput", {})


def live_times(ctx, recording, argv, env, rounds: int, tag: str) -> list[float]:
    """Every event's time through a live owner, a fresh workspace and owner per round."""
    from ..remote import client

    times: list[float] = []
    for i in range(rounds):
        root = ctx.dir(f"{tag}-{i}")
        (root / "turnback.toml").write_text("")
        client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)  # setup, slow under load
        try:
            times += _times(recording, root, ctx.dir(f"{tag}-{i}-agent"), env, argv)
        finally:
            subprocess.run([sys.executable, "-m", "turnback", "daemon", "stop", "--workspace",
                            str(root)], capture_output=True)
    return times


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run(ctx) -> None:
    recording = replay.load(replay.fixture_path("claude-code"))
    rounds = ctx.pick(1, 3, 5)
    direct: list[float] = []
    for i in range(rounds):
        direct += _times(recording, ctx.dir(f"direct{i}"), ctx.dir(f"direct{i}-agent"),
                         {**os.environ, "TURNBACK_HOOK_DIRECT": "1"})
    passes = []
    for _ in range(20):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"])
        passes.append(time.perf_counter() - start)
    base = _pct(passes, 0.5)
    ctx.fig("python -c pass p50", base, "s")
    ctx.fig("direct path p50", _pct(direct, 0.5), "s", baseline=base, source="python -c pass")
    ctx.fig("direct path p99", _pct(direct, 0.99), "s", baseline=base, source="python -c pass")
    ctx.fig("events per round", len(direct) // rounds, None)
    ctx.check("every event exited 0 and printed nothing but the guard's warning (direct path)",
              len(direct) == rounds * sum(len(s.get("parallel", [s])) for s in recording["steps"]))
    envs = bytecode_envs(ctx.work / ctx.scenario)
    script = Path(sys.executable).with_name("turnback")  # what `hooks install` writes, on PATH
    variants = {"python -m turnback": (MODULE, "uncached"),
                "python -m turnback, bytecode cached": (MODULE, "cached")}
    if script.is_file():
        variants["the turnback script"] = ([str(script), "hook", "claude-code"], "uncached")
    live = {name: live_times(ctx, recording, argv, envs[cache], rounds, f"live-{i}")
            for i, (name, (argv, cache)) in enumerate(variants.items())}
    for name, times in live.items():
        note = "bytecode cached" if "cached" in name else "no bytecode cache (PYTHONDONTWRITEBYTECODE=1)"
        ctx.fig(f"live sidecar p50 ({name})", _pct(times, 0.5), "s", baseline=_pct(direct, 0.5),
                source="direct path", note=note)
        ctx.fig(f"live sidecar p99 ({name})", _pct(times, 0.99), "s", baseline=base,
                source="python -c pass", note=note)
    p50 = _pct(live["python -m turnback"], 0.5)
    # the goal is a figure beside its target, not a check: timings depend on the machine's load
    ctx.fig("live sidecar p50 against the 30 ms goal", p50, "s", baseline=0.030, source="goal",
            note="python -m turnback, no bytecode cache")
    ctx.fig("load-average", round(os.getloadavg()[0], 2), None,
            note=f"{os.cpu_count()} cores; start-up figures are only as quiet as the machine")
    from . import realhooks

    realhooks.run(ctx)
