"""Driving an agent over the Agent Client Protocol (JSON-RPC on stdio), as agent-shell (Emacs) and
Zed drive `claude-agent-acp`: `initialize` with the file-system capabilities those clients offer,
`session/new` in the workspace, then `session/prompt` per prompt; the agent's requests back (a
permission to grant, a file to read or write) are answered as such a client would answer them.

`ClaudeAcp` runs npm @agentclientprotocol/claude-agent-acp in the same private world as
`ClaudeCode` (CLAUDE_CONFIG_DIR, ANTHROPIC_BASE_URL): it runs Claude Code through the Agent SDK,
with the user's, project's and local settings loaded, so turnback's Claude Code hooks are the ones
that fire.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

from .realagents import ClaudeCode


class AcpClient:
    def __init__(self, argv: list[str], cwd: Path, env: dict, stderr_path: Path):
        self._err = open(stderr_path, "w")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     start_new_session=True)
        self.messages: list[dict] = []
        self._cond = threading.Condition()
        self._next = 0
        self.written: list[str] = []  # paths the agent wrote through fs/write_text_file
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and "method" in msg and "id" in msg:
                self._answer(msg)
            with self._cond:
                self.messages.append(msg)
                self._cond.notify_all()

    def _send(self, obj: dict) -> None:
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def _answer(self, msg: dict) -> None:
        """The agent asks the client: grant, read, write, as Zed and agent-shell do."""
        method, params = msg["method"], msg.get("params") or {}
        if method == "session/request_permission":
            options = params.get("options") or []
            chosen = next((o for o in options if str(o.get("kind", "")).startswith("allow")),
                          options[0] if options else {"optionId": "allow"})
            result = {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
        elif method == "fs/write_text_file":
            Path(params["path"]).write_text(params["content"])
            self.written.append(params["path"])
            result = None
        elif method == "fs/read_text_file":
            result = {"content": Path(params["path"]).read_text()}
        else:
            self._send({"jsonrpc": "2.0", "id": msg["id"],
                        "error": {"code": -32601, "message": f"{method} is not offered"}})
            return
        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def request(self, method: str, params: dict, timeout: float = 300) -> dict:
        self._next += 1
        ident = self._next
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.messages:
                    if msg.get("id") == ident and "method" not in msg:
                        if "error" in msg:
                            raise RuntimeError(f"{method}: {msg['error']}")
                        return msg.get("result") or {}
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"{method}: no answer")
                self._cond.wait(min(left, 1))

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._err.close()


class ClaudeAcp(ClaudeCode):
    """Claude through claude-agent-acp, one ACP session in the workspace."""

    def start(self) -> str:
        self.client = AcpClient([self.program("claude-agent-acp")], self.root, self.env,
                                self.world / "acp.stderr")
        self.client.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                                   "terminal": False}})
        self.session_id = self.client.request("session/new", {"cwd": str(self.root),
                                                              "mcpServers": []})["sessionId"]
        return self.session_id

    def prompt(self, text: str, timeout: float = 300) -> dict:
        return self.client.request("session/prompt", {
            "sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}, timeout)

    def close(self) -> None:
        self.client.close()
