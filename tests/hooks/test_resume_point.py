"""An exact resume point (issue 22, item 3): the transcript record that ended turn k is found by its
prompt and the answer the Stop carries; waited for briefly when it reaches the transcript after the
hook, resolved later (the next prompt, a rewind) when it comes later still; never a record before the
prompt, never one of another branch, never a tool call the turn had not finished."""

from __future__ import annotations

import json

import pytest
from agentkit import Hooked, Transcript, record
from hookkit import tb, tb_json

from turnback.store import agenttranscript as at


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    return root


def recs(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- the rules, on transcripts of Claude Code's shape -------------------------------------------------
def test_the_end_is_the_last_record_of_the_turn_carrying_its_answer(tmp_path):
    t = Transcript(tmp_path / "t.jsonl", "s")
    t.prompt("first", "p1")
    t.says("Done.")  # turn 1 ends with the same words turn 2 will
    p2 = t.prompt("second", "p2")
    t.thinks()
    t.calls("toolu_1", "Bash", "p2")
    answer = t.says("Done.")
    rs = recs(t.path)
    prompt = at.find_prompt(rs, prompt_id="p2")
    assert prompt["uuid"] == p2
    assert at.turn_end(rs, prompt, "Done.")["uuid"] == answer


def test_never_a_record_before_the_prompt_nor_an_unfinished_tool_call(tmp_path):
    t = Transcript(tmp_path / "t.jsonl", "s")
    t.prompt("first", "p1")
    t.says("All done.")
    t.prompt("second", "p2")
    t.calls("toolu_1", "Edit", "p2")  # the last record written so far asks for a tool
    rs = recs(t.path)
    prompt = at.find_prompt(rs, prompt_id="p2")
    assert at.turn_end(rs, prompt, "All done.") is None  # turn 1's words are not turn 2's end
    assert at.turn_end(rs, prompt) is None  # nor is the tool call, with no answer to match
    t.says("Narration before a tool")  # an earlier message of the turn
    assert at.turn_end(recs(t.path), prompt, "The real answer.") is None


def test_never_a_record_of_another_branch(tmp_path):
    t = Transcript(tmp_path / "t.jsonl", "s")
    t.prompt("first", "p1")
    end1 = t.says("One.")
    t.prompt("try it", "p2")
    t.says("Tried.")  # the branch Claude Code's own /rewind abandons
    p3 = t.prompt("try it", "p3", parent=end1)  # the same words, typed again after /rewind
    t.thinks()
    t.calls("toolu_9", "Write", "p3")
    rs = recs(t.path)
    prompt = at.find_prompt(rs, prompt_id="p3")
    assert prompt["uuid"] == p3
    assert at.turn_end(rs, prompt, "Tried.") is None  # that answer is the other branch's
    end3 = t.says("Tried.")
    assert at.turn_end(recs(t.path), prompt, "Tried.")["uuid"] == end3
    # found by its text (an older Claude Code writes no promptId): still the newest branch
    assert at.find_prompt(rs, text="try it")["uuid"] == p3


def test_a_long_answer_split_over_records_and_kept_clipped(tmp_path):
    t = Transcript(tmp_path / "t.jsonl", "s")
    t.prompt("write a lot", "p1")
    t.says("A" * 3000)
    last = t.says("and the last block.")
    answer = "A" * 3000 + "and the last block."
    prompt = at.find_prompt(recs(t.path), prompt_id="p1")
    assert at.turn_end(recs(t.path), prompt, answer)["uuid"] == last
    assert at.turn_end(recs(t.path), prompt, answer[-500:])["uuid"] == last


# -- through the Stop hook ------------------------------------------------------------------------------
def test_the_record_reaching_the_transcript_while_the_hook_waits(ws, monkeypatch):
    a = Hooked(ws)
    a.prompt("do it")
    a.write("f.txt", "x\n")
    looks = []

    def gate(seconds):  # the hook is waiting: now Claude Code writes the turn's last record
        looks.append(seconds)
        if len(looks) == 1:
            a.transcript.says("It is done.")

    monkeypatch.setattr(at, "_pause", gate)
    a.stop("It is done.", write_record=False)
    assert looks, "the hook waited for the record"
    entry = next(iter(record(ws)["sessions"]["claude-code:s-1"]["ends"].values()))
    assert entry["uuid"] == a.transcript.last and entry["pending"] is False


def test_the_record_reaching_the_transcript_after_the_hook_gave_up(ws):
    a = Hooked(ws, how="direct")  # real hook processes
    a.prompt("first")
    a.write("f.txt", "1\n")
    a.stop("First done.")
    a.prompt("second")
    a.write("f.txt", "2\n")
    a.stop("Second done.", write_record=False)  # the hook process gives up and exits; then:
    end2 = a.transcript.says("Second done.")
    ends = record(ws)["sessions"]["claude-code:s-1"]["ends"]
    second = next(e for e in ends.values() if e["n"] == 2)
    assert second["uuid"] is None and second["pending"] is True
    tb(ws, "turn", "begin", "--prompt", "from an editor")  # no prompt hook to look again
    tb(ws, "turn", "settle")
    result = tb_json(ws, "rewind", "--after-response", "2", "--yes")["commit"]
    assert result["agentResume"]["command"] == f"claude --resume s-1 --resume-session-at {end2}"
    again = record(ws)["sessions"]["claude-code:s-1"]["ends"]
    assert next(e for e in again.values() if e["n"] == 2)["uuid"] == end2  # and kept


def test_the_next_prompt_resolves_a_pending_end(ws, monkeypatch):
    monkeypatch.setattr(at, "RESUME_WAIT", 0.0)
    a = Hooked(ws)
    a.prompt("first")
    a.write("f.txt", "1\n")
    a.stop("First done.", write_record=False)
    end1 = a.transcript.says("First done.")  # written after the hook
    a.prompt("second")
    ends = record(ws)["sessions"]["claude-code:s-1"]["ends"]
    assert next(e for e in ends.values() if e["n"] == 1)["uuid"] == end1


def test_a_failed_turn_waits_for_nothing(ws, monkeypatch):
    looks = []
    monkeypatch.setattr(at, "_pause", looks.append)
    a = Hooked(ws)
    a.prompt("go")
    a.send("StopFailure", error="server_error", last_assistant_message="")
    assert looks == []
