"""Bad input around turns (issue 22, "Bad input"): events duplicated or out of order, two agents at once in
one workspace, a transcript missing, torn or still being written, a `cwd` that moved: logged, recorded
as well as they can be, never a turn stuck open, never a hook exit other than 0."""

from __future__ import annotations

import pytest
from agentkit import Hooked, Transcript, backdate, record, workspace
from hookkit import hook_log, tb, tb_json

from turnback.agents.agentrecord import QUIET_SECONDS


@pytest.fixture
def ws(tmp_path):
    return workspace(tmp_path, {"a.txt": "one\n"})


def test_a_duplicated_prompt_and_tool_end_are_recorded_once(ws):
    a = Hooked(ws)
    assert a.prompt("once")[0] == 0
    assert a.send("UserPromptSubmit", prompt="once")[0] == 0  # the same event again
    tid = a.write("a.txt", "two\n")
    assert a.send("PostToolUse", tool_name="Write", tool_input={"file_path": str(ws / "a.txt"),
                                                                "content": "two\n"},
                  tool_use_id=tid, tool_response={"type": "create", "filePath": str(ws / "a.txt")},
                  duration_ms=3)[0] == 0
    a.stop("ok")
    turns = tb_json(ws, "log")["turns"]
    assert [(t["prompt"], t["state"]) for t in turns] == [("once", "settled")]
    assert len(turns[0]["stepList"]) == 1
    assert sum("a second copy" in line for line in hook_log(ws)) == 2


def test_events_out_of_order_end_in_one_clean_turn(ws):
    a = Hooked(ws)
    a.prompt("out of order")
    inp = {"file_path": str(ws / "b.txt"), "content": "b\n"}
    (ws / "b.txt").write_text("b\n")
    a.send("PostToolUse", tool_name="Write", tool_input=inp, tool_use_id="late", tool_response={})
    a.send("PreToolUse", tool_name="Write", tool_input=inp, tool_use_id="late")  # after its Post
    a.stop("done")
    turn = tb_json(ws, "log")["turns"][0]
    assert turn["state"] == "settled"
    assert turn["stepList"][0]["summary"] == "Write b.txt"
    assert record(ws)["sessions"]["claude-code:s-1"]["turn"] is None


def test_two_agents_at_once_share_the_turn_and_neither_is_left_open(ws):
    a, b = Hooked(ws, "A"), Hooked(ws, "B")
    a.prompt("A works")
    b.send("SessionStart", source="startup")
    assert b.prompt("B works too")[0] == 0  # A is mid-turn: B's prompt cannot be a turn of its own
    assert any("no turn of its own" in line for line in hook_log(ws))
    assert not any("not recorded" in line for line in hook_log(ws))
    b.write("b.txt", "from B\n")
    a.write("a.txt", "from A\n")
    a.stop("A done")
    turns = tb_json(ws, "log")["turns"]
    assert [(t["prompt"], t["state"]) for t in turns] == [("A works", "settled")]
    assert [s["summary"] for s in turns[0]["stepList"]] == ["[claude-code session B] Write b.txt",
                                                            "Write a.txt"]
    b.stop("B done")  # nothing of B's to settle: logged
    b.prompt("B again")
    assert tb_json(ws, "log")["turns"][-1]["prompt"] == "B again"


def test_a_missing_torn_or_growing_transcript(ws):
    a = Hooked(ws, transcript=ws.parent / "nowhere" / "t.jsonl")  # never written: missing
    a.prompt_id = "p1"
    assert a.send("UserPromptSubmit", prompt="no transcript")[0] == 0
    assert a.stop("fine", write_record=False)[0] == 0
    b = a
    b.transcript = Transcript(ws.parent / "t2.jsonl", "s-1")  # the same session, a real transcript
    b.prompt("torn")
    with open(b.transcript.path, "a") as f:
        f.write('{"type": "assistant", "uuid": "half", "mess')  # being written
    assert b.stop("answered", write_record=False)[0] == 0
    turns = tb_json(ws, "log")["turns"]
    assert [t["state"] for t in turns] == ["settled", "settled"]
    assert turns[1]["response"] == "answered"
    with open(b.transcript.path, "a") as f:
        f.write('sage": {"content": [{"type": "text", "text": "answered"}]}, "parentUuid": "%s"}\n'
                % b.transcript.last)
    result = tb_json(ws, "rewind", "--after-response", "1", "--yes")
    assert result["commit"]["status"] == "committed"


def test_a_cwd_that_moved_inside_the_workspace(ws):
    (ws / "sub").mkdir()
    a = Hooked(ws)
    a.prompt("cd sub")
    a.root = ws / "sub"  # the agent's shell moved; payloads now say so
    assert a.send("PreToolUse", tool_name="Write", tool_input={"file_path": "x.txt"},
                  tool_use_id="t1")[0] == 0
    (ws / "sub" / "x.txt").write_text("x\n")
    a.send("PostToolUse", tool_name="Write", tool_input={"file_path": "x.txt"}, tool_use_id="t1",
           tool_response={})
    a.stop("done")
    turn = tb_json(ws, "log")["turns"][0]
    assert turn["stepList"][0]["summary"] == "Write x.txt"
    assert {f["path"] for f in turn["files"]} == {"sub/x.txt"}


def test_an_agent_that_died_mid_turn_does_not_block_the_next(ws):
    a = Hooked(ws, "dead")
    a.prompt("dies")
    a.write("a.txt", "half\n", finish=False)
    backdate(ws, "claude-code:dead", QUIET_SECONDS + 5)
    b = Hooked(ws, "alive")
    b.send("SessionStart", source="startup")
    b.prompt("lives")
    turns = tb_json(ws, "log")["turns"]
    assert turns[-1]["prompt"] == "lives" and turns[-1]["state"] == "running"
    assert any("never stopped" in line for line in hook_log(ws))
    tb(ws, "turn", "settle")
