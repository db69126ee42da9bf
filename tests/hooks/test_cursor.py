"""Cursor, the fifth agent (issue 22, item 7): `.cursor/hooks.json` version 1 installed, reported and
removed exactly; its recorded sessions (a current Cursor, and an older one with only the shell and
file-edit hooks) replayed through the real `turnback hook cursor`, rewound and redone."""

from __future__ import annotations

import json

import pytest
from hookkit import hook_log, replay_fixture, tb, tb_json, workspace_files

from turnback.hooks import install, installstatus

DIRECT = {"TURNBACK_HOOK_DIRECT": "1"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_STATE_HOME", str(h / ".state"))
    return h


def test_install_merges_status_reports_and_uninstall_removes_exactly(tmp_path, home):
    root = tmp_path / "ws"
    (root / ".cursor").mkdir(parents=True)
    mine = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./hooks/format.sh"}]}}
    (root / ".cursor" / "hooks.json").write_text(json.dumps(mine))
    result = install.install("cursor", "project", root, command="turnback hook cursor")
    assert set(result["added"]) == set(install.EVENTS["cursor"])
    data = json.loads((root / ".cursor" / "hooks.json").read_text())
    assert data["version"] == 1
    assert data["hooks"]["afterFileEdit"] == [{"command": "./hooks/format.sh"},
                                              {"command": "turnback hook cursor"}]
    assert data["hooks"]["stop"] == [{"command": "turnback hook cursor"}]
    assert install.install("cursor", "project", root, command="turnback hook cursor")["alreadyInstalled"]
    status = next(s for s in installstatus.status(root) if s["agent"] == "cursor" and s["scope"] == "project")
    assert status["installed"] and status["complete"] and status["missing"] == []
    assert install.uninstall("cursor", "project", root)["removed"]
    assert json.loads((root / ".cursor" / "hooks.json").read_text()) == mine


def test_a_file_turnback_made_goes_with_uninstall(tmp_path, home):
    root = tmp_path / "ws"
    root.mkdir()
    proc = tb(root, "hooks", "install", "cursor", "--command", "turnback hook cursor")
    assert ".cursor/hooks.json" in proc.stdout
    tb(root, "hooks", "uninstall", "cursor")
    assert not (root / ".cursor" / "hooks.json").exists()
    assert install.install("cursor", "user", root)["path"] == str(home / ".cursor" / "hooks.json")


@pytest.fixture(autouse=True)
def stop_background_owner(tmp_path):
    yield
    if (tmp_path / "ws" / ".turnback").exists():
        tb(tmp_path / "ws", "daemon", "stop", check=False)


@pytest.mark.parametrize("env", [pytest.param(DIRECT, id="direct"), pytest.param({}, id="live-sidecar")])
def test_a_cursor_session_replayed_rewound_and_redone(tmp_path, env):
    recording, rep = replay_fixture(tmp_path, "cursor", env=env)
    root = rep.workspace
    assert all((s.returncode, s.stdout, s.stderr) == (0, "", "") for s in rep.sent)
    turn = tb_json(root, "log")["turns"][0]
    assert (turn["prompt"], turn["state"]) == ("Add a version module and update the README", "settled")
    assert turn["response"].startswith("I added src/version.py")
    steps = [(s["kind"], s["scope"], s["summary"].split(" [")[0]) for s in turn["stepList"]]
    assert steps[:2] == [("file-write", "host", "Write src/version.py"),
                         ("shell", "unknown", "Shell: sed -i 's/An old app/A new app/' README.md")]
    assert steps[2][:2] == ("shell", "crossing") and "(failed: npm ERR! code ENEEDAUTH)" in \
        turn["stepList"][2]["summary"]
    assert steps[3] == ("other", "unknown", "MCP tool MCP:linear_create_issue")
    assert "never finished" in steps[4][2] and len(steps) == 5  # each shell command once
    assert {f["path"] for f in turn["files"]} == {"src/version.py", "README.md"}
    assert workspace_files(root) == recording["expect"]["files"]
    assert tb_json(root, "rewind", "--before-prompt", "1", "--yes")["commit"]["status"] == "committed"
    assert workspace_files(root) == recording["files"]
    head = max(tb_json(root, "redo")["groups"], key=lambda g: g["turnCount"])["headSeq"]
    assert tb_json(root, "redo", "--head", str(head), "--yes")["commit"]["status"] == "committed"
    assert workspace_files(root) == recording["expect"]["files"]
    assert sum("a second PreToolUse" in line for line in hook_log(root)) == 2


def test_an_older_cursor_with_only_shell_and_file_edit_hooks(tmp_path):
    recording, rep = replay_fixture(tmp_path, "cursor", "legacy", env=DIRECT)
    root = rep.workspace
    turn = tb_json(root, "log")["turns"][0]
    assert [(s["kind"], s["summary"].split(" [")[0]) for s in turn["stepList"]] == \
        [("file-write", "edit src/app.py"), ("shell", "Shell: echo 0.3 > VERSION")]
    tb(root, "rewind", "--before-prompt", "1", "--yes")
    assert workspace_files(root) == recording["files"]
