"""The agent is told where it listens (issue 22, item 4): the notice of a rewind goes out on the next
prompt (and on SessionStart after a plain resume) and counts as delivered only on an event whose
context the agent passes on; after a Redo the record follows the live state (turn numbers, resume
points); after a fork the agent goes on in the branch."""

from __future__ import annotations

import json

import pytest
from agentkit import Hooked, record, send, workspace
from hookkit import hook_log, tb, tb_json


@pytest.fixture
def ws(tmp_path):
    return workspace(tmp_path, {"a.txt": "zero\n"})


def two_turns(root, how="inproc") -> Hooked:
    a = Hooked(root, how=how)
    a.send("SessionStart", source="startup")
    a.prompt("first")
    a.write("a.txt", "one\n")
    a.stop("First.")
    a.prompt("second")
    a.write("b.txt", "two\n")
    a.stop("Second.")
    return a


def context(out: str) -> str | None:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else None


@pytest.mark.parametrize("how", ["inproc", "owner"])
def test_told_at_session_start_and_again_with_the_next_prompt(ws, how):
    if how == "owner":
        from turnback.remote import client

        client.ensure_owner(str(ws), str(ws / ".turnback"), timeout=60)
    try:
        a = two_turns(ws, how=how)
        tb(ws, "rewind", "--after-response", "1", "--yes")
        # `claude --resume S --resume-session-at U`: Claude Code drops this context
        first = context(a.send("SessionStart", source="resume")[1])
        assert first and "end of turn 1" in first and "b.txt" in first
        assert record(ws)["sessions"]["claude-code:s-1"]["notice"] is not None  # not yet told
        second = context(a.prompt("go on")[1])
        assert second == first
        assert record(ws)["sessions"]["claude-code:s-1"]["notice"] is None
        a.stop("ok")
        assert a.prompt("and on")[1] == ""  # told once
        assert any("said again with the next prompt" in line for line in hook_log(ws))
    finally:
        if how == "owner":
            tb(ws, "daemon", "stop", check=False)


def test_codex_reads_session_start_context(ws):
    base = {"session_id": "cx", "cwd": str(ws), "transcript_path": None, "model": "gpt-5"}
    for event, extra in (("UserPromptSubmit", {"prompt": "one", "turn_id": "t1"}),
                         ("Stop", {"last_assistant_message": "1", "turn_id": "t1"}),
                         ("UserPromptSubmit", {"prompt": "two", "turn_id": "t2"}),
                         ("Stop", {"last_assistant_message": "2", "turn_id": "t2"})):
        send("codex", {**base, "hook_event_name": event, **extra}, ws, "inproc")
    tb(ws, "rewind", "--after-response", "1", "--yes")
    out = send("codex", {**base, "hook_event_name": "SessionStart", "source": "resume"}, ws, "inproc")[1]
    assert "end of turn 1" in context(out)
    out = send("codex", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "3",
                         "turn_id": "t3"}, ws, "inproc")[1]
    assert out == ""  # Codex passes SessionStart context on: already told


def test_a_redo_restores_turn_numbers_and_resume_points(ws):
    a = two_turns(ws)
    ends = record(ws)["sessions"]["claude-code:s-1"]["ends"]
    end2 = next(e["uuid"] for e in ends.values() if e["n"] == 2)
    tb(ws, "rewind", "--after-response", "1", "--yes")
    a.prompt("another second")
    a.write("c.txt", "other\n")
    a.stop("Another.")
    other2 = next(e["uuid"] for e in record(ws)["sessions"]["claude-code:s-1"]["ends"].values()
                  if e["n"] == 2 and e["uuid"] != end2)
    head = next(g["headSeq"] for g in tb_json(ws, "redo")["groups"]
                if g["lastPrompt"] == "second")
    result = tb_json(ws, "redo", "--head", str(head), "--yes")["commit"]
    assert result["status"] == "committed"
    # the resume point of the turn the Redo brought back, not of the line it left
    assert result["agentResume"]["uuid"] == end2 != other2
    assert tb_json(ws, "info")["agent"]["resume"]["uuid"] == end2
    told = context(a.prompt("after the redo")[1])
    assert "Brought back (Redo): turn 2 ('second')" in told
    assert "Undone: turn 2 ('another second')" in told
    s = record(ws)["sessions"]["claude-code:s-1"]
    assert [k.split("@")[0] for k in s["line"]] == ["1", "2", "3"]


@pytest.mark.parametrize("how", ["inproc", "direct"])
def test_after_a_fork_the_agent_goes_on_in_the_branch(ws, how):
    a = two_turns(ws, how=how)
    parent = tb_json(ws, "info")["sessionId"]
    forked = tb_json(ws, "fork", "--turn", "1", "--yes")["confirm"]
    assert forked["status"] == "forked"
    branch = forked["branch"]["sessionId"]
    assert forked["agentResume"]["turn"] == 1 and forked["agentResume"]["command"]
    told = context(a.prompt("in the branch")[1])
    assert "forked this conversation into a new branch" in told and "end of turn 1" in told
    info = tb_json(ws, "info")
    assert info["sessionId"] == branch and info["parentId"] == parent
    assert [t["prompt"] for t in tb_json(ws, "log")["turns"]] == ["first", "in the branch"]
    assert record(ws)["sessions"]["claude-code:s-1"]["turnback"] == branch


def test_copilot_is_told_with_its_next_prompt(ws):
    """Copilot CLI (1.0.102) puts a prompt hook's top-level additionalContext before the model."""
    base = {"sessionId": "cp", "cwd": str(ws), "timestamp": 1}
    for i, (event, extra) in enumerate((("userPromptSubmitted", {"prompt": "one"}), ("agentStop", {}),
                                        ("userPromptSubmitted", {"prompt": "two"}), ("agentStop", {}))):
        send("copilot", {**base, "timestamp": i, **extra}, ws, "inproc", event=event)
    tb(ws, "rewind", "--after-response", "1", "--yes")
    code, out, _ = send("copilot", {**base, "timestamp": 9, "prompt": "three"}, ws, "inproc",
                        event="userPromptSubmitted")
    assert code == 0
    said = json.loads(out)["additionalContext"]
    assert "end of turn 1" in said and said == context(out)
    assert any("told the agent about the change" in line for line in hook_log(ws))
