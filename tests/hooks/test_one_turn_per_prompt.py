"""One turn per prompt, helpers included (issue 22, item 2): Claude Code's `prompt_id` ties events to
their prompt; a Stop another Stop hook blocked continues the same turn; a helper agent's events are
steps of the turn that launched it, its late edits included, and that turn settles when the last
helper stops."""

from __future__ import annotations

import pytest
from agentkit import Hooked, record, workspace
from hookkit import hook_log, tb, tb_json


@pytest.fixture
def ws(tmp_path):
    return workspace(tmp_path, {"a.txt": "one\n"})


def owner(root) -> None:
    from turnback.remote import client

    client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)


def log_turns(root) -> list[dict]:
    return tb_json(root, "log")["turns"]


@pytest.mark.parametrize("how", ["inproc", "direct", "owner"])
def test_a_blocked_stop_continues_the_same_turn(ws, how):
    if how == "owner":
        owner(ws)
    try:
        blocked_stop(ws, how)
    finally:
        if how == "owner":
            tb(ws, "daemon", "stop", check=False)


def blocked_stop(ws, how):
    a = Hooked(ws, how=how)
    a.prompt("make the tests pass")
    a.write("a.txt", "two\n")
    a.stop("Done, I think.")  # another Stop hook blocks it: the agent goes on
    a.write("b.txt", "fix\n")
    a.stop("Now the tests pass.", stop_hook_active=True)
    turns = log_turns(ws)
    assert [(t["prompt"], t["state"]) for t in turns] == [("make the tests pass", "settled")]
    assert [s["summary"] for s in turns[0]["stepList"]] == ["Write a.txt", "Write b.txt"]
    assert {f["path"] for f in turns[0]["files"]} == {"a.txt", "b.txt"}
    assert turns[0]["response"] == "Done, I think.Now the tests pass."
    assert any("reopened" in line for line in hook_log(ws))
    # the resume point is the end of the whole turn
    entry = next(iter(record(ws)["sessions"]["claude-code:s-1"]["ends"].values()))
    assert entry["uuid"] == a.transcript.last
    tb(ws, "rewind", "--before-prompt", "1", "--yes")
    assert (ws / "a.txt").read_text() == "one\n" and not (ws / "b.txt").exists()


def test_a_continuation_with_only_text(ws):
    a = Hooked(ws)
    a.prompt("explain")
    a.stop("Short answer.")
    a.stop("A longer answer, as the Stop hook asked.", stop_hook_active=True)
    turns = log_turns(ws)
    assert len(turns) == 1 and turns[0]["state"] == "settled"
    assert turns[0]["response"].endswith("as the Stop hook asked.")


def test_a_continuation_after_a_change_between_goes_on_in_a_new_turn(ws):
    a = Hooked(ws)
    a.prompt("tidy")
    a.write("a.txt", "two\n")
    a.stop("Tidied.")
    (ws / "a.txt").write_text("the person's own edit\n")  # between the Stop and the continuation
    a.write("b.txt", "more\n")
    a.stop("More tidied.", stop_hook_active=True)
    turns = log_turns(ws)
    assert [(t["prompt"], t["state"]) for t in turns] == [("tidy", "settled"),
                                                           ("tidy (continued)", "settled")]
    assert any("cannot be reopened" in line for line in hook_log(ws))


def test_a_helper_is_a_step_of_the_turn_that_launched_it_and_holds_it_open(ws):
    a = Hooked(ws)
    a.prompt("refactor with a helper")
    a.send("PreToolUse", tool_name="Agent", tool_use_id="toolu_ag",
           tool_input={"description": "rename things", "subagent_type": "general-purpose",
                       "run_in_background": True})
    a.send("SubagentStart", agent_id="ag-1", agent_type="general-purpose")
    a.send("PostToolUse", tool_name="Agent", tool_use_id="toolu_ag",
           tool_input={"description": "rename things"}, tool_response={"status": "async_launched"})
    running = [{"id": "ag-1", "type": "subagent", "status": "running", "description": "rename things"}]
    # as the real Claude Code does (fixtures/agents/real/claude-code/background-helper.json): the
    # helper's tool call is in flight when the main Stop comes, and ends after it
    inp = {"command": "sleep 1; echo late > late.txt"}
    a.send("PreToolUse", tool_name="Bash", tool_input=inp, tool_use_id="toolu_h1", agent_id="ag-1",
           agent_type="general-purpose")
    a.stop("The helper is working on it.", background_tasks=running)
    assert log_turns(ws)[0]["state"] == "running"  # its helper still runs
    assert any("settled when its helpers are done" in line for line in hook_log(ws))
    (ws / "late.txt").write_text("late\n")
    a.send("PostToolUse", tool_name="Bash", tool_input=inp, tool_use_id="toolu_h1", agent_id="ag-1",
           agent_type="general-purpose", tool_response={"stdout": ""})
    a.write("helper.txt", "by the helper\n", agent_id="ag-1")  # after the main Stop
    a.send("SubagentStop", agent_id="ag-1", agent_type="general-purpose", stop_hook_active=False,
           agent_transcript_path=str(ws.parent / "missing.jsonl"), last_assistant_message="renamed",
           background_tasks=running)  # a SubagentStop still lists its own task as running
    turn = log_turns(ws)[0]
    assert turn["state"] == "settled"
    helper_steps = [s["summary"] for s in turn["stepList"] if s["summary"].startswith("[helper")]
    assert helper_steps == ["[helper general-purpose ag-1] Bash: sleep 1; echo late > late.txt "
                            "[scope host: 'sleep' -> none (default); 'echo' writes late.txt in the "
                            "workspace (the sweep captures it)]",
                            "[helper general-purpose ag-1] Write helper.txt"]
    assert "late.txt" in {f["path"] for f in turn["files"]}
    assert "helper.txt" in {f["path"] for f in turn["files"]}
    tb(ws, "rewind", "--before-prompt", "1", "--yes")
    assert not (ws / "helper.txt").exists() and not (ws / "late.txt").exists()


def test_a_prompt_whose_event_never_came_still_gets_its_turn(ws):
    a = Hooked(ws)
    a.prompt("first")
    a.stop("ok")
    a.prompt_id = "p-second"
    a.transcript.prompt("second, its hook timed out", "p-second")
    a.write("b.txt", "b\n")
    a.stop("ok again")
    turns = log_turns(ws)
    assert [(t["prompt"], t["state"]) for t in turns] == [
        ("first", "settled"), ("second, its hook timed out", "settled")]
    assert turns[1]["stepList"][0]["summary"] == "Write b.txt"


def test_a_new_prompt_event_ends_a_turn_left_waiting_for_helpers(ws):
    a = Hooked(ws)
    a.prompt("launch")
    a.send("SubagentStart", agent_id="ag-2", agent_type="Explore")
    a.stop("launched")
    a.prompt("next")
    turns = log_turns(ws)
    assert [(t["prompt"], t["state"]) for t in turns] == [("launch", "settled"), ("next", "running")]
    assert any("helpers were still running when the next prompt came" in line for line in hook_log(ws))
