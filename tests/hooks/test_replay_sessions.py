"""Recorded agent sessions replayed through `turnback hook AGENT` (a real process per event), on the
direct path (no sidecar) and through a live sidecar: the session log, its steps and scopes, the gaps,
the effect buckets, and a rewind that restores every file (shell edits included) and a redo that
brings it all back."""

from __future__ import annotations

import importlib.util
import json

import pytest
from hookkit import hook_log, replay_fixture, tb, tb_json, workspace_files

DIRECT = {"TURNBACK_HOOK_DIRECT": "1"}
HAVE_SOCKET = importlib.util.find_spec("turnback.remote") is not None

PATHS = [pytest.param(DIRECT, id="direct")]
if HAVE_SOCKET:
    PATHS.append(pytest.param({}, id="live-sidecar"))


@pytest.fixture(autouse=True)
def stop_background_owner(tmp_path):
    """A live-sidecar replay starts a background owner; stop it when the test is done."""
    yield
    if (tmp_path / "ws" / ".turnback").exists():
        tb(tmp_path / "ws", "daemon", "stop", check=False)


def _steps(log: dict, n: int) -> list[dict]:
    return log["turns"][n - 1]["stepList"]


def _rewind_all_and_redo(root, recording):
    start = recording["files"]
    after = workspace_files(root)
    for rel, text in recording["expect"]["files"].items():
        assert after[rel] == text, rel
    plan = tb_json(root, "rewind", "--before-prompt", "1")
    assert not plan["commit"]
    commit = tb_json(root, "rewind", "--before-prompt", "1", "--yes")["commit"]
    assert commit["status"] == "committed"
    # every file back as it was before the agent started, the shell edit included
    assert workspace_files(root) == dict(sorted(start.items()))
    groups = tb_json(root, "redo")["groups"]
    newest = max(groups, key=lambda g: g["turnCount"])
    assert newest["turnCount"] == recording["expect"]["turns"]
    redo = tb_json(root, "redo", "--head", str(newest["headSeq"]), "--yes")["commit"]
    assert redo["status"] == "committed"
    assert workspace_files(root) == after
    return plan["candidate"]


@pytest.mark.parametrize("env", PATHS)
def test_claude_code_session(tmp_path, env):
    recording, rep = replay_fixture(tmp_path, "claude-code", env=env)
    root = rep.workspace
    assert all(s.returncode == 0 for s in rep.sent), [s.stderr for s in rep.sent if s.returncode]
    said = [(s.payload.get("hook_event_name"), s.payload.get("tool_input", {}).get("command"),
             json.loads(s.stdout)) for s in rep.sent if s.stdout.strip()]
    # nothing printed when there is nothing to say; the guard's default warns before the push
    assert [(name, command) for name, command, _ in said] == [("PreToolUse", "git push origin main")]
    warning = said[0][2]
    assert "turnback cannot rewind this" in warning["systemMessage"]
    assert "permissionDecision" not in warning["hookSpecificOutput"]  # a warning never stops it
    log = tb_json(root, "log")
    assert [t["state"] for t in log["turns"]] == ["settled", "settled"]
    t1, t2 = log["turns"]
    assert t1["prompt"] == "Add a greeting function and use it in app.py"
    assert t1["response"].startswith("I added greet()")
    assert t2["response"].startswith("util and config are tidied")  # read from the transcript
    assert {f["path"] for f in t1["files"]} == {"src/greet.py", "src/app.py", "README.md"}
    kinds = [(s["kind"], s["scope"]) for s in _steps(log, 1)]
    assert kinds == [("file-write", "host"), ("file-write", "host"), ("shell", "unknown"),
                     ("shell", "none")]
    assert "sed -i" in _steps(log, 1)[2]["summary"]
    assert _steps(log, 1)[2]["paths"] == ["README.md"]  # Claude Code said which file it changed
    steps2 = _steps(log, 2)
    # the parallel Edits are both recorded, in the order of their tool ids (A before B)
    assert [s["summary"] for s in steps2[:2]] == ["Edit src/util.py", "Edit conf/app.ini"]
    assert "git push origin main" in steps2[2]["summary"] and "never finished" in steps2[2]["summary"]
    assert steps2[2]["scope"] == "unknown"
    assert steps2[3]["summary"].startswith("Agent")
    assert "failed: Command failed with exit code 127" in steps2[4]["summary"]
    assert (steps2[5]["kind"], steps2[5]["scope"]) == ("network-fetch", "none")
    assert (steps2[6]["kind"], steps2[6]["scope"]) == ("other", "unknown")
    # the Pre without a Post is a gap of its turn
    gaps = [g for g in t2["gaps"] if g["reason"] == "step-scope-unknown"]
    assert len(gaps) == 1 and steps2[2]["id"] in gaps[0]["detail"]
    candidate = _rewind_all_and_redo(root, recording)
    effects = candidate["effects"]
    ids = {s["summary"]: s["id"] for s in _steps(log, 1) + steps2}
    assert ids["Write src/greet.py"] in effects["restored"]
    assert ids["Edit src/util.py"] in effects["restored"]
    assert ids["Bash: git status --short [scope none: 'git status' -> none (default)]"] \
        in effects["provablyEmpty"]
    assert steps2[2]["id"] in effects["crossedUncompensated"]
    assert any("session start" in line for line in hook_log(root)), hook_log(root)


@pytest.mark.parametrize("env", PATHS)
@pytest.mark.parametrize("agent", ["codex", "gemini", "copilot"])
def test_other_agents(tmp_path, env, agent):
    recording, rep = replay_fixture(tmp_path, agent, env=env)
    root = rep.workspace
    assert all(s.returncode == 0 for s in rep.sent), [s.stderr for s in rep.sent if s.returncode]
    log = tb_json(root, "log")
    assert len(log["turns"]) == 1 and log["turns"][0]["state"] == "settled"
    turn = log["turns"][0]
    assert {f["path"] for f in turn["files"]} == set(recording["expect"]["files"])
    steps = turn["stepList"]
    shell = [s for s in steps if s["kind"] == "shell"]
    assert shell and all(s["scope"] in ("unknown", "crossing", "none") for s in shell)
    assert any(s["kind"].startswith("file-") and s["scope"] == "host" for s in steps)
    assert any("failed" in s["summary"] for s in steps), "the failed command is recorded as failed"
    if agent != "copilot":  # Copilot reports a denied call as a failed Post, not a missing one
        assert any(g["reason"] == "step-scope-unknown" for g in turn["gaps"])
    if agent in ("codex", "gemini"):
        assert turn["response"]
    _rewind_all_and_redo(root, recording)


@pytest.mark.parametrize("env", PATHS)
def test_copilot_1_0_102_session(tmp_path, env):
    """Copilot CLI 1.0.102's own payloads (toolArgs an object, agentStop with no answer), with the
    first run's sessionStart after its prompt: that start does not cancel the turn it names."""
    recording, rep = replay_fixture(tmp_path, "copilot", "session-1.0.102", env=env)
    root = rep.workspace
    assert all(s.returncode == 0 for s in rep.sent), [s.stderr for s in rep.sent if s.returncode]
    turns = tb_json(root, "log")["turns"]
    assert [t["state"] for t in turns] == ["settled"] * 3, hook_log(root)
    assert [t["response"] for t in turns] == ["C1 done", "C2 done", "C3 done"]  # its transcript's
    assert [(s["kind"], s["scope"]) for s in turns[0]["stepList"]] == [("file-write", "host")] * 2
    assert [s["kind"] for s in turns[1]["stepList"]] == ["shell"]
    assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
    assert any("came after its own first prompt" in line for line in hook_log(root))
    _rewind_all_and_redo(root, recording)


def test_crossing_commands_are_crossing(tmp_path):
    recording, rep = replay_fixture(tmp_path, "copilot", env=DIRECT)
    steps = tb_json(rep.workspace, "log")["turns"][0]["stepList"]
    publish = next(s for s in steps if "npm publish" in s["summary"])
    assert publish["scope"] == "crossing" and "failed" in publish["summary"]


def test_no_store_opened_for_a_folder_turnback_does_not_know(tmp_path):
    recording, rep = replay_fixture(tmp_path, "claude-code", env=DIRECT, until=0)
    stranger = tmp_path / "elsewhere"
    stranger.mkdir()
    import json
    import subprocess
    import sys

    payload = {"session_id": "x", "cwd": str(stranger), "hook_event_name": "UserPromptSubmit",
               "prompt": "hi", "transcript_path": None}
    proc = subprocess.run([sys.executable, "-m", "turnback", "hook", "claude-code"],
                          input=json.dumps(payload), text=True, capture_output=True)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert not (stranger / ".turnback").exists()
    tb(rep.workspace, "info", check=False)


@pytest.mark.parametrize("env", PATHS)
def test_vscode_agent_mode_running_claude_hooks(tmp_path, env):
    recording, rep = replay_fixture(tmp_path, "claude-code", "vscode", env=env)
    root = rep.workspace
    assert all(s.returncode == 0 for s in rep.sent)
    turn = tb_json(root, "log")["turns"][0]
    steps = [(s["kind"], s["scope"], s["summary"].split(" [")[0]) for s in turn["stepList"]]
    assert steps == [("file-write", "host", "create_file src/version.py"),
                     ("file-write", "host", "replace_string_in_file src/app.py"),
                     ("shell", "host", "run_in_terminal: echo 'Built with VS Code.' >> README.md")]
    candidate = _rewind_all_and_redo(root, recording)
    # its write into README.md is a host change the sweep saw: put back, not "left this machine"
    shell = turn["stepList"][2]["id"]
    assert shell in candidate["effects"]["restored"]
    assert next(s for s in candidate["steps"] if s["id"] == shell)["what"] == \
        "ran \u201cecho 'Built with VS Code.' >> README.md\u201d"
