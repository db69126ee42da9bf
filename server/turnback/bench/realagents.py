"""Driving the real agent CLIs against the scripted model server (`mockmodel`): Claude Code over the
Anthropic Messages API, Codex over the OpenAI Responses API. tests/agents_real and the agent-hooks
bench both use it.

Each agent gets a private world: its own HOME, `CLAUDE_CONFIG_DIR` / `CODEX_HOME`, and a PATH that
holds the agents and the system's tools but not turnback's virtual environment (so a hook command
that depends on the agent's PATH fails, as it would for a person). Nothing of the machine's own
configuration is read or written.

Claude Code runs headless (`-p`) with `--output-format stream-json --verbose --include-hook-events`:
every hook run shows up as `hook_started` / `hook_response` lines, which is how a test proves the
agent saw no hook error and how the bench times each hook as the agent experienced it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CLAUDE_FLAGS = ["--output-format", "stream-json", "--verbose", "--include-hook-events",
                "--permission-mode", "bypassPermissions"]
PASS_THROUGH = ("LANG", "LC_ALL", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "TURNBACK_IDLE_EXIT")
# The model Codex is told it talks to: one it knows (so it offers apply_patch and its collaboration
# tools as it would to a person), served by the mock.
CODEX_MODEL = "gpt-5.5"


def agents_bin() -> Path | None:
    """Where the installed agents are: `TURNBACK_AGENTS_BIN`, else the cache `.ci/install-agents.sh`
    fills (the same default folder)."""
    env = os.environ.get("TURNBACK_AGENTS_BIN")
    if env:
        return Path(env)
    cache = Path(os.environ.get("TURNBACK_CI_CACHE") or Path.home() / ".cache" / "turnback-ci")
    found = [b for b in cache.glob("bin-claude-*") if (b / ".complete").exists()]
    return max(found, key=lambda b: b.stat().st_mtime) if found else None


@dataclass
class Line:
    data: dict
    at: float  # time.monotonic() when it was read


@dataclass
class Run:
    lines: list[Line] = field(default_factory=list)
    returncode: int | None = None
    stderr: str = ""

    def events(self, kind: str | None = None, subtype: str | None = None) -> list[dict]:
        return [ln.data for ln in self.lines if (kind is None or ln.data.get("type") == kind)
                and (subtype is None or ln.data.get("subtype") == subtype)]


def hook_problems(lines: list[Line]) -> list[dict]:
    """Every hook the agent reported as anything but a clean success (Claude Code's stream)."""
    bad = []
    for ln in lines:
        d = ln.data
        if d.get("type") != "system" or not str(d.get("subtype", "")).startswith("hook"):
            continue
        if d.get("subtype") == "hook_started":
            continue
        if d.get("subtype") != "hook_response" or d.get("outcome") != "success" \
                or d.get("exit_code") not in (0, None) or (d.get("stderr") or "").strip():
            bad.append(d)
    return bad


def hook_durations(lines: list[Line]) -> list[tuple[str, float]]:
    """(event, seconds) for each hook, from its `hook_started` to its `hook_response` line."""
    started: dict[str, tuple[str, float]] = {}
    out = []
    for ln in lines:
        d = ln.data
        if d.get("type") != "system":
            continue
        if d.get("subtype") == "hook_started":
            started[d.get("hook_id")] = (d.get("hook_event"), ln.at)
        elif d.get("subtype") == "hook_response" and d.get("hook_id") in started:
            event, at = started.pop(d.get("hook_id"))
            out.append((event, ln.at - at))
    return out


class _Reader:
    """Reads an agent's JSON lines in a thread, stamping each as it arrives."""

    def __init__(self, stream):
        self.lines: list[Line] = []
        self._cond = threading.Condition()
        self._done = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for raw in stream:
            at = time.monotonic()
            try:
                data = json.loads(raw)
            except ValueError:
                data = {"type": "unparsed", "text": raw}
            with self._cond:
                self.lines.append(Line(data if isinstance(data, dict) else {"value": data}, at))
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def wait(self, predicate, start: int, timeout: float) -> int:
        """The index of the first line from `start` on that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(start, len(self.lines)):
                    if predicate(self.lines[i].data):
                        return i
                if self._done:
                    raise EOFError("the agent's output ended")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such line in {timeout}s")
                self._cond.wait(left)

    def finished(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._done:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the agent's output did not end")
                self._cond.wait(left)


def finish(proc: subprocess.Popen, timeout: float = 180) -> Run:
    """Wait for an agent process started with a `reader` to end; its run."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    proc.reader.finished(10)
    return Run(proc.reader.lines, proc.returncode, proc.stderr.read())


class Agent:
    """What both agents share: a private world on disk and its environment."""

    def __init__(self, bins: Path, root: Path, world: Path, model_url: str):
        self.bins, self.root, self.world, self.model_url = Path(bins), Path(root), Path(world), model_url
        self.home = self.world / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.env = {"PATH": f"{self.bins}:/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home),
                    "XDG_STATE_HOME": str(self.home / ".local" / "state"),
                    "XDG_CONFIG_HOME": str(self.home / ".config")}
        self.env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
        tmp = self.world / "tmp"  # the agents' scratch files (Claude Code's task output) too
        tmp.mkdir(exist_ok=True)
        self.env["TMPDIR"] = str(tmp)

    def program(self, name: str) -> str:
        return str(self.bins / name)


class ClaudeCode(Agent):
    def __init__(self, bins: Path, root: Path, world: Path, model_url: str):
        super().__init__(bins, root, world, model_url)
        self.config = self.world / "claude-config"
        self.config.mkdir(parents=True, exist_ok=True)
        self.env.update({"CLAUDE_CONFIG_DIR": str(self.config), "ANTHROPIC_BASE_URL": model_url,
                         "ANTHROPIC_API_KEY": "sk-mock", "IS_SANDBOX": "1",
                         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})

    def session(self, *args: str) -> "ClaudeSession":
        """A headless session fed prompt after prompt on standard input (one process, like a person
        typing at one prompt)."""
        return ClaudeSession(self, list(args))

    def run(self, prompt: str, *args: str, timeout: float = 180) -> Run:
        """One `claude -p PROMPT` process to its end."""
        return self.run_argv([self.program("claude"), *args, "-p", prompt, *CLAUDE_FLAGS],
                             timeout=timeout)

    def run_argv(self, argv: list[str], timeout: float = 180) -> Run:
        proc = subprocess.Popen(argv, cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.reader = _Reader(proc.stdout)
        return finish(proc, timeout)

    def resume_command(self, printed: str, prompt: str) -> list[str]:
        """The resume command turnback printed (`claude --resume S --resume-session-at U`), as
        given, with this world's `claude` and a headless prompt after it."""
        argv = shlex.split(printed)
        if argv[0] != "claude":
            raise ValueError(f"not a claude command: {printed!r}")
        return [self.program("claude"), *argv[1:], "-p", prompt, *CLAUDE_FLAGS]

    def transcript(self, session_id: str) -> list[dict]:
        found = list((self.config / "projects").glob(f"*/{session_id}.jsonl"))
        if not found:
            return []
        return [json.loads(l) for l in found[0].read_text().splitlines() if l.strip()]


class ClaudeSession:
    def __init__(self, agent: ClaudeCode, args: list[str]):
        self.agent = agent
        argv = [agent.program("claude"), *args, "-p", "--input-format", "stream-json", *CLAUDE_FLAGS]
        self.proc = subprocess.Popen(argv, cwd=agent.root, env=agent.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.reader = _Reader(self.proc.stdout)
        self.session_id: str | None = None

    @property
    def lines(self) -> list[Line]:
        return self.reader.lines

    def send(self, prompt: str) -> int:
        """Type a prompt; returns where its output starts."""
        start = len(self.reader.lines)
        self.proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user",
                                                                      "content": prompt}}) + "\n")
        self.proc.stdin.flush()
        return start

    def prompt(self, prompt: str, timeout: float = 180) -> dict:
        """Type a prompt and wait for the agent's result of it."""
        start = self.send(prompt)
        at = self.reader.wait(lambda d: d.get("type") == "result", start, timeout)
        result = self.reader.lines[at].data
        self.session_id = self.session_id or result.get("session_id")
        return result

    def close(self, timeout: float = 60) -> int:
        """End of input: the agent ends its session (SessionEnd) and exits."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        code = self.proc.wait(timeout)
        self.reader.finished(10)
        return code

    def kill(self) -> None:
        """An interrupt with no goodbye: the agent is killed mid-turn."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.reader.finished(10)


class Codex(Agent):
    def __init__(self, bins: Path, root: Path, world: Path, model_url: str):
        super().__init__(bins, root, world, model_url)
        self.codex_home = self.world / "codex-home"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.env.update({"CODEX_HOME": str(self.codex_home), "MOCK_API_KEY": "sk-mock"})
        (self.codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\nmodel_provider = "mock"\n\n'
            '[model_providers.mock]\nname = "mock"\n'
            f'base_url = "{model_url}/v1"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n')

    def argv(self, prompt: str, resume: str | None = None, extra: tuple = ()) -> list[str]:
        argv = [self.program("codex"), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox",
                "--enable", "multi_agent_v2", *extra]
        return argv + (["resume", resume, prompt] if resume else [prompt])

    def exec(self, prompt: str, resume: str | None = None, extra: tuple = (),
             timeout: float = 180) -> Run:
        return finish(self.start(prompt, resume, extra), timeout)

    def start(self, prompt: str, resume: str | None = None, extra: tuple = ()) -> subprocess.Popen:
        # A group of its own: the npm launcher (node) runs the native codex as its child under
        # Node < 23, so a signal for "the agent" goes to the group, as a terminal sends it.
        proc = subprocess.Popen(self.argv(prompt, resume, extra), cwd=self.root, env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        proc.reader = _Reader(proc.stdout)
        return proc

    @staticmethod
    def thread_id(run: Run) -> str | None:
        return next((d.get("thread_id") for d in run.events("thread.started")), None)

    def transcript(self, thread_id: str) -> list[dict]:
        found = list((self.codex_home / "sessions").rglob(f"rollout-*{thread_id}.jsonl"))
        if not found:
            return []
        return [json.loads(l) for l in found[0].read_text().splitlines() if l.strip()]


class CodexThread:
    """One Codex thread driven through its app-server (`codex app-server`, the engine its terminal
    UI embeds), where every hook run is reported back: `hook/completed` carries each run's status,
    its output entries (warnings, errors) and its `durationMs`, Codex's own account of it."""

    def __init__(self, agent: Codex):
        from ..hooks.codextrust import AppServer

        self.server = AppServer(agent.program("codex"), agent.root, env=agent.env)
        started = self.server.call("thread/start", {"cwd": str(agent.root),
                                                    "approvalPolicy": "never",
                                                    "sandbox": "danger-full-access"})
        self.thread_id = started["thread"]["id"]

    def turn(self, prompt: str, timeout: float = 180) -> list[dict]:
        """Send a prompt and wait for the turn to complete; its notifications."""
        start = len(self.server.notifications)
        self.server.call("turn/start", {"threadId": self.thread_id,
                                        "input": [{"type": "text", "text": prompt}]})
        end = self.server.wait_for(lambda m: m.get("method") == "turn/completed", start, timeout)
        return self.server.notifications[start:end + 1]

    def hook_runs(self) -> list[dict]:
        return [m["params"]["run"] for m in self.server.notifications
                if m.get("method") == "hook/completed"]

    def close(self) -> None:
        self.server.close()


def codex_hook_problems(runs: list[dict]) -> list[dict]:
    """Every hook run Codex reported as anything but completed, or with an error or warning."""
    return [r for r in runs if r.get("status") != "completed"
            or any(e.get("kind") in ("error", "warning") for e in r.get("entries") or [])]
