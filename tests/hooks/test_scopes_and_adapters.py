"""The shell scope table (shipped defaults and overrides) and each agent's payload reading."""

from __future__ import annotations

import pytest

from turnback.hooks import agents, config
from turnback.hooks.event import BadPayload
from turnback.hooks.tools import classify, patch_paths


@pytest.mark.parametrize("command,scope", [
    ("ls -la", "none"), ("cat a.txt | grep x", "none"), ("rg foo src/", "none"),
    ("git status --short", "none"), ("git diff HEAD~1", "none"), ("pytest -q tests", "none"),
    ("python -m pytest -x", "none"), ("npm test", "none"),
    ("git push origin main", "crossing"), ("npm publish", "crossing"),
    ("curl -X POST https://api.example.com", "crossing"), ("gh pr create --fill", "crossing"),
    ("sed -i s/a/b/ f", "unknown"), ("make", "unknown"), ("git pushy", "unknown"),
    ("cat a > b", "host"), ("cat a > /tmp/b", "unknown"), ("cat a > ../b", "unknown"),
    ("printf '## 1.1\\n' > CHANGELOG.md", "host"), ("echo x >> ~/notes", "unknown"),
    ("cat a | tee b.txt", "host"), ("cat a | tee /etc/b", "unknown"), ("echo x > $OUT", "unknown"),
    ("python gen.py > out.txt", "unknown"),  # no rule for python: what else it did is unknown
    ("ls > /dev/null 2>&1", "none"),
    ("git status && git push", "crossing"), ("FOO=1 sudo ls", "none"), ("/bin/ls", "none"),
    ("", "unknown"), ("echo 'unterminated", "none"),
])
def test_default_scopes(tmp_path, command, scope):
    assert config.load(tmp_path).shell_scope(command)[0] == scope


def test_the_files_a_command_writes_by_redirection(tmp_path):
    c = config.load(tmp_path)
    assert c.shell_writes("printf '## 1.1\\n' > CHANGELOG.md") == ["CHANGELOG.md"]
    assert c.shell_writes('grep x a > "out file.txt" && cat b | tee -a c.txt') == \
        ["out file.txt", "c.txt"]
    assert c.shell_writes("echo x > /tmp/x") == []  # not a workspace file
    assert c.shell_writes("ls") == [] and c.shell_writes("git push") == []


def test_overrides_and_dropping_defaults(tmp_path):
    (tmp_path / "turnback.toml").write_text('[shell]\nhost = ["make fmt"]\ncrossing = ["./deploy.sh"]\n'
                                            'none = ["git push --dry-run"]\n')
    (tmp_path / ".turnback").mkdir()
    (tmp_path / ".turnback" / "config.toml").write_text('[shell]\nnone = ["make"]\n')
    c = config.load(tmp_path)
    assert c.shell_scope("make fmt")[0] == "host"  # the longer rule wins
    assert c.shell_scope("make all")[0] == "none"
    assert c.shell_scope("./deploy.sh prod")[0] == "crossing"
    assert c.shell_scope("git push --dry-run origin")[0] == "none"
    assert c.shell_scope("git push origin")[0] == "crossing"
    assert len(c.files) == 2
    (tmp_path / "turnback.toml").write_text("[shell]\ndefaults = false\n")
    assert config.load(tmp_path).shell_scope("ls")[0] == "unknown"


def test_claude_and_vscode_payloads():
    ev = agents.claude_code({"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse",
                             "tool_name": "Edit", "tool_input": {"file_path": "/w/a"},
                             "tool_use_id": "t", "transcript_path": "/t.jsonl"})
    assert (ev.kind, ev.tool, ev.tool_key(), ev.transcript) == ("pre-tool", "Edit", "t", "/t.jsonl")
    vs = agents.claude_code({"sessionId": "s", "cwd": "/w", "hookEventName": "PostToolUse",
                             "toolName": "replace_string_in_file",
                             "toolInput": {"filePath": "/w/b.py"}})
    assert vs.kind == "post-tool" and classify(vs.tool, vs.tool_input, "/w").paths == ["/w/b.py"]
    assert agents.claude_code({"session_id": "s", "cwd": "/w",
                               "hook_event_name": "PostToolUseFailure"}).kind == "tool-failed"
    with pytest.raises(BadPayload):
        agents.claude_code({"session_id": "s", "hook_event_name": "Stop"})


def test_gemini_and_copilot_payloads():
    g = agents.gemini({"session_id": "s", "cwd": "/w", "hook_event_name": "AfterTool",
                       "tool_name": "run_shell_command", "tool_input": {"command": "x"},
                       "tool_response": {"error": "boom"}})
    assert g.kind == "tool-failed" and g.error == "boom"
    pre = agents.gemini({"session_id": "s", "cwd": "/w", "hook_event_name": "BeforeTool",
                         "tool_name": "run_shell_command", "tool_input": {"command": "x"}})
    assert pre.tool_key() == g.tool_key()  # paired without a tool id
    c = agents.copilot({"cwd": "/w", "hook_event_name": "postToolUse", "toolName": "bash",
                        "toolArgs": '{"command": "ls"}',
                        "toolResult": {"resultType": "denied", "textResultForLlm": "no"}})
    assert c.kind == "tool-failed" and c.tool_input == {"command": "ls"} and c.session == "cwd:/w"
    with pytest.raises(BadPayload):
        agents.copilot({"cwd": "/w"})


def test_gemini_prompt_and_answer_as_the_real_cli_sends_them():
    """Gemini CLI 0.61, measured: headless, a SessionStart hook's context is put in front of the
    prompt text, and the answer joins every model reply's text (a tool-only reply leaves a blank
    line in front). The turn keeps what the person typed and what the model said."""
    notice = "<hook_context>turnback changed this conversation: turn 3 and later are gone</hook_context>"
    ev = agents.gemini({"session_id": "s", "cwd": "/w", "hook_event_name": "BeforeAgent",
                        "prompt": f"{notice}\n\nT5 carry on"})
    assert ev.prompt == "T5 carry on"
    for prompt in ("<hook_context>only a context</hook_context>", "say <hook_context> please",
                   "plain prompt"):
        ev = agents.gemini({"session_id": "s", "cwd": "/w", "hook_event_name": "BeforeAgent",
                            "prompt": prompt})
        assert ev.prompt == prompt
    ev = agents.gemini({"session_id": "s", "cwd": "/w", "hook_event_name": "AfterAgent",
                        "prompt": "T1", "prompt_response": " \n \nT1 done"})
    assert ev.kind == "stop" and ev.message == "T1 done"


def test_opencode_payloads_from_the_plugin():
    """What hooks/opencodeplugin.py sends, newer fields and events included: Claude Code's names;
    file.edited rides on the session that ran last; an event this turnback does not know is
    'other' (logged, nothing recorded), never an error."""
    post = agents.opencode({"hook_event_name": "PostToolUse", "session_id": "ses_1", "cwd": "/w",
                            "tool_name": "write", "tool_use_id": "call_1",
                            "tool_input": {"filePath": "/w/a.txt", "content": "x"},
                            "tool_response": {"title": "a.txt", "output": "ok"},
                            "a_field_from_the_future": 1})
    assert (post.agent, post.kind, post.tool_id) == ("opencode", "post-tool", "call_1")
    assert classify(post.tool, post.tool_input, "/w", "opencode").paths == ["/w/a.txt"]
    edited = agents.opencode({"hook_event_name": "FileEdited", "session_id": "ses_1", "cwd": "/w",
                              "file_path": "/w/a.txt"})
    assert edited.kind == "file-edited" and edited.tool_input == {"file_path": "/w/a.txt"}
    stop = agents.opencode({"hook_event_name": "Stop", "session_id": "ses_1", "cwd": "/w",
                            "last_assistant_message": "done"})
    assert stop.kind == "stop" and stop.message == "done"
    for name in ("MessageRemoved", "SessionCompacted"):
        assert agents.opencode({"hook_event_name": name, "session_id": "s", "cwd": "/w"}).kind == "other"
    with pytest.raises(BadPayload):
        agents.opencode({"hook_event_name": "Stop", "cwd": "/w"})


def test_apply_patch_paths():
    body = ("*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b.py\n*** Move to: c.py\n"
            "*** Delete File: d.py\n*** End Patch")
    assert patch_paths({"command": body}) == (["a.py", "b.py", "c.py", "d.py"], "file-move")
    assert patch_paths({"patch": "*** Delete File: d.py\n"}) == (["d.py"], "file-delete")
    use = classify("apply_patch", {"input": "*** Add File: src/n.py\n"}, "/w")
    assert use.group == "file" and use.paths == ["/w/src/n.py"]


@pytest.mark.parametrize("tool,group,scope", [
    ("Write", "file", "host"), ("Read", "read", "none"), ("WebFetch", "web", "none"),
    ("WebSearch", "web", "none"), ("mcp__github__create_issue", "mcp", "unknown"),
    ("SomethingNew", "other", "unknown"), ("Bash", "shell", None),
])
def test_tool_groups(tool, group, scope):
    use = classify(tool, {"file_path": "/w/a", "command": "ls"}, "/w")
    assert (use.group, use.scope) == (group, scope)
