"""Bad input never gets in the agent's way: exit 0, nothing printed, a clear line in the hook log,
nothing lost, and the session stays usable. Runs the hook's entry point in this process."""

from __future__ import annotations

import base64
import io
import json

import pytest
from hookkit import hook_log, tb_json

from turnback.hooks.runtime import run


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNBACK_HOOK_DIRECT", "1")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    (root / "a.txt").write_text("one\n")
    return root


def hook(agent: str, payload, *, event: str | None = None):
    body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
    if isinstance(body, str):
        body = body.encode()
    out, err = io.StringIO(), io.StringIO()
    code = run(agent, stdin=io.BytesIO(body), stdout=out, stderr=err, event=event)
    return code, out.getvalue(), err.getvalue()


def claude(ws, event: str, **fields) -> dict:
    return {"session_id": "s-1", "transcript_path": None, "cwd": str(ws), "hook_event_name": event,
            **fields}


def test_not_json(ws, monkeypatch):
    monkeypatch.chdir(ws)
    assert hook("claude-code", b"{not json") == (0, "", "")
    assert any("not JSON" in line and "{not json" in line for line in hook_log(ws))


def test_missing_fields(ws, monkeypatch):
    monkeypatch.chdir(ws)
    assert hook("claude-code", {"cwd": str(ws), "session_id": "s"}) == (0, "", "")
    assert hook("gemini", {"cwd": str(ws), "hook_event_name": "BeforeTool"}) == (0, "", "")
    assert hook("claude-code", ["a", "list"]) == (0, "", "")
    log = hook_log(ws)
    assert any("names no hook event" in line for line in log)
    assert any("has no session_id" in line for line in log)
    assert any("not a JSON object" in line for line in log)


def test_post_before_pre_and_stop_without_turn(ws):
    write = {"file_path": str(ws / "a.txt"), "content": "two\n"}
    assert hook("claude-code", claude(ws, "Stop", last_assistant_message="orphan answer"))[0] == 0
    (ws / "a.txt").write_text("two\n")
    assert hook("claude-code", claude(ws, "PostToolUse", tool_name="Write", tool_input=write,
                                      tool_use_id="t1", tool_response={}))[0] == 0
    assert hook("claude-code", claude(ws, "Stop", last_assistant_message="done"))[0] == 0
    log = hook_log(ws)
    assert any("Stop with no turn running" in line and "orphan answer" in line for line in log)
    assert any("with no PreToolUse" in line for line in log)
    turns = tb_json(ws, "log")["turns"]
    # nothing lost: the Post began a turn of its own and its write is a step of it
    assert len(turns) == 1 and turns[0]["stepList"][0]["summary"] == "Write a.txt"
    assert turns[0]["response"] == "done"


def test_path_outside_the_workspace(ws, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    hook("claude-code", claude(ws, "UserPromptSubmit", prompt="write outside"))
    write = {"file_path": str(outside), "content": "y"}
    assert hook("claude-code", claude(ws, "PreToolUse", tool_name="Write", tool_input=write,
                                      tool_use_id="t1")) == (0, "", "")
    assert hook("claude-code", claude(ws, "PostToolUse", tool_name="Write", tool_input=write,
                                      tool_use_id="t1", tool_response={})) == (0, "", "")
    hook("claude-code", claude(ws, "Stop", last_assistant_message="ok"))
    turn = tb_json(ws, "log")["turns"][0]
    step = turn["stepList"][0]
    assert "outside the workspace" in step["summary"] and step["scope"] == "unknown"
    assert any(g["reason"] == "step-scope-unknown" for g in turn["gaps"])


def test_unknown_session_is_attached(ws):
    assert hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash",
                                      tool_input={"command": "ls"}, tool_use_id="t9"))[0] == 0
    assert any("has not seen start" in line for line in hook_log(ws))
    assert tb_json(ws, "log")["turns"][0]["state"] == "running"


def test_a_failing_session_is_logged_not_raised(ws, monkeypatch):
    """A turnback failure (here: the store is owned by no one reachable) exits 0 and is logged; the
    event waits in the spool for the next owner (docs/live.md, "A hook never blocks")."""
    from hookkit import spooled

    from turnback.hooks import port

    def refuse(self):
        raise port.NotOwner("another turnback owns the store", data={})

    monkeypatch.setattr(port.DirectPort, "_open", refuse)
    assert hook("claude-code", claude(ws, "UserPromptSubmit", prompt="hi")) == (0, "", "")
    assert any("[not-owner]" in line and "kept in the spool" in line for line in hook_log(ws))
    assert [json.loads(base64.b64decode(k["body64"]))["prompt"] for k in spooled(ws)] == ["hi"]


def test_block_when_configured(ws, monkeypatch):
    from turnback.hooks import port

    def refuse(self):
        raise port.NotOwner("another turnback owns the store", data={})

    monkeypatch.setattr(port.DirectPort, "_open", refuse)
    (ws / "turnback.toml").write_text("[hooks]\nblock = true\n")
    code, out, err = hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash",
                                                tool_input={"command": "ls"}, tool_use_id="t"))
    assert code == 2 and out == "" and "block = true" in err
    # a Stop is never blocked, even then
    assert hook("claude-code", claude(ws, "Stop"))[0] == 0


def test_bad_config_is_logged_and_defaults_apply(ws):
    (ws / "turnback.toml").write_text("[shell\nnone = 3")
    hook("claude-code", claude(ws, "UserPromptSubmit", prompt="p"))
    hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"},
                               tool_use_id="t"))
    hook("claude-code", claude(ws, "PostToolUse", tool_name="Bash", tool_input={"command": "ls"},
                               tool_use_id="t", tool_response={"stdout": "a.txt"}))
    assert any("not valid TOML" in line for line in hook_log(ws))
    step = tb_json(ws, "log")["turns"][0]["stepList"][0]
    assert step["scope"] == "none"
