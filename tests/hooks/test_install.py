"""`turnback hooks install|uninstall|status`: merge, never clobber, back up first, idempotent, remove
exactly what was added."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hookkit import tb, tb_json

from turnback.hooks import install, installstatus


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


@pytest.mark.parametrize("agent, variable, rel", [
    ("claude-code", "CLAUDE_CONFIG_DIR", "settings.json"),
    ("codex", "CODEX_HOME", "hooks.json"),
    ("gemini", "GEMINI_CLI_HOME", ".gemini/settings.json"),
    ("copilot", "COPILOT_HOME", "hooks/turnback.json"),
])
def test_user_install_honours_the_agents_config_folder_variable(tmp_path, home, monkeypatch, agent,
                                                                 variable, rel):
    moved = tmp_path / "elsewhere"
    monkeypatch.setenv(variable, str(moved))
    result = install.install(agent, "user", tmp_path, command="turnback")
    assert result["path"] == str(moved / rel)
    assert (moved / rel).is_file()
    assert not any(p.is_file() for p in home.rglob("*") if ".state" not in p.parts), \
        "nothing may land in the home folder the agent no longer reads"
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(tmp_path)}[(agent, "user")]
    assert row["path"] == str(moved / rel) and row["complete"]
    install.uninstall(agent, "user", tmp_path)
    assert not (moved / rel).exists()


def test_user_install_without_the_variable_uses_the_home_folder(tmp_path, home, monkeypatch):
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME",
                     "XDG_CONFIG_HOME"):
        monkeypatch.delenv(variable, raising=False)
    paths = {a: install.install(a, "user", tmp_path, command="turnback")["path"]
             for a in install.FILES}
    assert paths == {"claude-code": str(home / ".claude/settings.json"),
                     "codex": str(home / ".codex/hooks.json"),
                     "gemini": str(home / ".gemini/settings.json"),
                     "copilot": str(home / ".copilot/hooks/turnback.json"),
                     "cursor": str(home / ".cursor/hooks.json"),
                     "opencode": str(home / ".config/opencode/plugin/turnback.js")}


def test_install_writes_the_absolute_command_of_this_turnback(tmp_path, home):
    """The agent's PATH (an editor's, a login shell's) may not have turnback: the hook names the
    turnback that installed it, by absolute path; `--command turnback` keeps the bare name."""
    root = tmp_path / "ws"
    root.mkdir()
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".state")}
    tb(root, "hooks", "install", "claude-code", env=env)
    command = json.loads((root / ".claude/settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    program = shlex.split(command["command"])[0]
    assert os.path.isabs(program) and os.access(program, os.X_OK), command
    assert command["command"].endswith(" hook claude-code")
    # it really is a turnback: it answers as one
    assert subprocess.run([program, "--help"], capture_output=True, text=True).stdout.startswith(
        "usage: turnback")
    tb(root, "hooks", "uninstall", "claude-code", env=env)
    tb(root, "hooks", "install", "codex", "--command", "turnback", env=env)
    command = json.loads((root / ".codex/hooks.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert command["command"] == "turnback hook codex"


def test_status_says_when_the_installed_command_no_longer_exists(tmp_path, home):
    root = tmp_path / "ws"
    root.mkdir()
    gone = tmp_path / "old-venv" / "bin" / "turnback"
    install.install("claude-code", "project", root, command=shlex.quote(str(gone)))
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("claude-code", "project")]
    assert row["complete"] and row["commandMissing"] == f"{gone} no longer exists"
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".state")}
    out = tb(root, "hooks", "status", env=env).stdout
    assert f"installed but its command cannot run: {gone} no longer exists" in out
    assert "turnback hooks install claude-code` again" in out
    # once it exists again, status has nothing to say about it
    gone.parent.mkdir(parents=True)
    gone.write_text("#!/bin/sh\n")
    gone.chmod(0o755)
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("claude-code", "project")]
    assert "commandMissing" not in row and row["command"] == f"{gone} hook claude-code"


def _no_codex(monkeypatch, tmp_path):
    """No `codex` to ask: status falls back to reading $CODEX_HOME/config.toml."""
    monkeypatch.delenv("TURNBACK_CODEX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    return codex_home


def test_codex_status_without_codex_reads_config_toml(tmp_path, home, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    codex_home = _no_codex(monkeypatch, tmp_path)
    install.install("codex", "project", root, command="turnback")
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("codex", "project")]
    assert row["codex"]["checkedWith"] is None
    assert "not a trusted project" in row["codex"]["blocked"], row["codex"]
    assert "turnback hooks install codex --trust" in row["codex"]["step"]

    hooks_file = root / ".codex" / "hooks.json"
    trusted = [f'[projects."{tmp_path}"]\ntrust_level = "trusted"\n']  # a parent folder counts
    codex_home.joinpath("config.toml").write_text("".join(trusted))
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("codex", "project")]
    assert "untrusted" in row["codex"]["blocked"], row["codex"]

    for event in install.EVENTS["codex"]:
        key = f"{hooks_file}:{install_snake(event)}:0:0"
        trusted.append(f'[hooks.state."{key}"]\ntrusted_hash = "sha256:abc"\n')
    codex_home.joinpath("config.toml").write_text("\n".join(trusted))
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("codex", "project")]
    assert row["codex"]["blocked"] is None, row["codex"]
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".state"),
           "CODEX_HOME": str(codex_home), "PATH": str(tmp_path / "empty-bin")}
    out = tb(root, "hooks", "status", env=env).stdout
    assert "will not run it" not in out and "not verified (no codex on PATH" in out


def install_snake(event: str) -> str:
    from turnback.hooks.codextrust import snake

    return snake(event)


def test_codex_status_with_a_broken_config_toml_says_so(tmp_path, home, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    codex_home = _no_codex(monkeypatch, tmp_path)
    codex_home.joinpath("config.toml").write_text("[projects\nbroken =")
    install.install("codex", "project", root, command="turnback")
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("codex", "project")]
    assert "config.toml is unreadable" in row["codex"]["blocked"], row["codex"]


def test_codex_trust_needs_codex(tmp_path, home, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    codex_home = _no_codex(monkeypatch, tmp_path)
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".state"),
           "CODEX_HOME": str(codex_home), "PATH": str(tmp_path / "empty-bin")}
    proc = tb(root, "hooks", "install", "codex", "--trust", env=env, check=False)
    assert proc.returncode == 1 and "--trust needs Codex" in proc.stderr, proc.stderr
    assert not codex_home.joinpath("config.toml").exists(), "nothing written in Codex's config"
    assert not (root / ".codex").exists(), "nothing installed that Codex would not run"
    proc = tb(root, "hooks", "install", "claude-code", "--trust", env=env, check=False)
    assert proc.returncode != 0 and "--trust is for codex only" in proc.stderr


def test_installing_again_mends_an_old_command_instead_of_adding_a_second(tmp_path, home):
    """An install made with another turnback (a bare `turnback`, a removed virtual environment)
    is pointed at this one: one entry per event, never two the agent would both run."""
    root = tmp_path / "ws"
    root.mkdir()
    old = tmp_path / "gone" / "turnback"
    install.install("claude-code", "project", root, command=str(old))
    install.install("copilot", "project", root, command="turnback")
    again = install.install("claude-code", "project", root, command="/opt/tb/bin/turnback")
    assert set(again["updated"]) == set(install.EVENTS["claude-code"]) and not again["added"]
    hooks = json.loads((root / ".claude/settings.json").read_text())["hooks"]
    for event in install.EVENTS["claude-code"]:
        commands = [h["command"] for g in hooks[event] for h in g["hooks"]]
        assert commands == ["/opt/tb/bin/turnback hook claude-code"], (event, commands)
    install.install("copilot", "project", root, command="/opt/tb/bin/turnback")
    data = json.loads((root / ".github/hooks/turnback.json").read_text())
    assert data["hooks"]["preToolUse"] == [{"type": "command", "timeoutSec": 30,
                                           "bash": "/opt/tb/bin/turnback hook copilot --event preToolUse"}]
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("claude-code", "project")]
    assert row["commandMissing"] == "/opt/tb/bin/turnback no longer exists"
    # and uninstall still removes exactly turnback's entries
    install.uninstall("claude-code", "project", root)
    assert not (root / ".claude/settings.json").exists()


@pytest.mark.parametrize("command", [None, "/old/venv/bin/turnback"])
def test_installing_again_mends_a_codex_timeout_codex_would_clamp(tmp_path, home, monkeypatch,
                                                                    command):
    """Codex 0.169 clamps SessionEnd and Interrupt hooks to 3 s and prints an error item in every
    run when asked for more (an earlier turnback wrote 30; a user may edit it): `hooks status` names
    it, installing again (same command or another) sets 3, and touches nothing else."""
    monkeypatch.setenv("TURNBACK_CODEX", str(tmp_path / "no-codex"))
    root = tmp_path / "ws"
    root.mkdir()
    install.install("codex", "project", root, command=command)
    path = root / ".codex/hooks.json"
    data = json.loads(path.read_text())
    data["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] = 30
    data["hooks"]["Interrupt"][0]["hooks"][0]["timeout"] = "3"
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 45  # Stop is not clamped: the user's choice
    path.write_text(json.dumps(data))
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("codex", "project")]
    assert row["timeoutClamped"] == ["Interrupt", "SessionEnd"]
    assert "SessionEnd: a timeout codex clamps" in tb(root, "hooks", "status").stdout.replace(
        "Interrupt, ", "")
    again = install.install("codex", "project", root)
    expected = ["Interrupt", "SessionEnd"] if command is None else install.EVENTS["codex"]
    assert sorted(again["updated"]) == sorted(expected), again
    hooks = json.loads(path.read_text())["hooks"]
    assert [h["timeout"] for e in ("SessionEnd", "Interrupt") for g in hooks[e] for h in g["hooks"]] \
        == [3, 3]
    assert hooks["Stop"][0]["hooks"][0]["timeout"] == 45
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("codex", "project")]
    assert "timeoutClamped" not in row
    assert install.install("codex", "project", root)["alreadyInstalled"]


def test_gemini_status_says_when_gemini_will_not_run_the_hooks(tmp_path, home, monkeypatch):
    """Gemini CLI runs no hooks in a folder it does not trust (hooks/geminitrust.py): status says
    so until trustedFolders.json's longest rule covering the project trusts it, or folder trust is
    off; turnback itself never writes Gemini's trust."""
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", raising=False)
    root = tmp_path / "proj" / "ws"
    root.mkdir(parents=True)
    install.install("gemini", "project", root)
    gem = home / ".gemini"
    gem.mkdir()

    def blocked():
        row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("gemini", "project")]
        return row["gemini"]["blocked"]

    assert "not trusted by Gemini" in blocked()
    assert "will not run it" in tb(root, "hooks", "status", env={"HOME": str(home)}).stdout
    rules = gem / "trustedFolders.json"
    for folders, trusted in [({str(root): "TRUST_FOLDER"}, True),
                             ({str(root / "sub"): "TRUST_FOLDER"}, False),
                             ({str(tmp_path / "proj" / "x"): "TRUST_PARENT"}, True),
                             ({str(tmp_path / "proj"): "TRUST_FOLDER", str(root): "DO_NOT_TRUST"},
                              False),
                             ({str(tmp_path): "DO_NOT_TRUST", str(root): "TRUST_FOLDER"}, True)]:
        rules.write_text(json.dumps(folders))
        assert (blocked() is None) == trusted, folders
    rules.write_text("{not json")
    assert "cannot read" in blocked()
    rules.unlink()
    (gem / "settings.json").write_text(json.dumps({"security": {"folderTrust": {"enabled": False}}}))
    assert blocked() is None
    assert sorted(p.name for p in gem.iterdir()) == ["settings.json"], "turnback wrote no trust"


def test_opencode_plugin_install_status_uninstall(tmp_path, home, monkeypatch):
    """OpenCode gets a plugin file, not a hooks entry: written whole with this turnback's command,
    reported, rewritten when edited (the edit kept beside it, under a name OpenCode does not load),
    never written over or removed when the file is not turnback's."""
    from turnback.hooks import opencodeplugin

    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    root = tmp_path / "ws"
    root.mkdir()
    result = install.install("opencode", "project", root)
    plugin = root / ".opencode/plugin/turnback.js"
    assert result["added"] and plugin.read_text() == opencodeplugin.render(result["command"])
    assert opencodeplugin.installed_command(plugin.read_text()) == result["command"]
    assert install.install("opencode", "project", root)["alreadyInstalled"]
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("opencode", "project")]
    assert row["complete"] and "edited" not in row
    plugin.write_text(plugin.read_text().replace("TIMEOUT_MS = 30000", "TIMEOUT_MS = 5"))
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("opencode", "project")]
    assert row["installed"] and not row["complete"] and "edited" in row["edited"]
    again = install.install("opencode", "project", root)
    assert again["updated"] and "TIMEOUT_MS = 5" in Path(again["editedKept"]).read_text()
    assert not again["editedKept"].endswith((".js", ".ts"))
    assert plugin.read_text() == opencodeplugin.render(again["command"])
    user = install.install("opencode", "user", root, command="turnback")
    assert user["path"] == str(home / ".config/opencode/plugin/turnback.js")
    assert install.uninstall("opencode", "user", root)["removed"]
    assert install.uninstall("opencode", "project", root)["removed"] and not plugin.exists()
    plugin.write_text("export const Mine = async () => ({})\n")
    with pytest.raises(Exception, match="not turnback's plugin"):
        install.install("opencode", "project", root)
    assert not install.uninstall("opencode", "project", root)["removed"] and plugin.exists()
    row = {(r["agent"], r["scope"]): r for r in installstatus.status(root)}[("opencode", "project")]
    assert not row["installed"] and "not turnback's" in row["problem"]


def test_opencode_plugin_never_blocks_on_a_broken_turnback(tmp_path):
    """The plugin itself, run by node: a turnback command that fails, hangs past the timeout or
    prints junk gives every hook a quiet return (OpenCode is never blocked, nothing thrown)."""
    import shutil

    from turnback.hooks import opencodeplugin

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH")
    for command in ("exit 3", "echo not-json", "sleep 5", str(tmp_path / "missing-turnback")):
        src = opencodeplugin.render(command).replace("const TIMEOUT_MS = 30000",
                                                     "const TIMEOUT_MS = 1500")
        plugin = tmp_path / "turnback.mjs"
        plugin.write_text(src)
        driver = tmp_path / "drive.mjs"
        driver.write_text(
            "import { Turnback } from './turnback.mjs';\n"
            "const h = await Turnback({ directory: '/w' });\n"
            "const parts = [{ type: 'text', text: 'hi', id: 'p1' }];\n"
            "await h['chat.message']({ sessionID: 's' }, { message: { id: 'm' }, parts });\n"
            "await h['tool.execute.before']({ tool: 'bash', sessionID: 's', callID: 'c' }, { args: {} });\n"
            "await h['tool.execute.after']({ tool: 'bash', sessionID: 's', callID: 'c' }, { output: 'x' });\n"
            "await h.event({ event: { type: 'session.idle', properties: { sessionID: 's' } } });\n"
            "await h.event({ event: { type: 'some.future.event', properties: {} } });\n"
            "await h.event({ event: null });\n"
            "console.log(JSON.stringify(parts.length));\n")
        proc = subprocess.run([node, str(driver)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stdout.strip() == "1", (command, proc.stdout)
