"""An exact resume point (issue 22, item 3): the transcript record that ended turn k is found by its
prompt and the answer the Stop carries; waited for briefly when it reaches the transcript after the
hook, resolved later (the next prompt, a rewind) when it comes later still; never a record before the
prompt, never one of another branch, never a tool call the turn had not finished."""

from __future__ import annotations

import json

import pytest
from agentkit import Hooked, Transcript, record, workspace
from hookkit import tb, tb_json

from turnback.agents import agenttranscript as at


@pytest.fixture
def ws(tmp_path):
    return workspace(tmp_path)


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


def test_an_earlier_turn_ends_where_it_ended_not_in_a_later_turn(tmp_path):
    t = Transcript(tmp_path / "t.jsonl", "s")
    p1 = t.prompt("first", "p1")
    t.calls("toolu_1", "Write", "p1")
    end1 = t.says("First done.")
    t._write({"type": "system", "subtype": "stop_hook_summary"})  # what Claude Code writes next
    t.prompt("second", "p2")
    t.calls("toolu_2", "Bash", "p2")
    t.says("Second done.")
    rs = recs(t.path)
    prompt = at.find_prompt(rs, prompt_id="p1")
    assert prompt["uuid"] == p1
    assert at.turn_end(rs, prompt, "First done.")["uuid"] == end1  # resolved late, turn 2 written
    assert [r["uuid"] for r in at.turn_records(rs, prompt)][-2:] == [end1, t.last_of("system")]


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


@pytest.mark.parametrize("how", ["direct", "owner"])
def test_the_record_reaching_the_transcript_after_the_hook_gave_up(ws, how):
    if how == "owner":
        from turnback.remote import client

        client.ensure_owner(str(ws), str(ws / ".turnback"), timeout=60)
    a = Hooked(ws, how=how)  # real hook processes
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
    if how == "owner":
        tb(ws, "daemon", "stop", check=False)


def test_the_next_prompt_resolves_a_pending_end(ws, monkeypatch):
    (ws / "turnback.toml").write_text("[hooks]\nresume_wait = 0\n")
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


def test_the_next_session_start_resolves_the_last_runs_end(ws):
    """`claude -p` runs one turn per process: the last record is written as it exits, after its
    Stop; the next run's SessionStart finds it."""
    (ws / "turnback.toml").write_text("[hooks]\nresume_wait = 0\n")
    a = Hooked(ws)
    a.send("SessionStart", source="startup")
    a.prompt("one run")
    a.stop("Ran.", write_record=False)
    a.send("SessionEnd", reason="other")
    end = a.transcript.says("Ran.")  # written at the process's exit
    a.send("SessionStart", source="resume")
    entry = next(iter(record(ws)["sessions"]["claude-code:s-1"]["ends"].values()))
    assert entry["uuid"] == end and entry["pending"] is False


def test_copilot_answer_is_the_turns_own_or_none():
    """Copilot writes its events.jsonl behind its hooks: at agentStop the file may still end at the
    turn before, whose answer must not become this turn's."""
    def msg(kind, content):
        return {"type": kind, "data": {"content": content}}

    earlier = [msg("user.message", "one"), msg("assistant.message", "done one")]
    now = earlier + [msg("user.message", "two"), msg("assistant.message", ""),
                     msg("assistant.message", "done two"), {"type": "assistant.turn_end"}]
    assert at.copilot_answer(now, at.digest("two")) == "done two"
    assert at.copilot_answer(earlier, at.digest("two")) is None
    assert at.copilot_answer(earlier + [msg("user.message", "two")], at.digest("two")) is None
    assert at.copilot_answer([], at.digest("two")) is None
