"""The real Claude Code, Codex, Gemini CLI, OpenCode, claude-agent-acp and Copilot CLI, installed by
the same script `.ci/run` uses, each test in a private world (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, …)
with a scripted model server on loopback.

When the agents are missing they are installed here. Only when npm cannot reach its registry, and
`TURNBACK_REQUIRE_REAL_AGENTS` is not set, are these tests skipped (with the reason); `.ci/run` sets
it, so in CI a missing agent is a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnback.bench.mockmodel import ModelServer, Script
from turnback.bench.realagents import ClaudeCode, Codex
from turnback.bench.realacp import ClaudeAcp
from turnback.bench.realcopilot import Copilot
from turnback.bench.realgemini import Gemini
from turnback.bench.realopencode import OpenCode

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / ".ci" / "install-agents.sh"
TURNBACK = [sys.executable, "-m", "turnback"]


def _registry_reachable() -> tuple[bool, str]:
    try:
        proc = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"npm cannot run ({exc})"
    return proc.returncode == 0, (proc.stderr or proc.stdout).strip()[-300:]


@pytest.fixture(scope="session")
def agents_bin() -> Path:
    required = bool(os.environ.get("TURNBACK_REQUIRE_REAL_AGENTS"))
    try:
        proc = subprocess.run([str(INSTALL)], capture_output=True, text=True, timeout=900)
        out, why = proc.stdout.strip(), proc.stderr.strip()[-2000:]
        ok = proc.returncode == 0 and out
    except (OSError, subprocess.TimeoutExpired) as exc:
        ok, out, why = False, "", str(exc)
    if ok:
        return Path(out.splitlines()[-1])
    if not required:
        reachable, detail = _registry_reachable()
        if not reachable:
            pytest.skip(f"the real agents are not installed and npm cannot reach its registry "
                        f"({detail}); set TURNBACK_REQUIRE_REAL_AGENTS=1 to make this a failure")
    pytest.fail(f"installing the real agents failed ({INSTALL}):\n{why}")


@pytest.fixture
def model():
    with ModelServer(Script()) as server:
        yield server


@pytest.fixture
def workspace(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def claude(agents_bin, workspace, tmp_path, model):
    agent = ClaudeCode(agents_bin, workspace, tmp_path / "claude-world", model.url)
    yield agent
    _stop_owner(workspace)


@pytest.fixture
def codex(agents_bin, workspace, tmp_path, model):
    agent = Codex(agents_bin, workspace, tmp_path / "codex-world", model.url)
    yield agent
    _stop_owner(workspace)


@pytest.fixture
def gemini(agents_bin, workspace, tmp_path, model):
    agent = Gemini(agents_bin, workspace, tmp_path / "gemini-world", model.url)
    yield agent
    _stop_owner(workspace)


@pytest.fixture
def opencode(agents_bin, workspace, tmp_path, model):
    agent = OpenCode(agents_bin, workspace, tmp_path / "opencode-world", model.url)
    yield agent
    _stop_owner(workspace)


@pytest.fixture
def claude_acp(agents_bin, workspace, tmp_path, model):
    agent = ClaudeAcp(agents_bin, workspace, tmp_path / "acp-world", model.url)
    yield agent
    _stop_owner(workspace)


@pytest.fixture
def copilot(agents_bin, workspace, tmp_path, model):
    agent = Copilot(agents_bin, workspace, tmp_path / "copilot-world", model.url)
    yield agent
    _stop_owner(workspace)


def _stop_owner(root: Path) -> None:
    """The first hook started a background owner for the workspace: stop it with the test."""
    subprocess.run(TURNBACK + ["daemon", "stop", "--workspace", str(root)], capture_output=True,
                   timeout=60)
