"""Support for the turn tests: an agent session that sends real-shaped hook payloads to `turnback hook`
and writes its transcript as Claude Code does, record by record.

`how` says how each payload travels: `inproc` (the hook's entry point in this process, the direct
path: fast), `direct` (a `turnback hook` process, `TURNBACK_HOOK_DIRECT=1`) or `owner` (a `turnback
hook` process reaching the live background owner the fixture started).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import uuid as uuidlib
from pathlib import Path

from hookkit import TURNBACK


class Transcript:
    """A Claude Code transcript (JSON lines) written as the agent would."""

    def __init__(self, path: Path, session: str):
        self.path = Path(path)
        self.session = session
        self.last: str | None = None
        self.n = 0

    def _write(self, rec: dict) -> str:
        self.n += 1
        rec.setdefault("uuid", f"r{self.n}-{uuidlib.uuid4().hex[:6]}")
        rec.setdefault("parentUuid", self.last)
        rec.setdefault("sessionId", self.session)
        rec.setdefault("isSidechain", False)
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.last = rec["uuid"]
        return rec["uuid"]

    def prompt(self, text: str, prompt_id: str, parent: str | None = "last") -> str:
        return self._write({"type": "user", "promptId": prompt_id,
                            "parentUuid": self.last if parent == "last" else parent,
                            "message": {"role": "user", "content": text}})

    def says(self, text: str) -> str:
        return self._write({"type": "assistant",
                            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})

    def thinks(self) -> str:
        return self._write({"type": "assistant",
                            "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "…"}]}})

    def calls(self, tool_id: str, name: str, prompt_id: str, result: str = "ok") -> tuple[str, str]:
        a = self._write({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": tool_id, "name": name, "input": {}}]}})
        r = self._write({"type": "user", "promptId": prompt_id, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": result}]}})
        return a, r


class Hooked:
    """One agent session's hooks."""

    def __init__(self, root: Path, session: str = "s-1", *, agent: str = "claude-code",
                 how: str = "inproc", transcript: Path | None = None):
        self.root = Path(root)
        self.session = session
        self.agent = agent
        self.how = how
        self.transcript = Transcript(transcript or self.root.parent / f"{session}.jsonl", session)
        self.prompt_id: str | None = None
        self.tools = 0

    def payload(self, event: str, **fields) -> dict:
        p = {"session_id": self.session, "transcript_path": str(self.transcript.path),
             "cwd": str(self.root), "hook_event_name": event, "permission_mode": "default"}
        if self.prompt_id and event not in ("SessionStart", "SessionEnd"):
            p["prompt_id"] = self.prompt_id
        p.update(fields)
        return {k: v for k, v in p.items() if v is not None}

    def send(self, event: str, **fields) -> tuple[int, str, str]:
        return send(self.agent, self.payload(event, **fields), self.root, self.how)

    # -- what an agent does ------------------------------------------------------------------------
    def prompt(self, text: str, prompt_id: str | None = None) -> tuple[int, str, str]:
        self.prompt_id = prompt_id or f"p-{uuidlib.uuid4().hex[:8]}"
        self.transcript.prompt(text, self.prompt_id)
        return self.send("UserPromptSubmit", prompt=text)

    def write(self, rel: str, text: str, *, tool: str = "Write", agent_id: str | None = None,
              finish: bool = True) -> str:
        self.tools += 1
        tid = f"toolu_{self.tools:02d}"
        inp = {"file_path": str(self.root / rel), "content": text}
        extra = {"agent_id": agent_id, "agent_type": "general-purpose" if agent_id else None}
        self.send("PreToolUse", tool_name=tool, tool_input=inp, tool_use_id=tid, **extra)
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not agent_id:
            self.transcript.calls(tid, tool, self.prompt_id or "")
        if finish:
            self.send("PostToolUse", tool_name=tool, tool_input=inp, tool_use_id=tid,
                      tool_response={"type": "create", "filePath": str(path)}, duration_ms=3, **extra)
        return tid

    def bash(self, command: str, *, changes: dict | None = None, finish: bool = True,
             changed_files: bool = False) -> str:
        self.tools += 1
        tid = f"toolu_{self.tools:02d}"
        inp = {"command": command}
        self.send("PreToolUse", tool_name="Bash", tool_input=inp, tool_use_id=tid)
        for rel, text in (changes or {}).items():
            (self.root / rel).write_text(text)
        self.transcript.calls(tid, "Bash", self.prompt_id or "")
        if finish:
            response = {"stdout": "", "stderr": "", "interrupted": False}
            if changed_files:
                response["bashEditDiff"] = {"changedFiles": [str(self.root / r) for r in changes or {}]}
            self.send("PostToolUse", tool_name="Bash", tool_input=inp, tool_use_id=tid,
                      tool_response=response, duration_ms=20)
        return tid

    def stop(self, answer: str, *, write_record: bool = True, **fields) -> tuple[int, str, str]:
        if write_record:
            self.transcript.says(answer)
        return self.send("Stop", **{"stop_hook_active": False, "last_assistant_message": answer,
                                    **fields})


def send(agent: str, payload: dict, root: Path, how: str, *, event: str | None = None):
    """(exit status, stdout, stderr) of one hook event."""
    body = json.dumps(payload).encode()
    if how in ("inproc", "inproc-owner"):  # the direct path, or this process to the live owner
        from turnback.hooks.runtime import run

        out, err = io.StringIO(), io.StringIO()
        old = os.environ.get("TURNBACK_HOOK_DIRECT")
        os.environ["TURNBACK_HOOK_DIRECT"] = "1" if how == "inproc" else "0"
        try:
            code = run(agent, stdin=io.BytesIO(body), stdout=out, stderr=err, event=event)
        finally:
            if old is None:
                os.environ.pop("TURNBACK_HOOK_DIRECT", None)
            else:
                os.environ["TURNBACK_HOOK_DIRECT"] = old
        return code, out.getvalue(), err.getvalue()
    env = dict(os.environ)
    if how == "direct":
        env["TURNBACK_HOOK_DIRECT"] = "1"
    else:
        env.pop("TURNBACK_HOOK_DIRECT", None)
    cmd = TURNBACK + ["hook", agent] + (["--event", event] if event else [])
    proc = subprocess.run(cmd, input=body, capture_output=True, cwd=root, env=env, timeout=120)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def record(root: Path) -> dict:
    return json.loads((root / ".turnback" / "agents" / "state.json").read_text())


def backdate(root: Path, key: str, seconds: float) -> None:
    """Make an agent session look silent for `seconds` (its last event, its tool calls and its
    transcript), as if that long had passed."""
    path = root / ".turnback" / "agents" / "state.json"
    data = json.loads(path.read_text())
    s = data["sessions"][key]
    s["active"] -= seconds
    for p in s.get("pending", {}).values():
        p["at"] = p.get("at", s["active"]) - seconds
    for h in s.get("helpers", {}).values():
        h["started"] -= seconds
        h["last"] -= seconds
    if s.get("last"):
        s["last"]["at"] -= seconds
    path.write_text(json.dumps(data))
    t = s.get("transcript")
    if t and os.path.exists(t):
        st = os.stat(t)
        os.utime(t, (st.st_atime - seconds, st.st_mtime - seconds))
