"""Driving the real OpenCode (npm opencode-ai) against the scripted model server's Chat Completions
API, as an OpenAI-compatible provider: `opencode run --format json --auto PROMPT`, one process a
prompt, `--session ID` to go on with a conversation. tests/agents_real uses it.

Its private world: HOME and the XDG folders (OpenCode keeps its config in
`$XDG_CONFIG_HOME/opencode/`, its sessions and its own snapshots in `$XDG_DATA_HOME/opencode/`); the
provider is declared there (`provider.mock`, `@ai-sdk/openai-compatible`, the server's base URL), so
the workspace holds only what a person's would. No models list is fetched, nothing is shared or
auto-updated.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .realagents import Agent, Run, _Reader, finish


class OpenCode(Agent):
    def __init__(self, bins: Path, root: Path, world: Path, model_url: str):
        super().__init__(bins, root, world, model_url)
        self.env.update({"XDG_DATA_HOME": str(self.home / ".local" / "share"),
                         "XDG_CACHE_HOME": str(self.home / ".cache"),
                         "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                         "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"})
        self.config_dir = self.home / ".config" / "opencode"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "opencode.json").write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                  "options": {"baseURL": f"{model_url}/v1", "apiKey": "sk-mock"},
                                  "models": {"mock-model": {"name": "Mock model",
                                                            "tool_call": True}}}},
            "model": "mock/mock-model", "small_model": "mock/mock-model",
            "autoupdate": False, "share": "disabled"}, indent=2))

    def argv(self, prompt: str, session: str | None = None, extra: tuple = ()) -> list[str]:
        argv = [self.program("opencode"), "run", "--format", "json", "--auto", *extra]
        if session:
            argv += ["--session", session]
        return argv + [prompt]

    def start(self, prompt: str, session: str | None = None, extra: tuple = ()) -> subprocess.Popen:
        proc = subprocess.Popen(self.argv(prompt, session, extra), cwd=self.root, env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        proc.reader = _Reader(proc.stdout)
        return proc

    def run(self, prompt: str, session: str | None = None, extra: tuple = (),
            timeout: float = 300) -> Run:
        return finish(self.start(prompt, session, extra), timeout)

    @staticmethod
    def session_id(run: Run) -> str | None:
        return next((d.get("sessionID") for d in run.events() if d.get("sessionID")), None)

    @staticmethod
    def errors(run: Run) -> list[dict]:
        """Error events in a run's output, and tool parts that ended in error."""
        return [d for d in run.events() if d.get("type") == "error"
                or ((d.get("part") or {}).get("state") or {}).get("status") == "error"]
