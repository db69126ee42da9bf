"""The agent's conversation rewinds with the files: after a committed turnback rewind the next prompt
(or session start) tells the model what happened; the exact `claude --resume ... --resume-session-at`
command is in the commit result, in `session/info` and printed by `turnback rewind`; and Claude Code's
own /rewind is detected from the transcript and answered with the matching file rewind."""

from __future__ import annotations

import json
import subprocess
import sys

from hookkit import TURNBACK, hook_log, replay_fixture, tb, tb_json

DIRECT = {"TURNBACK_HOOK_DIRECT": "1"}
SID = "3f1c2a9e-7b4d-4e21-9c55-0a8d6e2f4b17"


def send(root, payload: dict, env=DIRECT) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(TURNBACK + ["hook", "claude-code"], input=json.dumps(payload), text=True,
                          capture_output=True, cwd=root, env={**os.environ, **env}, timeout=60)


def test_rewind_gives_resume_command_and_context(tmp_path):
    recording, rep = replay_fixture(tmp_path, "claude-code", env=DIRECT)
    root = rep.workspace
    result = tb_json(root, "rewind", "--after-response", "1", "--yes")["commit"]
    assert result["status"] == "committed"
    # a4 is the transcript record that ended turn 1
    assert result["agentResume"]["command"] == f"claude --resume {SID} --resume-session-at a4"
    info = tb_json(root, "info")
    assert info["agent"]["resume"]["uuid"] == "a4"
    assert info["epoch"] == 1
    # the next prompt hears about it, once
    prompt = {"session_id": SID, "transcript_path": str(rep.transcript), "cwd": str(root),
              "hook_event_name": "UserPromptSubmit", "prompt": "carry on"}
    proc = send(root, prompt)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "end of turn 1" in context and "conf/app.ini" in context and "src/util.py" in context
    assert "src/greet.py" not in context  # turn 1 survives: its files were not rewound
    send(root, {**prompt, "hook_event_name": "Stop", "last_assistant_message": "ok"})
    again = send(root, {**prompt, "prompt": "and again"})
    assert again.stdout == ""


def test_rewind_command_line_prints_the_resume_command(tmp_path):
    recording, rep = replay_fixture(tmp_path, "claude-code", env=DIRECT)
    out = tb(rep.workspace, "rewind", "--after-response", "1", "--yes").stdout
    assert f"claude --resume {SID} --resume-session-at a4" in out


def test_session_start_after_rewind_adds_context(tmp_path):
    recording, rep = replay_fixture(tmp_path, "claude-code", env=DIRECT)
    root = rep.workspace
    tb(root, "rewind", "--before-prompt", "2", "--yes")
    proc = send(root, {"session_id": SID, "transcript_path": str(rep.transcript), "cwd": str(root),
                       "hook_event_name": "SessionStart", "source": "resume"})
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "end of turn 1" in out["hookSpecificOutput"]["additionalContext"]


def test_claude_codes_own_rewind_is_detected(tmp_path):
    recording, rep = replay_fixture(tmp_path, "claude-code", "own-rewind", env=DIRECT)
    root = rep.workspace
    last = rep.sent[-1]
    assert last.returncode == 0
    message = json.loads(last.stdout)["systemMessage"]
    assert "/rewind" in message and "turnback rewind --after-response 1" in message
    assert tb_json(root, "info")["agent"]["offer"]["turn"] == 1
    assert any("/rewind to turn 1 detected" in line for line in hook_log(root))
    # the offered rewind covers the shell edit Claude Code's checkpoints miss
    log = tb_json(root, "log")
    assert [t["state"] for t in log["turns"]] == ["settled", "settled", "running"]
    tb(root, "turn", "settle", "--cancelled")
    tb(root, "rewind", "--after-response", "1", "--yes")
    assert "def greet" in (root / "src" / "greet.py").read_text()
    assert "hello" not in (root / "src" / "app.py").read_text()


def test_resume_under_a_new_session_id_continues_the_same_session(tmp_path):
    """`claude --resume SESSION --resume-session-at UUID` may go on under a new session id: its
    transcript holds the resumed turns, so it feeds the same turnback session."""
    recording, rep = replay_fixture(tmp_path, "claude-code", env=DIRECT)
    root = rep.workspace
    tb(root, "rewind", "--after-response", "1", "--yes")
    before = tb_json(root, "info")["sessionId"]
    resumed = tmp_path / "resumed.jsonl"
    lines = rep.transcript.read_text().splitlines()
    resumed.write_text("\n".join(lines[:8]) + "\n")  # up to a4, the end of turn 1
    new = {"session_id": "new-id", "transcript_path": str(resumed), "cwd": str(root)}
    proc = send(root, {**new, "hook_event_name": "SessionStart", "source": "resume"})
    assert proc.returncode == 0
    send(root, {**new, "hook_event_name": "UserPromptSubmit", "prompt": "after the resume"})
    info = tb_json(root, "info")
    assert info["sessionId"] == before
    assert [t["prompt"] for t in tb_json(root, "log")["turns"]][-1] == "after the resume"
    assert any("resumes claude-code:" + SID in line for line in hook_log(root))
