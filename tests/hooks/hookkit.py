"""Support for the hook tests: replay a recorded agent session through the real `turnback hook`
command, in a scratch workspace, on the direct path or through a live sidecar."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from turnback.hooks import replay

TURNBACK = [sys.executable, "-m", "turnback"]


def workspace_files(root: Path) -> dict[str, str]:
    """The workspace's files, the store left out of the walk itself: a live owner's collection may
    remove a fan-out folder of `.turnback/objects` while a walk into it lists it (a flake seen once)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        if Path(folder) == Path(root):
            dirs[:] = [d for d in dirs if d != ".turnback"]
        for name in files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel != "turnback.toml":
                out[rel] = path.read_text()
    return dict(sorted(out.items()))


def tb(root: Path, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(TURNBACK + list(args) + ["--workspace", str(root)], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"turnback {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def tb_json(root: Path, *args: str, env: dict | None = None) -> dict:
    return json.loads(tb(root, *args, "--json", env=env).stdout)


def replay_fixture(tmp_path: Path, agent: str, name: str = "session", *, env: dict | None = None,
                   until: int | None = None):
    recording = replay.load(replay.fixture_path(agent, name))
    root = tmp_path / "ws"
    root.mkdir()
    rep = replay.setup(recording, root, tmp_path / "scratch")
    (root / "turnback.toml").write_text("")  # the workspace is one turnback knows
    replay.run(recording, rep, argv=TURNBACK + ["hook", agent], env=env, until=until)
    return recording, rep


def hook_log(root: Path) -> list[str]:
    path = root / ".turnback" / "agents" / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


def spooled(root: Path) -> list[dict]:
    """The events kept in the workspace's hook spool (agents/spool.py), oldest first."""
    from turnback.agents import spool

    out = []
    for path in (spool.replaying_path(root / ".turnback"), spool.spool_path(root / ".turnback")):
        if os.path.lexists(path):
            out += [f.record for f in spool.read(path).frames]
    return out


def prompts(root: Path) -> list[str]:
    """The prompts of the workspace's turns, as the owner (or the store) reports them."""
    return [t.get("prompt") for t in tb_json(root, "log")["turns"]]


def replayed_by_new_owner(root: Path, expected: list[str], seconds: float = 60.0) -> bool:
    """Whether a freshly started owner's replay (it runs after the owner answers) recorded exactly
    `expected` and then retired the spool: it records the events first, so wait for both."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if prompts(root) == expected and spooled(root) == []:
            return True
        time.sleep(0.05)
    return prompts(root) == expected and spooled(root) == []
