"""Driving the real GitHub Copilot CLI (npm @github/copilot) against the scripted model server, as a
custom model provider (its BYOK switches: `COPILOT_PROVIDER_BASE_URL`, Chat Completions by default)
in offline mode (`COPILOT_OFFLINE=true`: no GitHub sign-in, no telemetry, no update), every tool
allowed: `copilot -p PROMPT`, one process a prompt, `--resume=SESSION` to go on.

The CLI is one large binary that unpacks its JavaScript package on first start (about 20 s on a
loaded machine): the package cache is shared between worlds (`COPILOT_PKG_CACHE_HOME` under the
agents' cache), so only the first run anywhere pays it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from .realagents import Agent


class Copilot(Agent):
    def __init__(self, bins: Path, root: Path, world: Path, model_url: str):
        super().__init__(bins, root, world, model_url)
        cache = Path(os.environ.get("TURNBACK_CI_CACHE") or Path.home() / ".cache" / "turnback-ci")
        self.env.update({"COPILOT_HOME": str(self.world / "copilot"),
                         "COPILOT_PKG_CACHE_HOME": str(cache / "copilot-pkg-cache"),
                         "COPILOT_PROVIDER_BASE_URL": f"{model_url}/v1",
                         "COPILOT_PROVIDER_API_KEY": "sk-mock", "COPILOT_MODEL": "gpt-4.1",
                         "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false",
                         "COPILOT_ALLOW_ALL": "true"})

    def run(self, prompt: str, session: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
        argv = [self.program("copilot"), "-p", prompt, "--allow-all-tools"]
        if session:
            argv.append(f"--resume={session}")
        return subprocess.run(argv, cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    @staticmethod
    def session_id(run: subprocess.CompletedProcess) -> str | None:
        found = re.search(r"--resume=([0-9a-f-]{36})", run.stdout + run.stderr)
        return found.group(1) if found else None
