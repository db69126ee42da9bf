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

Codex the same way, through its app-server (the engine its terminal UI embeds), which reports each
hook run with its own `durationMs` (`hook/completed`): the same four turns in one thread, with
`hooks install codex --trust` and with no hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager

from .mockmodel import ModelServer, Script, call, say, tools
from .realagents import (ClaudeCode, Codex, CodexThread, agents_bin, codex_hook_problems,
                         hook_durations, hook_problems)

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


@contextmanager
def _hooks(agent, install: list[str] | None):
    """turnback's hooks installed (`hooks install ARGS`) with a live owner already running, the
    steady state part one measures too; nothing at all when `install` is None."""
    if install is None:
        yield
        return
    tb = [sys.executable, "-m", "turnback"]
    where = ["--workspace", str(agent.root)]
    subprocess.run(tb + ["hooks", "install", *install, *where], env={**os.environ, **agent.env},
                   check=True, capture_output=True)
    from ..remote import client

    client.ensure_owner(str(agent.root), str(agent.root / ".turnback"), timeout=60)
    try:
        yield
    finally:
        subprocess.run(tb + ["daemon", "stop", *where], capture_output=True)


def _session(ctx, tag: str, hooks: bool) -> dict:
    """One scripted session in a fresh workspace; its wall time, hook times and answers."""
    root = ctx.dir(f"{tag}-ws")
    (root / "app.py").write_text("def greet():\n    return 'hi'\n")
    with ModelServer(Script()) as model:
        agent = ClaudeCode(agents_bin(), root, ctx.dir(f"{tag}-world"), model.url)
        _script(model, root)
        with _hooks(agent, ["claude-code"] if hooks else None):
            start = time.perf_counter()
            session = agent.session()
            answers = [session.prompt(p).get("result") for p in PROMPTS]
            session.close()
            wall = time.perf_counter() - start
        stops = [info.get("durationMs") for rec in agent.transcript(session.session_id)
                 if rec.get("subtype") == "stop_hook_summary" for info in rec.get("hookInfos", [])]
    return {"wall": wall, "hooks": hook_durations(session.lines),
            "problems": hook_problems(session.lines), "answers": answers,
            "stopMs": [s / 1000 for s in stops if isinstance(s, (int, float))]}


CODEX_PROMPTS = ("C1 patch", "C2 shell edit", "C3 a failing command", "C4 just answer")
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+one\n*** End Patch\n"


def _codex_script(model: ModelServer) -> None:
    model.script.add(CODEX_PROMPTS[0], [tools(call("apply_patch", freeform=True, input=PATCH)),
                                        say("C1 done")])
    model.script.add(CODEX_PROMPTS[1], [tools(call("exec_command",
                                                   cmd="printf 'two\\n' >> notes.txt")),
                                        say("C2 done")])
    model.script.add(CODEX_PROMPTS[2], [tools(call("exec_command", cmd="cat missing.txt")),
                                        say("C3 done")])
    model.script.add(CODEX_PROMPTS[3], [say("C4 done")])


def _codex_session(ctx, tag: str, hooks: bool) -> dict:
    root = ctx.dir(f"{tag}-ws")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with ModelServer(Script()) as model:
        agent = Codex(agents_bin(), root, ctx.dir(f"{tag}-world"), model.url)
        _codex_script(model)
        with _hooks(agent, ["codex", "--trust"] if hooks else None):
            start = time.perf_counter()
            thread = CodexThread(agent)
            try:
                answers = [_answer(thread.turn(p)) for p in CODEX_PROMPTS]
            finally:
                thread.close()
            wall = time.perf_counter() - start
    runs = thread.hook_runs()
    return {"wall": wall, "answers": answers, "problems": codex_hook_problems(runs),
            "hooks": [(r["eventName"], r["durationMs"] / 1000) for r in runs
                      if isinstance(r.get("durationMs"), int)]}


def _answer(notes: list[dict]) -> str | None:
    texts = [m["params"]["item"].get("text") for m in notes if m.get("method") == "item/completed"
             and m["params"].get("item", {}).get("type") == "agentMessage"]
    return texts[-1] if texts else None


def _report(ctx, name: str, with_hooks: list[dict], without: list[dict], rounds: int,
            how: str) -> None:
    problems = [p for s in with_hooks for p in s["problems"]]
    ctx.check(f"{name} reported no hook error", not problems, json.dumps(problems)[:500])
    ctx.check(f"{name}: the same answers with and without hooks",
              all(s["answers"] == without[0]["answers"] for s in with_hooks + without))
    times = [d for s in with_hooks for _, d in s["hooks"]]
    ctx.check(f"{name} reported every hook it ran", bool(times))
    if not times:
        return
    per_round = len(times) // rounds
    ctx.fig(f"real {name}: hooks per session", per_round, None)
    bare = _pct([s["wall"] for s in without], 0.5)
    hooked = _pct([s["wall"] for s in with_hooks], 0.5)
    ctx.fig(f"real {name}: session without hooks", bare, "s", note="4 turns")
    ctx.fig(f"real {name}: session with turnback's hooks", hooked, "s", baseline=bare,
            source="the same session without hooks")
    ctx.fig(f"real {name}: added per hook event", (hooked - bare) / per_round, "s",
            note="(with - without) / hook events, medians of the sessions")
    ctx.fig(f"real {name}: hook p50, as the agent reports it", _pct(times, 0.5), "s", note=how)
    ctx.fig(f"real {name}: hook p99, as the agent reports it", _pct(times, 0.99), "s", note=how)
    for event in sorted({e for s in with_hooks for e, _ in s["hooks"]}):
        one = [d for s in with_hooks for e, d in s["hooks"] if e == event]
        ctx.fig(f"real {name}: {event} p50", _pct(one, 0.5), "s", note=f"{len(one)} runs")


def _pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else None


def run(ctx) -> None:
    if agents_bin() is None:
        ctx.fig("real agents", None, None,
                note="not installed: run .ci/install-agents.sh (the npm registry) to measure them")
        return
    rounds = ctx.pick(1, 2, 4)
    if ctx.scale != "tiny":  # tiny is the suite's smoke run: the figures there are not read
        # the first start of each agent (a binary of some 300 MB, cold from disk) is not its cost
        _session(ctx, "claude-warm-up", hooks=False)
        _codex_session(ctx, "codex-warm-up", hooks=False)
    claude = {True: [], False: []}
    codex = {True: [], False: []}
    for i in range(rounds):  # alternate, so a change in the machine's load falls on both
        for hooks in (False, True):
            claude[hooks].append(_session(ctx, f"claude-{hooks}-{i}", hooks))
            codex[hooks].append(_codex_session(ctx, f"codex-{hooks}-{i}", hooks))
    _report(ctx, "claude-code", claude[True], claude[False], rounds,
            "as the agent waited (hook_started to hook_response in --include-hook-events)")
    stops = [d for s in claude[True] for d in s["stopMs"]]
    if stops:
        ctx.fig("real claude-code: Stop hook p50 (its transcript's durationMs)", _pct(stops, 0.5),
                "s", note="Claude Code's own figure, Stop hooks only")
    _report(ctx, "codex", codex[True], codex[False], rounds,
            "Codex's own durationMs (app-server hook/completed)")
