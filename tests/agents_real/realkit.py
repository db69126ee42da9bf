"""Support for the real-agent tests: turnback's command line in the agent's private world, the
workspace's files, and what the model server saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from turnback.bench.mockmodel import ModelServer

TURNBACK = [sys.executable, "-m", "turnback"]


def tb(agent, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """turnback in the agent's world (its HOME, config folders and PATH), on the agent's workspace."""
    env = {**os.environ, **agent.env}
    proc = subprocess.run(TURNBACK + list(args) + ["--workspace", str(agent.root)], env=env,
                          capture_output=True, text=True, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError(f"turnback {' '.join(args)} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def tb_json(agent, *args: str):
    return json.loads(tb(agent, *args, "--json").stdout)


def files(root: Path) -> dict[str, str]:
    """The workspace as a person sees it (turnback's store and the agents' settings left out)."""
    out = {}
    for folder, dirs, names in os.walk(root):
        if Path(folder) == root:  # pruned, not walked: a live owner's collector changes the store
            dirs[:] = [d for d in dirs if d not in (".turnback", ".claude", ".codex", ".gemini",
                                                  ".opencode", ".github", ".git")]
        for name in names:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if rel != "turnback.toml" and path.is_file():
                out[rel] = path.read_text()
    out = dict(sorted(out.items()))
    return out


def seed(root: Path, tree: dict[str, str]) -> None:
    for rel, text in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def hook_log(root: Path) -> str:
    path = root / ".turnback" / "agents" / "hook.log"
    return path.read_text() if path.exists() else ""


def prompts_seen(model: ModelServer, prompt: str) -> list:
    """The agent-loop requests that answered `prompt`'s turn, first one first."""
    return [r for r in model.loop_requests() if r.choice and r.choice.prompt == prompt]


def told(request, turn: int) -> list[str]:
    """The texts of a request that carry turnback's notice of a rewind to the end of `turn`,
    wherever the agent put them (a user message, a system or developer message): what the model
    hears, whatever the notice's wording."""
    return [i.text for i in request.convo if i.kind == "text" and i.role != "assistant"
            and "turnback" in i.text and f"end of turn {turn}" in i.text]


def conversation_prompts(request, prompts: list[str]) -> list[str]:
    """Which of `prompts` the conversation of a request holds, in order: what the model was told."""
    texts = request.user_texts()
    return [p for p in prompts if any(t.strip() == p for t in texts)]


def rewind_all_redo_rewind_to_2(agent, states: list[dict[str, str]]) -> dict:
    """Rewind before prompt 1 (every file back, shell edits included), Redo the newest head (every
    turn back), then rewind after response 2 (what the later turns changed goes); that last
    rewind's result."""
    commit = tb_json(agent, "rewind", "--before-prompt", "1", "--yes")["commit"]
    assert commit["status"] == "committed", commit
    assert files(agent.root) == states[0]
    groups = tb_json(agent, "redo")["groups"]
    newest = max(groups, key=lambda g: g["turnCount"])
    assert newest["turnCount"] == len(states) - 1
    redo = tb_json(agent, "redo", "--head", str(newest["headSeq"]), "--yes")["commit"]
    assert redo["status"] == "committed", redo
    assert files(agent.root) == states[-1]
    commit = tb_json(agent, "rewind", "--after-response", "2", "--yes")["commit"]
    assert commit["status"] == "committed", commit
    assert files(agent.root) == states[2]
    return commit
