"""Driving the real Gemini CLI (npm @google/gemini-cli) against the scripted model server's Gemini
API: headless runs (`gemini -p PROMPT --output-format stream-json --yolo`), one process a prompt,
`--resume SESSION` to go on with a conversation. tests/agents_real and the agent bench use it.

Its private world: HOME (Gemini keeps `~/.gemini/`: settings, trusted folders, trusted hooks,
chats), the API key and base URL (`GEMINI_API_KEY`, `GOOGLE_GEMINI_BASE_URL`), usage statistics and
update checks off. The workspace is NOT trusted here: a test trusts it the way docs/agents/gemini.md
says (Gemini runs a project's hooks only in a trusted folder).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .realagents import Agent, Run, _Reader, finish

GEMINI_FLAGS = ["--output-format", "stream-json", "--yolo"]


class Gemini(Agent):
    def __init__(self, bins: Path, root: Path, world: Path, model_url: str):
        super().__init__(bins, root, world, model_url)
        self.gemini_dir = self.home / ".gemini"
        self.gemini_dir.mkdir(parents=True, exist_ok=True)
        self.env.update({"GEMINI_API_KEY": "mock-key", "GOOGLE_GEMINI_BASE_URL": model_url,
                         # one node process instead of two (it relaunches itself for a bigger heap)
                         "GEMINI_CLI_NO_RELAUNCH": "true"})
        (self.gemini_dir / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}, indent=2))

    def trust_folder(self, folder: Path | None = None) -> None:
        """What answering "Trust folder" in Gemini's dialog records (`~/.gemini/trustedFolders.json`)."""
        path = self.gemini_dir / "trustedFolders.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[str(folder or self.root)] = "TRUST_FOLDER"
        path.write_text(json.dumps(data, indent=2))

    def argv(self, prompt: str, resume: str | None = None, extra: tuple = ()) -> list[str]:
        argv = [self.program("gemini"), *GEMINI_FLAGS, *extra]
        if resume:
            argv += ["--resume", resume]
        return argv + ["-p", prompt]

    def start(self, prompt: str, resume: str | None = None, extra: tuple = ()) -> subprocess.Popen:
        proc = subprocess.Popen(self.argv(prompt, resume, extra), cwd=self.root, env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        proc.reader = _Reader(proc.stdout)
        return proc

    def run(self, prompt: str, resume: str | None = None, extra: tuple = (),
            timeout: float = 180) -> Run:
        return finish(self.start(prompt, resume, extra), timeout)

    @staticmethod
    def session_id(run: Run) -> str | None:
        return next((d.get("session_id") for d in run.events("init")), None)

    @staticmethod
    def answer(run: Run) -> str:
        return "".join(d.get("content") or "" for d in run.events("message")
                       if d.get("role") == "assistant")

    @staticmethod
    def errors(run: Run) -> list[dict]:
        """What Gemini reports as gone wrong in a run's output: error events, a result that is not
        a success, tool results that are errors."""
        return [ln.data for ln in run.lines if ln.data.get("type") == "error"
                or (ln.data.get("type") == "result" and ln.data.get("status") != "success")]


def hook_problems(run: Run) -> list[str]:
    """The lines Gemini writes to standard error about a hook gone wrong: a hook that failed
    ("Hook execution for BeforeAgent: 0 succeeded, 1 failed (…)", "Hook(s) […] failed for event
    …"), and a hook whose standard output was not JSON (shown as "Hook system message: …"; a
    message turnback means to show names turnback)."""
    bad = []
    for line in run.stderr.splitlines():
        if ("Hook" in line and " failed" in line) or (
                line.startswith("Hook system message:") and "turnback" not in line):
            bad.append(line)
    return bad
