"""The agent-hooks bench, part two: what turnback's hooks cost the real Claude Code, as the agent
itself reports it.

The same scripted session (four turns: parallel Write and Edit, a shell edit, a failing Read and a
failing command, a plain answer) runs in the installed `claude` (`.ci/install-agents.sh`) against the
scripted model server, once with `turnback hooks install claude-code` and once with no hooks, round
after round in the same run. `--include-hook-events` puts a `hook_started` and a `hook_response`
line in the agent's output around every hook it runs: the time between them, read as the lines
arrive, is each hook's cost as the agent waited for it (Claude Code 2.1.328 puts no duration in those
lines; its transcript's `stop_hook_summary` carries `durationMs` for Stop hooks, reported beside).
The sessions' wall times, with hooks and without, give the whole added cost per event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from .mockmodel import ModelServer, Script, call, say, tools
from .realagents import ClaudeCode, agents_bin, hook_durations, hook_problems

PROMPTS = ("B1 write and edit", "B2 shell edit", "B3 two failures", "B4 just answer")


def _script(model: ModelServer, root) -> None:
    model.script.add(PROMPTS[0], [tools(call("Write", file_path=str(root / "notes.txt"),
                                             content="one\n"),
                                        call("Edit", file_path=str(root / "app.py"),
                                             old_string="'hi'", new_string="'hello'")),
                                  say("B1 done")])
    model.script.add(PROMPTS[1], [tools(call("Bash", command="printf 'two\\n' >> notes.txt",
                                             description="edit")), say("B2 done")])
    model.script.add(PROMPTS[2], [tools(call("Read", file_path=str(root / "missing.txt")),
                                        call("Bash", command="exit 3", description="fails")),
                                  say("B3 done")])
    model.script.add(PROMPTS[3], [say("B4 done")])


def _session(ctx, tag: str, hooks: bool) -> dict:
    """One scripted session in a fresh workspace; its wall time, hook times and answers."""
    root = ctx.dir(f"{tag}-ws")
    (root / "app.py").write_text("def greet():\n    return 'hi'\n")
    with ModelServer(Script()) as model:
        agent = ClaudeCode(agents_bin(), root, ctx.dir(f"{tag}-world"), model.url)
        _script(model, root)
        if hooks:
            env = {**os.environ, **agent.env}
            tb = [sys.executable, "-m", "turnback"]
            subprocess.run(tb + ["hooks", "install", "claude-code", "--workspace", str(root)],
                           env=env, check=True, capture_output=True)
            from ..remote import client

            client.ensure_owner(str(root), str(root / ".turnback"))  # steady state, as in part one
        try:
            start = time.perf_counter()
            session = agent.session()
            answers = [session.prompt(p).get("result") for p in PROMPTS]
            session.close()
            wall = time.perf_counter() - start
        finally:
            if hooks:
                subprocess.run([sys.executable, "-m", "turnback", "daemon", "stop", "--workspace",
                                str(root)], capture_output=True)
        stops = [info.get("durationMs") for rec in agent.transcript(session.session_id)
                 if rec.get("subtype") == "stop_hook_summary" for info in rec.get("hookInfos", [])]
    return {"wall": wall, "hooks": hook_durations(session.lines),
            "problems": hook_problems(session.lines), "answers": answers,
            "stopMs": [s / 1000 for s in stops if isinstance(s, (int, float))]}


def _pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else None


def run(ctx) -> None:
    if agents_bin() is None:
        ctx.fig("real claude-code", None, None,
                note="not installed: run .ci/install-agents.sh (the npm registry) to measure it")
        return
    rounds = ctx.pick(1, 2, 4)
    _session(ctx, "real-warm-up", hooks=False)  # the first start of a 370 MB binary is not its cost
    with_hooks, without = [], []
    for i in range(rounds):  # alternate, so a change in the machine's load falls on both
        without.append(_session(ctx, f"real-bare-{i}", hooks=False))
        with_hooks.append(_session(ctx, f"real-hooks-{i}", hooks=True))
    problems = [p for s in with_hooks for p in s["problems"]]
    ctx.check("the real agent reported no hook error", not problems, json.dumps(problems)[:500])
    ctx.check("the same answers with and without hooks",
              all(s["answers"] == without[0]["answers"] for s in with_hooks + without))
    times = [d for s in with_hooks for _, d in s["hooks"]]
    ctx.check("the agent reported every hook it ran", bool(times))
    if not times:
        return
    per_round = len(times) // rounds
    ctx.fig("real claude-code: hooks per session", per_round, None)
    bare = _pct([s["wall"] for s in without], 0.5)
    hooked = _pct([s["wall"] for s in with_hooks], 0.5)
    ctx.fig("real claude-code: session without hooks", bare, "s", note=f"{len(PROMPTS)} turns")
    ctx.fig("real claude-code: session with turnback's hooks", hooked, "s", baseline=bare,
            source="the same session without hooks")
    ctx.fig("real claude-code: added per hook event", (hooked - bare) / per_round, "s",
            note="(with - without) / hook events, medians of the sessions")
    ctx.fig("real claude-code: hook p50, as the agent waited", _pct(times, 0.5), "s",
            note="hook_started to hook_response in --include-hook-events")
    ctx.fig("real claude-code: hook p99, as the agent waited", _pct(times, 0.99), "s")
    for event in sorted({e for s in with_hooks for e, _ in s["hooks"]}):
        one = [d for s in with_hooks for e, d in s["hooks"] if e == event]
        ctx.fig(f"real claude-code: {event} p50", _pct(one, 0.5), "s", note=f"{len(one)} runs")
    stops = [d for s in with_hooks for d in s["stopMs"]]
    if stops:
        ctx.fig("real claude-code: Stop hook p50 (its transcript's durationMs)", _pct(stops, 0.5),
                "s", note="Claude Code's own figure, Stop hooks only")
