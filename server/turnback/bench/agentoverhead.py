"""`agent-overhead`: what turnback costs each real agent (Claude Code, Codex, Gemini CLI, OpenCode,
Copilot CLI), per hook event.

For each agent, the same scripted three-turn session (its file tool writes a file, a shell edit, a
plain answer) runs against the scripted model server, once with turnback's hooks (OpenCode: its
plugin) and once with none, alternating round after round in the same run. Each session first
sends a warm-up prompt, untimed (an agent's first start, and OpenCode's one-time install of its
plugin package in `.opencode/`, are not turnback's cost). Two figures per agent:

* each hook event's wall time, from inside the agent's hook slot: the installed command is a small
  `sh` wrapper around turnback's that records how long `turnback hook AGENT` ran (the wrapper's own
  `sh` and `date` are included, the agent's spawning of it is not): its p50 is the goal's figure
  (20 ms or less);
* the three turns' wall time with hooks less without, divided by the number of hook events: what
  the agent as a whole was slowed by each event, spawning and waiting included (noisy on a loaded
  machine: the figure says so).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .mockmodel import ModelServer, Script, call, say, tools
from .realagents import ClaudeCode, Codex, agents_bin
from .realcopilot import Copilot
from .realgemini import Gemini
from .realopencode import OpenCode

WARM = "W0 warm up"
WRAPPER = """#!/bin/sh
s=$(date +%s%N)
"$@"
rc=$?
e=$(date +%s%N)
echo $((e - s)) >> {log}
exit $rc
"""


def _scripts(model: ModelServer, agent: str, root: Path, tag: str) -> list[str]:
    """The three timed prompts, scripted in the agent's own tools (a tag keeps rounds apart)."""
    prompts = [f"O1 {tag} write", f"O2 {tag} shell edit", f"O3 {tag} answer"]
    note = str(root / "notes.txt")
    write = {"claude-code": call("Write", file_path=note, content="one\n"),
             "codex": call("apply_patch", freeform=True,
                           input="*** Begin Patch\n*** Add File: notes.txt\n+one\n*** End Patch\n"),
             "gemini": call("write_file", file_path=note, content="one\n"),
             "opencode": call("write", filePath=note, content="one\n"),
             "copilot": call("create", path=note, file_text="one\n")}[agent]
    command = "printf 'two\\n' >> notes.txt"
    shell = {"claude-code": call("Bash", command=command, description="edit"),
             "codex": call("exec_command", cmd=command),
             "gemini": call("run_shell_command", command=command),
             "opencode": call("bash", command=command, description="edit"),
             "copilot": call("bash", command=command, description="edit")}[agent]
    model.script.add(WARM, [say("warm")])
    model.script.add(prompts[0], [tools(write), say("O1 done")])
    model.script.add(prompts[1], [tools(shell), say("O2 done")])
    model.script.add(prompts[2], [say("O3 done")])
    return prompts


def _make(agent: str, root: Path, world: Path, url: str):
    cls = {"claude-code": ClaudeCode, "codex": Codex, "gemini": Gemini, "opencode": OpenCode,
           "copilot": Copilot}[agent]
    made = cls(agents_bin(), root, world, url)
    if agent == "gemini":
        made.trust_folder()
    return made


def _prompt_all(agent: str, made, prompts: list[str]) -> None:
    """The warm-up, then the timed prompts, one conversation; returns after the last."""
    if agent == "claude-code":
        session = made.session()
        for p in prompts:
            session.prompt(p)
        session.close()
        return
    runner = {"codex": lambda p, c: made.exec(p, resume=c),
              "gemini": lambda p, c: made.run(p, resume=c),
              "opencode": lambda p, c: made.run(p, session=c),
              "copilot": lambda p, c: made.run(p, c)}[agent]
    ident = made.thread_id if agent == "codex" else made.session_id
    convo = None
    for p in prompts:
        run = runner(p, convo)
        if run.returncode != 0:
            raise RuntimeError(f"{agent} failed on {p!r}: {run.stderr[-500:]}")
        convo = convo or ident(run)


def _session(ctx, agent: str, tag: str, hooks: bool) -> dict:
    root = ctx.dir(f"{agent}-{tag}-ws")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    log = ctx.dir(f"{agent}-{tag}-log") / "hook-ns.txt"
    log.touch()
    tb = [sys.executable, "-m", "turnback"]
    with ModelServer(Script()) as model:
        made = _make(agent, root, ctx.dir(f"{agent}-{tag}-world"), model.url)
        prompts = _scripts(model, agent, root, tag)
        if hooks:
            wrapper = log.with_name("hook.sh")
            wrapper.write_text(WRAPPER.format(log=shlex.quote(str(log))))
            wrapper.chmod(0o755)
            script = Path(sys.executable).with_name("turnback")
            inner = str(script) if script.exists() else f"{sys.executable} -m turnback"
            install = ["hooks", "install", agent, "--command", f"{wrapper} {inner}"]
            if agent == "codex":
                install.append("--trust")
            subprocess.run(tb + install + ["--workspace", str(root)],
                           env={**os.environ, **made.env}, check=True, capture_output=True)
        try:
            _prompt_all(agent, made, [WARM])  # untimed: first start, OpenCode's package install
            before = len(log.read_text().split())
            start = time.perf_counter()
            _prompt_all(agent, made, prompts)
            wall = time.perf_counter() - start
        finally:
            subprocess.run(tb + ["daemon", "stop", "--workspace", str(root)], capture_output=True)
    times = [int(x) / 1e9 for x in log.read_text().split()[before:]]
    return {"wall": wall, "hooks": times}


def _pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else None


AGENTS = ("claude-code", "codex", "gemini", "opencode", "copilot")


def run(ctx) -> None:
    if agents_bin() is None:
        ctx.fig("real agents", None, None,
                note="not installed: run .ci/install-agents.sh (the npm registry) to measure them")
        return
    rounds = ctx.pick(1, 1, 3)
    # tiny is the suite's smoke run: one agent (Codex starts fastest) proves the instrument
    default = ",".join(AGENTS) if ctx.scale != "tiny" else "codex"
    wanted = [a for a in os.environ.get("TURNBACK_BENCH_AGENTS", default).split(",") if a]
    for agent in wanted:
        with_hooks, without = [], []
        for i in range(rounds):  # alternate, so a change in the machine's load falls on both
            without.append(_session(ctx, agent, f"bare{i}", hooks=False))
            with_hooks.append(_session(ctx, agent, f"hooked{i}", hooks=True))
        times = [t for s in with_hooks for t in s["hooks"]]
        ctx.check(f"{agent}: turnback's hooks ran", bool(times))
        if not times:
            continue
        per_session = len(times) / rounds
        bare = _pct([s["wall"] for s in without], 0.5)
        hooked = _pct([s["wall"] for s in with_hooks], 0.5)
        ctx.fig(f"{agent}: hook events in 3 turns", per_session, None)
        p50 = _pct(times, 0.5)
        ctx.fig(f"{agent}: hook event p50", p50, "s",
                note="turnback hook's wall time inside the agent's hook slot (sh wrapper incl.)")
        ctx.fig(f"{agent}: hook event p50 within the 20 ms goal", int(p50 <= 0.020), None,
                note="a figure, not a check: the goal is read beside the machine's load")
        ctx.fig(f"{agent}: hook event p90", _pct(times, 0.9), "s")
        ctx.fig(f"{agent}: 3 turns without turnback", bare, "s")
        ctx.fig(f"{agent}: 3 turns with turnback", hooked, "s", baseline=bare,
                source="the same session without hooks, same run")
        ctx.fig(f"{agent}: added wall time per hook event", (hooked - bare) / per_session, "s",
                note="(with - without) / events; whole-session noise included")
