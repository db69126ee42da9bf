"""The mapper's part of real installs (issue 22, item 5): one VS Code event arriving through two hook
files is recorded once; Copilot's postToolUseFailure and its error are read, and its sessionId;
Codex's string tool_response is kept; the files a Bash command says it changed are that step's."""

from __future__ import annotations

import pytest
from agentkit import Hooked, record, send
from hookkit import hook_log, tb_json

from turnback.workbench import Options, Workbench


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    return root


def vscode(root, event: str, n: int, **fields) -> dict:
    """VS Code's agent mode payload (camelCase, its own tool names, a timestamp)."""
    return {"sessionId": "vs-1", "hookEventName": event, "cwd": str(root),
            "timestamp": f"2026-12-01T10:00:{n:02d}.000Z", "transcript_path": None, **fields}


COPILOT_NAME = {"UserPromptSubmit": "userPromptSubmitted", "PreToolUse": "preToolUse",
                "PostToolUse": "postToolUse", "Stop": "agentStop"}  # what `hooks install copilot` passes


def both(root, payload: dict, event: str):
    """One event, as VS Code delivers it: through .claude/settings.json and .github/hooks/."""
    first = send("claude-code", payload, root, "inproc")
    second = send("copilot", payload, root, "inproc", event=COPILOT_NAME[event])
    return first, second


def test_one_vscode_event_through_two_hook_files_is_recorded_once(ws):
    edit = {"filePath": str(ws / "src" / "app.py")}
    both(ws, vscode(ws, "UserPromptSubmit", 1, prompt="say hello"), "UserPromptSubmit")
    both(ws, vscode(ws, "PreToolUse", 2, toolName="replace_string_in_file", toolInput=edit,
                    toolUseId="vt1"), "PreToolUse")
    (ws / "src" / "app.py").write_text("print('hello')\n")
    # this one reaches the Copilot-format file first
    send("copilot", vscode(ws, "PostToolUse", 3, toolName="replace_string_in_file", toolInput=edit,
                           toolUseId="vt1", toolResponse="ok"), ws, "inproc", event=COPILOT_NAME["PostToolUse"])
    send("claude-code", vscode(ws, "PostToolUse", 3, toolName="replace_string_in_file",
                               toolInput=edit, toolUseId="vt1", toolResponse="ok"), ws, "inproc")
    both(ws, vscode(ws, "Stop", 4, lastAssistantMessage="Hello it says."), "Stop")
    turns = tb_json(ws, "log")["turns"]
    assert [(t["prompt"], t["state"]) for t in turns] == [("say hello", "settled")]
    assert [(s["kind"], s["scope"], s["summary"]) for s in turns[0]["stepList"]] == \
        [("file-write", "host", "replace_string_in_file src/app.py")]
    assert turns[0]["response"] == "Hello it says."
    sessions = record(ws)["sessions"]
    assert list(sessions) == ["claude-code:vs-1"]  # one agent session; the other key is its alias
    assert record(ws)["aliases"] == {"copilot:vs-1": "claude-code:vs-1"}
    assert sum("a second copy of an event already recorded" in line for line in hook_log(ws)) == 4


def test_identical_payloads_with_nothing_to_tell_them_apart_are_two_events(ws):
    """Gemini sends no tool id: the same command run twice is two steps, not a duplicate."""
    base = {"session_id": "g", "cwd": str(ws), "transcript_path": None}
    send("gemini", {**base, "hook_event_name": "BeforeAgent", "prompt": "list twice"}, ws, "inproc")
    for _ in range(2):
        for event in ("BeforeTool", "AfterTool"):
            send("gemini", {**base, "hook_event_name": event, "tool_name": "run_shell_command",
                            "tool_input": {"command": "ls"}, "tool_response": {"output": "x"}},
                 ws, "inproc")
    send("gemini", {**base, "hook_event_name": "AfterAgent", "prompt_response": "twice"}, ws, "inproc")
    steps = tb_json(ws, "log")["turns"][0]["stepList"]
    assert [s["summary"].split(" [")[0] for s in steps] == ["run_shell_command: ls"] * 2


def test_copilot_post_tool_use_failure_and_session_id(ws):
    base = {"sessionId": "cp-7", "cwd": str(ws)}
    send("copilot", {**base, "timestamp": 1, "prompt": "publish"}, ws, "inproc", event="userPromptSubmitted")
    args = '{"command": "npm publish"}'
    send("copilot", {**base, "timestamp": 2, "toolName": "bash", "toolArgs": args}, ws, "inproc",
         event="preToolUse")
    send("copilot", {**base, "timestamp": 3, "toolName": "bash", "toolArgs": args,
                     "error": {"message": "npm ERR! 403 Forbidden", "name": "Error"}},
         ws, "inproc", event="postToolUseFailure")
    send("copilot", {**base, "timestamp": 4}, ws, "inproc", event="agentStop")
    step = tb_json(ws, "log")["turns"][0]["stepList"][0]
    assert step["scope"] == "crossing" and "(failed: npm ERR! 403 Forbidden)" in step["summary"]
    assert "copilot:cp-7" in record(ws)["sessions"]


def test_codex_string_tool_response_is_kept(ws):
    base = {"session_id": "cx", "cwd": str(ws), "transcript_path": None, "model": "gpt-5",
            "turn_id": "t1"}
    send("codex", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "run it"}, ws, "inproc")
    call = {"tool_name": "exec_command", "tool_input": {"cmd": "make"}, "tool_use_id": "c1"}
    send("codex", {**base, "hook_event_name": "PreToolUse", **call}, ws, "inproc")
    send("codex", {**base, "hook_event_name": "PostToolUse", **call,
                   "tool_response": "Process exited with code 0\nOutput:\nbuilt\n"}, ws, "inproc")
    send("codex", {**base, "hook_event_name": "Stop", "last_assistant_message": "Built."}, ws, "inproc")
    wb = Workbench.open(ws, Options(store_path=str(ws / ".turnback")), take_ownership=False)
    try:
        step = wb.state.turns[0].steps[0]
        assert step.kind == "shell" and step.summary.startswith("exec_command: make")
        assert wb.store.objects.get(step.result) == b"Process exited with code 0\nOutput:\nbuilt\n"
    finally:
        wb.close()


def test_the_files_a_bash_command_says_it_changed_are_that_steps(ws):
    a = Hooked(ws)
    a.prompt("rename with sed")
    a.bash("sed -i s/hi/hello/ src/app.py", changes={"src/app.py": "print('hello')\n"},
           changed_files=True)
    a.bash("true")  # changes nothing
    wb = Workbench.open(ws, Options(store_path=str(ws / ".turnback")), take_ownership=False)
    try:
        turn = wb.state.turns[0]
        assert [s.rels for s in turn.steps] == [["src/app.py"], []]
        # captured by the step itself, before any settle sweep
        assert turn.state == "running" and "src/app.py" in turn.files
        assert wb.store.objects.get(turn.files["src/app.py"].after) == b"print('hello')\n"
    finally:
        wb.close()
