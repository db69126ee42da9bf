"""`turnback hooks install|uninstall|status`: merge, never clobber, back up first, idempotent, remove
exactly what was added."""

from __future__ import annotations

import json

import pytest
from hookkit import tb, tb_json

from turnback.hooks import install


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_STATE_HOME", str(h / ".state"))
    return h


USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                             "command": "my-own-guard.sh"}]}]},
}


def test_claude_project_install_merges_and_uninstall_restores(tmp_path, home):
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    settings = root / ".claude" / "settings.json"
    settings.write_text(json.dumps(USER_SETTINGS, indent=2))
    original = settings.read_text()
    result = install.install("claude-code", "project", root, command="turnback hook claude-code")
    assert set(result["added"]) == set(install.EVENTS["claude-code"])
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == USER_SETTINGS["permissions"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]  # the user's own hook, untouched
    assert pre[1] == {"matcher": "*", "hooks": [{"type": "command",
                                                 "command": "turnback hook claude-code",
                                                 "timeout": 30}]}
    assert "matcher" not in data["hooks"]["Stop"][0]
    assert (root / ".claude" / "settings.json.turnback-backup").read_text() == original
    # idempotent
    again = install.install("claude-code", "project", root, command="turnback hook claude-code")
    assert again["alreadyInstalled"] and json.loads(settings.read_text()) == data
    removed = install.uninstall("claude-code", "project", root)
    assert set(removed["removed"]) == set(install.EVENTS["claude-code"])
    assert json.loads(settings.read_text()) == USER_SETTINGS


def test_uninstall_leaves_what_the_user_added_later(tmp_path, home):
    root = tmp_path / "ws"
    root.mkdir()
    install.install("codex", "project", root, command="turnback hook codex")
    path = root / ".codex" / "hooks.json"
    data = json.loads(path.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-me"}]})
    path.write_text(json.dumps(data))
    install.uninstall("codex", "project", root)
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "notify-me"}]}]}}


def test_created_files_are_removed_again(tmp_path, home):
    root = tmp_path / "ws"
    root.mkdir()
    install.install("copilot", "project", root, command="turnback hook copilot")
    path = root / ".github" / "hooks" / "turnback.json"
    data = json.loads(path.read_text())
    assert data["version"] == 1
    assert data["hooks"]["preToolUse"] == [{"type": "command", "timeoutSec": 30,
                                           "bash": "turnback hook copilot --event preToolUse"}]
    install.uninstall("copilot", "project", root)
    assert not path.exists()
    install.install("gemini", "user", root, command="turnback hook gemini")
    gem = home / ".gemini" / "settings.json"
    assert json.loads(gem.read_text())["hooks"]["BeforeTool"][0]["matcher"] == ".*"
    install.uninstall("gemini", "user", root)
    assert not gem.exists()


def test_broken_settings_are_refused_not_overwritten(tmp_path, home):
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text("{ broken")
    proc = tb(root, "hooks", "install", "claude-code", check=False)
    assert proc.returncode == 1 and "not valid JSON" in proc.stderr
    assert (root / ".claude" / "settings.json").read_text() == "{ broken"


def test_cli_install_status_uninstall(tmp_path, home):
    root = tmp_path / "ws"
    root.mkdir()
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".state")}
    out = tb(root, "hooks", "install", "claude-code", "--project", env=env).stdout
    assert "installed in" in out
    assert (root / ".turnback" / "FORMAT").exists(), "a project install makes the workspace known"
    rows = {(r["agent"], r["scope"]): r for r in tb_json(root, "hooks", "status", env=env)["agents"]}
    assert rows[("claude-code", "project")]["complete"]
    assert not rows[("claude-code", "user")]["installed"]
    assert not rows[("codex", "project")]["installed"]
    cmd = json.loads((root / ".claude" / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert cmd["command"].endswith("hook claude-code")
    tb(root, "hooks", "uninstall", "claude-code", env=env)
    assert not (root / ".claude" / "settings.json").exists()
    rows = tb_json(root, "hooks", "status", env=env)["agents"]
    assert not any(r["installed"] for r in rows)
