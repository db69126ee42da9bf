"""The guard before the boundary (issue 23, item 5): before a tool call that would leave the machine,
the agent's pre-tool hook warns, asks or refuses as `[guard]` says, in each agent's own answer, naming
what turnback cannot rewind and what the last checkpoint holds."""

from __future__ import annotations

import io
import json

import pytest
from hookkit import hook_log, tb, tb_json

from turnback.hooks.runtime import run

PUSH = {"command": "git push origin main"}


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNBACK_HOOK_DIRECT", "1")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    (root / "a.txt").write_text("one\n")
    return root


def guard(ws, text: str) -> None:
    (ws / "turnback.toml").write_text(text)


def hook(agent: str, payload: dict, *, event: str | None = None):
    out, err = io.StringIO(), io.StringIO()
    code = run(agent, stdin=io.BytesIO(json.dumps(payload).encode()), stdout=out, stderr=err,
               event=event)
    assert code == 0, err.getvalue()
    text = out.getvalue().strip()
    return json.loads(text) if text else None


def claude(ws, event: str, **fields) -> dict:
    return {"session_id": "s-1", "transcript_path": None, "cwd": str(ws), "hook_event_name": event,
            **fields}


def start_turn_with_a_write(ws, agent="claude-code", make=claude):
    hook(agent, make(ws, "UserPromptSubmit", prompt="ship it"))
    write = {"file_path": str(ws / "a.txt"), "content": "two\n"}
    hook(agent, make(ws, "PreToolUse", tool_name="Write", tool_input=write, tool_use_id="w1"))
    (ws / "a.txt").write_text("two\n")
    hook(agent, make(ws, "PostToolUse", tool_name="Write", tool_input=write, tool_use_id="w1",
                     tool_response={"ok": True}))


def test_claude_code_asks_and_says_what_the_checkpoint_holds(ws):
    guard(ws, '[guard]\ncrossing = "ask"\n')
    start_turn_with_a_write(ws)
    out = hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash", tool_input=PUSH,
                                     tool_use_id="p1", permission_mode="default"))
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse" and specific["permissionDecision"] == "ask"
    reason = specific["permissionDecisionReason"]
    assert "turnback cannot rewind this" in reason and "git push origin main" in reason
    assert "leaves this machine" in reason
    assert "start of turn 1" in reason and "ship it" in reason and "a.txt" in reason
    # asked, not refused: the call is noted as begun, so a denial in the agent's dialog (no Post)
    # is a gap of the turn, as before
    hook("claude-code", claude(ws, "Stop", last_assistant_message="done"))
    steps = tb_json(ws, "log")["turns"][0]["stepList"]
    assert any("git push" in s["summary"] and "never finished" in s["summary"] for s in steps)


def test_a_read_only_or_local_call_is_not_asked_about(ws):
    guard(ws, '[guard]\ncrossing = "ask"\n')
    start_turn_with_a_write(ws)
    for command in ("git status", "make build"):
        assert hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash",
                                          tool_input={"command": command}, tool_use_id=command)) is None


def test_deny_refuses_and_records_nothing_for_the_call(ws):
    guard(ws, '[guard]\ncrossing = "deny"\n')
    start_turn_with_a_write(ws)
    out = hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash", tool_input=PUSH,
                                     tool_use_id="p1"))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    hook("claude-code", claude(ws, "Stop", last_assistant_message="could not push"))
    turn = tb_json(ws, "log")["turns"][0]
    assert not any("git push" in s["summary"] for s in turn["stepList"])
    assert not any(g["reason"] == "step-scope-unknown" for g in turn["gaps"])


def test_the_default_warns_and_never_stops_the_agent(ws):
    start_turn_with_a_write(ws)
    out = hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash", tool_input=PUSH,
                                     tool_use_id="p1"))
    assert "permissionDecision" not in out["hookSpecificOutput"]
    assert "turnback cannot rewind this" in out["systemMessage"]
    assert "turnback cannot rewind this" in out["hookSpecificOutput"]["additionalContext"]
    # an MCP tool (scope unknown) says nothing by default, and warns when asked to
    mcp = claude(ws, "PreToolUse", tool_name="mcp__slack__post", tool_input={"text": "hi"},
                 tool_use_id="m1")
    assert hook("claude-code", mcp) is None
    guard(ws, '[guard]\nunknown = "warn"\n')
    out = hook("claude-code", dict(mcp, tool_use_id="m2"))
    assert "may leave this machine" in out["systemMessage"]


@pytest.mark.parametrize("mode", ["bypassPermissions", "dontAsk"])
def test_claude_code_modes_that_never_ask_get_a_refusal_to_ask_about(ws, mode):
    guard(ws, '[guard]\ncrossing = "ask"\n')
    start_turn_with_a_write(ws)
    call = claude(ws, "PreToolUse", tool_name="Bash", tool_input=PUSH, tool_use_id="p1",
                  permission_mode=mode)
    out = hook("claude-code", call)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "Ask the person" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert hook("claude-code", dict(call, tool_use_id="p2")) is None  # made again: let through


def test_codex_has_no_ask_so_it_is_a_refusal_once(ws):
    guard(ws, '[guard]\ncrossing = "ask"\n')
    start_turn_with_a_write(ws, "codex")
    call = claude(ws, "PreToolUse", tool_name="Bash", tool_input={"command": "git push"},
                  tool_use_id="call_03")
    out = hook("codex", call)
    specific = out["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"  # never "ask" or "allow": Codex rejects those
    assert "Ask the person" in specific["permissionDecisionReason"]
    # the person agreed and the model makes the same call again (a new call id): it passes
    again = dict(call, tool_use_id="call_05")
    assert hook("codex", again) is None
    hook("codex", dict(again, hook_event_name="PostToolUse", tool_response={"exit_code": 0}))
    hook("codex", claude(ws, "Stop", last_assistant_message="pushed"))
    steps = tb_json(ws, "log")["turns"][0]["stepList"]
    push = [s for s in steps if "git push" in s["summary"]]
    assert len(push) == 1 and push[0]["scope"] == "crossing"
    assert any("let through" in line for line in hook_log(ws))
    # a third time is asked about again
    assert hook("codex", dict(call, tool_use_id="call_09"))["hookSpecificOutput"][
        "permissionDecision"] == "deny"


def test_gemini_answers_with_its_decision_field(ws):
    guard(ws, '[guard]\ncrossing = "ask"\n')

    def gem(ws, event, **fields):
        name = {"UserPromptSubmit": "BeforeAgent", "PreToolUse": "BeforeTool",
                "PostToolUse": "AfterTool"}[event]
        fields.pop("tool_use_id", None)
        return {"session_id": "g-1", "transcript_path": None, "cwd": str(ws),
                "hook_event_name": name, **fields}

    start_turn_with_a_write(ws, "gemini", gem)
    out = hook("gemini", gem(ws, "PreToolUse", tool_name="run_shell_command",
                             tool_input={"command": "gh pr create --fill"}))
    assert out["decision"] == "deny" and "Ask the person" in out["reason"]
    assert out["systemMessage"].startswith("turnback: ")


def test_copilot_asks_at_the_top_level(ws):
    guard(ws, '[guard]\ncrossing = "ask"\n')
    hook("copilot", {"cwd": str(ws), "prompt": "publish"}, event="userPromptSubmitted")
    out = hook("copilot", {"cwd": str(ws), "toolName": "bash",
                           "toolArgs": json.dumps({"command": "npm publish"})}, event="preToolUse")
    assert out["permissionDecision"] == "ask"
    assert "npm publish" in out["permissionDecisionReason"]
    assert "hookSpecificOutput" not in out


def test_a_guard_naming_an_unknown_scope_is_a_clear_error(ws):
    guard(ws, '[guard]\ncrosing = "ask"\nunknown = "sometimes"\n')
    proc = tb(ws, "guard", check=False)
    assert proc.returncode == 1
    assert "error [bad-config]" in proc.stderr and "unknown scope 'crosing'" in proc.stderr
    assert "'sometimes' is not one of allow, warn, ask, deny" in proc.stderr
    # the hook is never in the agent's way: it logs the problem and goes on with the defaults
    start_turn_with_a_write(ws)
    out = hook("claude-code", claude(ws, "PreToolUse", tool_name="Bash", tool_input=PUSH,
                                     tool_use_id="p1"))
    assert "permissionDecision" not in out["hookSpecificOutput"]  # the default: a warning
    assert any("unknown scope 'crosing'" in line for line in hook_log(ws))


def test_turnback_guard_reports_what_is_in_force(ws):
    guard(ws, '[guard]\ncrossing = "deny"\n[hooks]\nafter-rewind = "true"\n')
    doc = tb_json(ws, "guard", "--check", "curl -X POST https://example.com")
    assert doc["guard"]["crossing"]["action"] == "deny"
    assert doc["guard"]["unknown"] == {"action": "allow", "source": "default"}
    assert doc["check"]["scope"] == "crossing" and doc["check"]["action"] == "deny"
    assert doc["afterRewind"]["command"] == "true" and doc["errors"] == []


def test_cursor_asks_where_it_reads_a_permission(ws):
    guard(ws, '[guard]\ncrossing = "ask"\n')

    def cur(event, **fields):
        return {"conversation_id": "c-1", "generation_id": "g-1", "hook_event_name": event,
                "workspace_roots": [str(ws)], "cwd": str(ws), **fields}

    hook("cursor", cur("beforeSubmitPrompt", prompt="publish it"))
    # its preToolUse of the shell call says nothing (Cursor reads no permission there)...
    assert hook("cursor", cur("preToolUse", tool_name="Shell", tool_input={"command": "npm publish"},
                              tool_use_id="t1")) is None
    # ...its beforeShellExecution asks
    out = hook("cursor", cur("beforeShellExecution", command="npm publish"))
    assert out["permission"] == "ask" and "npm publish" in out["user_message"]
    assert out["agent_message"] == out["user_message"]
    # a warning has no channel in Cursor (its other answer, allow, would skip its own approval)
    guard(ws, "")
    assert hook("cursor", cur("beforeShellExecution", command="npm publish --tag next")) is None
    assert any("logged only" in line for line in hook_log(ws))


def test_the_checkpoint_words_ask_the_owner_for_the_running_turn_only():
    """The guard runs on every crossing call: it asks for the one running turn (a 300-turn log is
    888 KiB the owner's loop would build each time), and words what that turn changed."""
    from turnback.hooks.guard import checkpoint_words

    asked = []

    class Port:
        def call(self, method, params):
            asked.append((method, params))
            return {"turns": [{"turn": 2, "prompt": "fix it", "files": [{"path": "b.txt"}]}]}

    class Mapper:
        port = Port()

        def log(self, line):
            raise AssertionError(line)

    text = checkpoint_words(Mapper(), {"turn": 2})
    assert asked == [("turnback/session/log", {"turn": 2})]
    assert "start of turn 2" in text and "fix it" in text and "1 file(s) this turn changed (b.txt)" in text
