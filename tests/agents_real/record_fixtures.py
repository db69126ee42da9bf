"""Record real sessions of the real agents as fixtures (fixtures/agents/real/AGENT/SCENARIO.json).

    .venv/bin/python tests/agents_real/record_fixtures.py [SCENARIO ...]

Each scenario drives the installed Claude Code or Codex (.ci/install-agents.sh) against the scripted
model server with turnback's hooks installed behind `recorder.py`, which keeps every payload, the
length of the agent's transcript when the hook ran, and what turnback answered. The fixture holds
those events, the agent's transcript and its own output, with machine paths replaced by
/WORKSPACE, /HOME, /CLAUDE_CONFIG_DIR, /CODEX_HOME and `turnback`. Bulky records that only repeat
the agent's system prompt are cut to their shape.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "server"))

from turnback.bench.mockmodel import ModelServer, Reply, Script, call, say, tools  # noqa: E402
from turnback.bench.realagents import ClaudeCode, Codex, agents_bin  # noqa: E402
from turnback.hooks.install import this_turnback  # noqa: E402

OUT = REPO / "fixtures" / "agents" / "real"
CLAUDE_EXTRA = ["StopFailure", "SubagentStart", "Notification", "PreCompact", "PermissionRequest"]
CODEX_EXTRA = ["SubagentStart", "SubagentStop", "SessionEnd", "PermissionRequest", "Interrupt"]
BULKY = {"api-request-blob", "api-request-shape"}


def _install(agent, name: str, events: list[str], log: Path, *, trust: bool = False) -> None:
    recorder = f"{sys.executable} {HERE / 'recorder.py'} {log} -- {this_turnback()}"
    env = {**__import__("os").environ, **agent.env}
    args = [sys.executable, "-m", "turnback", "hooks", "install", name, "--command", recorder,
            "--workspace", str(agent.root)]
    subprocess.run(args, env=env, check=True, capture_output=True)
    settings = agent.root / (".claude/settings.json" if name == "claude-code" else ".codex/hooks.json")
    data = json.loads(settings.read_text())
    command = data["hooks"]["Stop"][0]["hooks"][0]["command"]
    for event in events:
        data["hooks"].setdefault(event, [{"hooks": [{"type": "command", "command": command,
                                                      "timeout": 30}]}])
    settings.write_text(json.dumps(data, indent=2))
    if trust:
        subprocess.run(args + ["--trust"], env=env, check=True, capture_output=True)


def _scrub(value, agent, extra: dict[str, str]):
    text = json.dumps(value)
    pairs = [(str(agent.root), "/WORKSPACE"), (str(agent.home), "/HOME"), *extra.items(),
             (str(agent.world), "/WORLD"), (re.sub(r"[^A-Za-z0-9]", "-", str(agent.root)),
                                            "-WORKSPACE")]
    for old, new in sorted(pairs, key=lambda p: -len(p[0])):
        text = text.replace(json.dumps(old)[1:-1], new)
    recorder = f"{sys.executable} {HERE / 'recorder.py'} {agent.world.parent / 'events.jsonl'} -- "
    text = text.replace(json.dumps(recorder)[1:-1], "recorder EVENTS -- ")
    text = text.replace(json.dumps(this_turnback())[1:-1], "turnback")
    text = text.replace(json.dumps(str(agent.world.parent))[1:-1], "/WORK")
    text = text.replace(json.dumps(sys.executable)[1:-1], "python")
    return json.loads(text)


def _slim(record: dict) -> dict:
    if record.get("type") in BULKY:
        return {"type": record["type"], "elided": "bulky: repeats the request sent to the model"}
    att = record.get("attachment")
    if isinstance(att, dict) and len(json.dumps(att)) > 2000:
        return {**record, "attachment": {"type": att.get("type"), "elided": len(json.dumps(att))}}
    return record


def _events(log: Path) -> list[dict]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    t0 = rows[0]["at"] if rows else 0
    for r in rows:
        r["at"] = round(r["at"] - t0, 3)
    return rows


def _write(agent_name: str, scenario: str, about: str, doc: dict) -> None:
    path = OUT / agent_name / f"{scenario}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"agent": agent_name, "scenario": scenario, "about": about, **doc},
                               indent=1) + "\n")
    print(f"{path.relative_to(REPO)}: {len(doc['events'])} hook events, "
          f"{path.stat().st_size // 1024} KiB")


# ------------------------------------------------------------------------------------ Claude Code
def _claude(work: Path, model: ModelServer) -> tuple[ClaudeCode, Path, Path]:
    """A Claude Code world with its workspace seeded and the recording hooks installed."""
    root = work / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet():\n    return 'hi'\n")
    (root / "old.txt").write_text("old\n")
    agent = ClaudeCode(agents_bin(), root, work / "world", model.url)
    _install(agent, "claude-code", CLAUDE_EXTRA, work / "events.jsonl")
    return agent, root, work / "events.jsonl"


def _claude_doc(agent: ClaudeCode, log: Path, session_id: str, lines, script: list[str]) -> dict:
    extra = {str(agent.config): "/CLAUDE_CONFIG_DIR"}
    transcript = [_slim(r) for r in agent.transcript(session_id)]
    subagents = {}
    for p in sorted((agent.config / "projects").glob(f"*/{session_id}/subagents/*.jsonl")):
        subagents[p.name] = [_slim(json.loads(l)) for l in p.read_text().splitlines() if l.strip()]
    stream = [ln.data for ln in lines if ln.data.get("subtype") != "init"]
    version = subprocess.run([agent.program("claude"), "--version"], capture_output=True,
                             text=True).stdout.split()[0]
    return _scrub({"version": version, "prompts": script, "events": _events(log),
                   "transcript": transcript, "subagents": subagents, "stream": stream}, agent, extra)


def claude_session(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _claude(work, model)
        prompts = ["T1 add notes and say hello", "T2 shell edits", "T3 a failing tool",
                   "T4 ask a helper"]
        model.script.add(prompts[0], [tools(call("Write", file_path=str(root / "notes.txt"),
                                                 content="one\n"),
                                            call("Edit", file_path=str(root / "app.py"),
                                                 old_string="'hi'", new_string="'hello'")),
                                      say("T1 done: notes and hello")])
        model.script.add(prompts[1], [tools(call("Bash", command="printf 'two\\n' >> notes.txt && "
                                                 "echo made > made.txt && rm old.txt",
                                                 description="edit")), say("T2 done: shell edits")])
        model.script.add(prompts[2], [tools(call("Read", file_path=str(root / "missing.txt")),
                                            call("Bash", command="exit 3", description="fails")),
                                      say("T3 done: it failed")])
        model.script.add(prompts[3], [tools(call("Agent", description="helper task",
                                                 prompt="H1 the helper writes its file",
                                                 subagent_type="general-purpose",
                                                 run_in_background=False)),
                                      say("T4 done: the helper wrote")])
        model.script.add("H1 the helper writes its file", [
            tools(call("Write", file_path=str(root / "helper.txt"), content="from the helper\n")),
            say("helper wrote helper.txt")])
        session = agent.session()
        for p in prompts:
            session.prompt(p)
        session.close()
        _write("claude-code", "session", "four turns in one headless session: Write+Edit in "
               "parallel, a Bash edit, a failing Read and Bash, a foreground helper (Agent) that "
               "writes; then end of input (SessionEnd)",
               _claude_doc(agent, log, session.session_id, session.lines, prompts))


def claude_background_helper(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _claude(work, model)
        prompt, helper = "T1 start a background helper", "H1 the background helper writes late"
        model.script.add(prompt, [tools(call("Agent", description="background helper",
                                             prompt=helper, subagent_type="general-purpose")),
                                  say("T1 answered while the helper works"),
                                  say("T1 noted the helper's result")])
        model.script.add(helper, [tools(call("Bash", command="sleep 1; echo late > late.txt",
                                             description="late write")),
                                  say("helper done late")])
        session = agent.session()
        session.prompt(prompt)
        # the helper's notification comes back as a turn of its own: wait for its result too
        session.reader.wait(lambda d: d.get("type") == "result", len(session.lines), 60) \
            if not (root / "late.txt").exists() else None
        session.close()
        _write("claude-code", "background-helper", "an Agent call with Claude Code's default "
               "(run in the background): the main turn's Stop comes first, the helper writes after "
               "it, and its notification starts another turn",
               _claude_doc(agent, log, session.session_id, session.lines, [prompt, helper]))


def claude_blocked_stop(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _claude(work, model)
        prompt = "T1 work until the stop hook is happy"
        model.script.add(prompt, [tools(call("Write", file_path=str(root / "a.txt"), content="a\n")),
                                  say("first answer"),
                                  tools(call("Write", file_path=str(root / "b.txt"), content="b\n")),
                                  say("second answer, after the block")])
        gate = work / "block-once.py"
        gate.write_text("import json, sys\nd = json.load(sys.stdin)\n"
                        "if not d.get('stop_hook_active'):\n"
                        "    print(json.dumps({'decision': 'block', 'reason': 'also write b.txt'}))\n")
        settings = root / ".claude" / "settings.json"
        data = json.loads(settings.read_text())
        data["hooks"]["Stop"].append({"hooks": [{"type": "command",
                                                 "command": f"{sys.executable} {gate}"}]})
        settings.write_text(json.dumps(data, indent=2))
        session = agent.session()
        session.prompt(prompt)
        session.close()
        _write("claude-code", "blocked-stop", "another Stop hook blocks the first Stop "
               "(decision: block); Claude Code continues the same turn and sends a second Stop "
               "with stop_hook_active: true",
               _claude_doc(agent, log, session.session_id, session.lines, [prompt]))


def claude_api_error(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _claude(work, model)
        p1, p2 = "T1 write notes", "T2 edit then the API fails"
        model.script.add(p1, [tools(call("Write", file_path=str(root / "notes.txt"),
                                         content="one\n")), say("T1 done")])
        model.script.add(p2, [tools(call("Write", file_path=str(root / "notes.txt"),
                                         content="two\n")),
                              Reply(error=(400, "invalid_request_error", "scripted failure"))])
        session = agent.session()
        session.prompt(p1)
        session.prompt(p2)
        session.close()
        _write("claude-code", "api-error", "turn 2 ends in an API error (HTTP 400): StopFailure "
               "instead of Stop", _claude_doc(agent, log, session.session_id, session.lines,
                                              [p1, p2]))


def claude_interrupt(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _claude(work, model)
        p1, p2 = "T1 write notes", "T2 write then think forever"
        model.script.add(p1, [tools(call("Write", file_path=str(root / "notes.txt"),
                                         content="one\n")), say("T1 done")])
        model.script.add(p2, [tools(call("Write", file_path=str(root / "notes.txt"),
                                         content="two\n")), Reply(hang=True)])
        session = agent.session()
        session.prompt(p1)
        session.send(p2)
        model.wait_for(lambda r: r.choice is not None and r.choice.prompt == p2
                       and r.choice.step == 1)
        session.proc.send_signal(signal.SIGKILL)
        session.proc.wait(30)
        session.reader.finished(10)
        _write("claude-code", "interrupt", "the agent is killed (SIGKILL) while the model is still "
               "answering turn 2, after its Write ran: no Stop, no SessionEnd",
               _claude_doc(agent, log, session.session_id, session.lines, [p1, p2]))


def claude_resume_at(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _claude(work, model)
        prompts = ["T1 write notes", "T2 shell edit", "T3 more"]
        model.script.add(prompts[0], [tools(call("Write", file_path=str(root / "notes.txt"),
                                                 content="one\n")), say("T1 done")])
        model.script.add(prompts[1], [tools(call("Bash", command="echo two >> notes.txt",
                                                 description="edit")), say("T2 done")])
        model.script.add(prompts[2], [say("T3 done")])
        model.script.add("T4 after resuming at turn 1", [say("T4 done")])
        session = agent.session()
        for p in prompts:
            session.prompt(p)
        session.close()
        t1_end = next(r["uuid"] for r in agent.transcript(session.session_id)
                      if r.get("type") == "assistant"
                      and any(b.get("text") == "T1 done" for b in r["message"]["content"]))
        run = agent.run_argv(agent.resume_command(
            f"claude --resume {session.session_id} --resume-session-at {t1_end}",
            "T4 after resuming at turn 1"))
        _write("claude-code", "resume-at", "three turns, then `claude --resume S "
               "--resume-session-at U` (U: the record of turn 1's answer) with a fourth prompt: "
               "the new prompt is parented at U, the later records stay in the file",
               _claude_doc(agent, log, session.session_id, session.lines + run.lines,
                           prompts + ["T4 after resuming at turn 1"]))


# ------------------------------------------------------------------------------------------ Codex
def _codex(work: Path, model: ModelServer) -> tuple[Codex, Path, Path]:
    """A Codex world: a git checkout, the recording hooks installed and trusted through Codex."""
    root = work / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("def greet():\n    return 'hi'\n")
    agent = Codex(agents_bin(), root, work / "world", model.url)
    _install(agent, "codex", CODEX_EXTRA, work / "events.jsonl", trust=True)
    return agent, root, work / "events.jsonl"


def _codex_doc(agent: Codex, log: Path, thread: str, runs, prompts) -> dict:
    extra = {str(agent.codex_home): "/CODEX_HOME"}
    transcript = [r for r in agent.transcript(thread)
                  if not (r.get("type") == "session_meta" and len(json.dumps(r)) > 4000)]
    version = subprocess.run([agent.program("codex"), "--version"], capture_output=True,
                             text=True).stdout.split()[-1]
    stream = [ln.data for run in runs for ln in run.lines]
    return _scrub({"version": version, "prompts": prompts, "events": _events(log),
                   "transcript": [_slim_codex(r) for r in transcript], "stream": stream},
                  agent, extra)


def _slim_codex(record: dict) -> dict:
    text = json.dumps(record)
    if len(text) > 4000:
        payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
        return {"type": record.get("type"), "payloadType": payload.get("type"),
                "elided": len(text)}
    return record


def codex_session(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _codex(work, model)
        patch = ("*** Begin Patch\n*** Add File: notes.txt\n+one\n*** Update File: app.py\n"
                 "@@\n def greet():\n-    return 'hi'\n+    return 'hello'\n*** End Patch\n")
        prompts = ["T1 patch two files", "T2 shell edits", "T3 a failing command",
                   "T4 ask a helper", "T5 resumed"]
        model.script.add(prompts[0], [tools(call("apply_patch", freeform=True, input=patch)),
                                      say("T1 done")])
        model.script.add(prompts[1], [tools(call("exec_command", cmd="printf 'two\\n' >> notes.txt"
                                                 " && echo made > made.txt")), say("T2 done")])
        model.script.add(prompts[2], [tools(call("exec_command", cmd="cat missing.txt")),
                                      say("T3 done")])
        model.script.add(prompts[3], [tools(call("spawn_agent", namespace="collaboration",
                                                 task_name="helper", fork_turns="none",
                                                 message="H1 helper writes"),
                                            call("wait_agent", namespace="collaboration",
                                                 timeout_ms=30000)),
                                      say("T4 done")])
        model.script.add("H1 helper writes", [tools(call("exec_command",
                                                         cmd="echo helper > helper.txt")),
                                              say("helper done")])
        model.script.add(prompts[4], [say("T5 done")])
        runs, thread = [], None
        for p in prompts:
            run = agent.exec(p, resume=thread)
            runs.append(run)
            thread = thread or agent.thread_id(run)
        _write("codex", "session", "five `codex exec` runs of one thread (the later ones with "
               "`exec resume`): apply_patch adding and updating, a shell edit, a failing command, "
               "a helper (collaboration spawn_agent + wait_agent) whose command writes a file, and "
               "a plain answer", _codex_doc(agent, log, thread, runs, prompts))


def codex_interrupt(work: Path) -> None:
    with ModelServer(Script()) as model:
        agent, root, log = _codex(work, model)
        p1, p2 = "T1 write notes", "T2 write then think forever"
        model.script.add(p1, [tools(call("exec_command", cmd="echo one > notes.txt")),
                              say("T1 done")])
        model.script.add(p2, [tools(call("exec_command", cmd="echo two > notes.txt")),
                              Reply(hang=True)])
        first = agent.exec(p1)
        thread = agent.thread_id(first)
        proc = agent.start(p2, resume=thread)
        model.wait_for(lambda r: r.choice is not None and r.choice.prompt == p2
                       and r.choice.step == 1)
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        proc.reader.finished(10)
        from turnback.bench.realagents import Run

        second = Run(proc.reader.lines, proc.returncode, proc.stderr.read())
        _write("codex", "interrupt", "`codex exec` interrupted (SIGINT, Ctrl-C) while the model "
               "is still answering turn 2, after its command ran",
               _codex_doc(agent, log, thread, [first, second], [p1, p2]))


SCENARIOS = {"claude-session": claude_session, "claude-background-helper": claude_background_helper,
             "claude-blocked-stop": claude_blocked_stop, "claude-api-error": claude_api_error,
             "claude-interrupt": claude_interrupt, "claude-resume-at": claude_resume_at,
             "codex-session": codex_session, "codex-interrupt": codex_interrupt}


def main(names: list[str]) -> int:
    if agents_bin() is None:
        print("no installed agents: run .ci/install-agents.sh first", file=sys.stderr)
        return 2
    for name in names or list(SCENARIOS):
        work = Path(tempfile.mkdtemp(prefix=f"tb-record-{name}-"))
        try:
            SCENARIOS[name](work)
        finally:
            subprocess.run([sys.executable, "-m", "turnback", "daemon", "stop", "--workspace",
                            str(work / "ws")], capture_output=True)
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
