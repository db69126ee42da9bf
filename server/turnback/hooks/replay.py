"""Replaying a recorded agent session (turnback/hooks/recordings/AGENT/*.json) through the real hook command.

A recording is the agent's payloads in the order the agent sent them, plus what the agent did between
them (the tool's own effect on the files, the transcript lines it wrote), so a replay in a scratch
workspace reproduces the session exactly:

    {"agent": "claude-code", "files": {"path": "text"},
     "steps": [{"payload": {...}, "event": "preToolUse"?,      # --event, for Copilot
                "transcript": [records appended before the payload is sent],
                "before": [actions done before it is sent],      # an event after the fact
                "do": [{"write": "path", "text": "..."}, {"delete": "path"}]},   # after it
               {"parallel": [step, step]}]}                      # sent at once, as parallel tools

`{{WS}}` in any string stands for the workspace folder, `{{TRANSCRIPT}}` for the transcript file and
`{{HELPER}}` for a helper agent's transcript file (both kept in a scratch folder outside the workspace).
Used by the tests and by `turnback demo --agent`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Inside the package, so that `turnback demo --agent AGENT` works from an installed wheel.
FIXTURES = Path(__file__).resolve().parent / "recordings"


@dataclass
class Sent:
    payload: dict
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Replay:
    agent: str
    workspace: Path
    scratch: Path
    sent: list[Sent] = field(default_factory=list)

    @property
    def transcript(self) -> Path:
        return self.scratch / "transcript.jsonl"

    def outputs(self) -> list[dict]:
        return [json.loads(s.stdout) for s in self.sent if s.stdout.strip()]


def fixture_path(agent: str, name: str = "session") -> Path:
    return FIXTURES / agent / f"{name}.json"


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text("utf-8"))


def hook_argv(agent: str) -> list[str]:
    return [sys.executable, "-m", "turnback", "hook", agent]


def setup(recording: dict, workspace: Path, scratch: Path) -> Replay:
    """Write the recording's starting files into the workspace."""
    rep = Replay(recording["agent"], Path(workspace), Path(scratch))
    rep.scratch.mkdir(parents=True, exist_ok=True)
    for rel, text in recording.get("files", {}).items():
        path = rep.workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return rep


def run(recording: dict, rep: Replay, *, argv: list[str] | None = None, env: dict | None = None,
        until: int | None = None, start: int = 0) -> Replay:
    """Send the steps [start, until) through the hook command."""
    argv = argv or hook_argv(rep.agent)
    steps = recording["steps"][start:until]
    for step in steps:
        group = step.get("parallel")
        if group is None:
            _send(step, rep, argv, env)
            continue
        for s in group:
            _before(s, rep)
        threads = [threading.Thread(target=_send, args=(s, rep, argv, env, False)) for s in group]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s in group:
            _after(s, rep)
    return rep


def _fill(value, rep: Replay):
    if isinstance(value, str):
        return (value.replace("{{WS}}", str(rep.workspace))
                .replace("{{TRANSCRIPT}}", str(rep.transcript))
                .replace("{{HELPER}}", str(rep.scratch / "helper.jsonl")))
    if isinstance(value, list):
        return [_fill(v, rep) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, rep) for k, v in value.items()}
    return value


def _before(step: dict, rep: Replay) -> None:
    _actions(step.get("before", []), rep)
    for rec in step.get("transcript", []):
        with open(rep.transcript, "a") as f:
            f.write(json.dumps(_fill(rec, rep)) + "\n")
    for rec in step.get("helper", []):
        with open(rep.scratch / "helper.jsonl", "a") as f:
            f.write(json.dumps(_fill(rec, rep)) + "\n")


def _after(step: dict, rep: Replay) -> None:
    _actions(step.get("do", []), rep)


def _actions(actions: list, rep: Replay) -> None:
    for action in actions:
        if "write" in action:
            path = rep.workspace / action["write"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_fill(action["text"], rep))
        elif "delete" in action:
            (rep.workspace / action["delete"]).unlink()
        elif "rewind-transcript" in action:
            pass  # nothing is written when Claude Code rewinds; the next record says it


def _send(step: dict, rep: Replay, argv: list[str], env: dict | None, whole: bool = True) -> None:
    if whole:
        _before(step, rep)
    payload = _fill(step["payload"], rep)
    cmd = list(argv) + (["--event", step["event"]] if step.get("event") else [])
    data = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run(cmd, input=data.encode(), capture_output=True, cwd=rep.workspace,
                          env={**os.environ, **(env or {})}, timeout=120)
    rep.sent.append(Sent(payload if isinstance(payload, dict) else {"raw": payload},
                         proc.returncode, proc.stdout.decode(), proc.stderr.decode()))
    if whole:
        _after(step, rep)
