"""A Claude Code session as its hooks feed turnback: real-shaped hook payloads sent to `turnback hook
claude-code` (the command `turnback hooks install claude-code` writes into .claude/settings.json), and
the transcript written record by record as Claude Code writes it. With the editor's server owning the
store, each hook reaches it through its socket, as it would under a real agent. The turns end with a
transcript record the server can name, so a rewind, Redo or fork offers `claude --resume … 
--resume-session-at …`."""

from __future__ import annotations

import json
import subprocess
import uuid as uuidlib
from pathlib import Path


class ClaudeSession:
    def __init__(self, turnback: str, root: Path, transcript: Path, session: str | None = None):
        self.turnback, self.root, self.path = turnback, Path(root), Path(transcript)
        self.session = session or str(uuidlib.uuid4())
        self.last: str | None = None
        self.prompt_id: str | None = None
        self.tools = 0

    def _record(self, rec: dict) -> str:
        rec.setdefault("uuid", str(uuidlib.uuid4()))
        rec.setdefault("parentUuid", self.last)
        rec.setdefault("sessionId", self.session)
        rec.setdefault("isSidechain", False)
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.last = rec["uuid"]
        return rec["uuid"]

    def hook(self, event: str, **fields) -> str:
        payload = {"session_id": self.session, "transcript_path": str(self.path), "cwd": str(self.root),
                   "hook_event_name": event, "permission_mode": "default", **fields}
        if self.prompt_id and event not in ("SessionStart", "SessionEnd"):
            payload["prompt_id"] = self.prompt_id
        done = subprocess.run([self.turnback, "hook", "claude-code"], input=json.dumps(payload), text=True,
                              capture_output=True, cwd=self.root, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"turnback hook claude-code ({event}) exited {done.returncode}: {done.stderr}")
        return done.stdout

    def start(self) -> None:
        self.hook("SessionStart", source="startup")

    def turn(self, prompt: str, writes: dict[str, str], answer: str) -> None:
        """One prompt: the agent writes the files with its Write tool, then answers."""
        self.prompt_id = f"p-{uuidlib.uuid4().hex[:8]}"
        self._record({"type": "user", "promptId": self.prompt_id, "message": {"role": "user", "content": prompt}})
        self.hook("UserPromptSubmit", prompt=prompt)
        for rel, text in writes.items():
            self.tools += 1
            tid = f"toolu_{self.tools:02d}"
            tool_input = {"file_path": str(self.root / rel), "content": text}
            self.hook("PreToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=tid)
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(text)
            self._record({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": tid, "name": "Write", "input": {}}]}})
            self._record({"type": "user", "promptId": self.prompt_id, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tid, "content": "ok"}]}})
            self.hook("PostToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=tid,
                      tool_response={"type": "create", "filePath": str(self.root / rel)}, duration_ms=3)
        self._record({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}})
        self.hook("Stop", stop_hook_active=False, last_assistant_message=answer)
