"""Every turn an agent's hooks begin ends cleanly (issue 22, item 1): a StopFailure, an interrupt, a
SessionEnd or the next prompt settles it; a rewind, Redo or fork that finds one idle settles it first
and says so; only a turn the agent is really still working on refuses, naming what it waits for;
stray events open no turn."""

from __future__ import annotations

import fcntl
import os

import pytest
from agentkit import Hooked, backdate, record, workspace
from hookkit import hook_log, tb, tb_json, workspace_files

from turnback.agents.agentrecord import QUIET_SECONDS


@pytest.fixture
def ws(tmp_path):
    return workspace(tmp_path, {"a.txt": "one\n"})


def turns(root) -> list[tuple[str, str]]:
    return [(t["prompt"], t["state"]) for t in tb_json(root, "log")["turns"]]


def one_settled_turn(root) -> Hooked:
    a = Hooked(root)
    a.send("SessionStart", source="startup")
    a.prompt("first")
    a.write("a.txt", "two\n")
    a.stop("done")
    return a


def test_a_stop_failure_ends_the_turn_and_a_rewind_works_at_once(ws):
    a = one_settled_turn(ws)
    a.prompt("second")
    a.write("b.txt", "new\n")
    a.transcript.says("Let me also")
    code, out, _ = a.send("StopFailure", error="rate_limit", error_details="429 Too Many Requests",
                          last_assistant_message="Let me also")
    assert (code, out) == (0, "")
    assert turns(ws) == [("first", "settled"), ("second", "cancelled")]
    assert tb_json(ws, "log")["turns"][1]["response"] == "Let me also"
    assert any("ended on an API error: rate_limit: 429" in line for line in hook_log(ws))
    commit = tb_json(ws, "rewind", "--after-response", "1", "--yes")["commit"]
    assert commit["status"] == "committed"
    assert not (ws / "b.txt").exists() and (ws / "a.txt").read_text() == "two\n"


def test_an_idle_turn_is_settled_first_by_a_rewind_which_says_so(ws):
    a = one_settled_turn(ws)
    a.prompt("interrupted one")
    a.write("b.txt", "half\n")
    a.write("c.txt", "never\n", finish=False)  # interrupted: Claude Code sends no Stop
    backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)
    out = tb(ws, "rewind", "--after-response", "1").stdout
    assert out.startswith("First: Turn 2 was still open (claude-code session s-1 sent nothing for")
    assert "closed as cancelled first, with its sweep" in out
    plan = tb_json(ws, "rewind", "--after-response", "1")["candidate"]
    assert "settledFirst" not in plan  # settled by the first prepare, once
    log = tb_json(ws, "log")["turns"][1]
    assert log["state"] == "cancelled"
    # the call that never finished is a step of unknown scope, and a gap of its turn
    assert "never finished" in log["stepList"][-1]["summary"]
    assert any(g["reason"] == "step-scope-unknown" for g in log["gaps"])
    assert record(ws)["sessions"]["claude-code:s-1"]["turn"] is None
    assert tb_json(ws, "rewind", "--after-response", "1", "--yes")["commit"]["status"] == "committed"
    assert sorted(workspace_files(ws)) == ["a.txt"]


def test_the_candidate_carries_settled_first(ws):
    a = one_settled_turn(ws)
    a.prompt("quiet one")
    backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)
    candidate = tb_json(ws, "rewind", "--before-prompt", "2")["candidate"]
    first = candidate["settledFirst"]
    assert (first["turn"], first["status"], first["agent"], first["agentSessionId"]) == \
        (2, "cancelled", "claude-code", "s-1")
    assert first["silentSeconds"] >= QUIET_SECONDS and "no Stop ever came" in first["why"]
    assert candidate["summary"].startswith(first["text"])


def test_a_turn_the_agent_is_working_on_refuses_naming_what_it_waits_for(ws):
    a = one_settled_turn(ws)
    a.prompt("long test run")
    a.bash("pytest -q", finish=False)  # the tool is running now
    proc = tb(ws, "rewind", "--after-response", "1", "--json", check=False)
    assert proc.returncode != 0
    assert "turn 2 is still running: claude-code session s-1 is still working on it" in proc.stderr
    assert "the tool call Bash: pytest -q" in proc.stderr
    assert turns(ws)[-1] == ("long test run", "running")
    # the answer being written counts too: no tool in flight, but an event a moment ago
    a.send("PostToolUse", tool_name="Bash", tool_input={"command": "pytest -q"},
           tool_use_id="toolu_02", tool_response={"stdout": "ok"})
    proc = tb(ws, "redo", "--head", "1", check=False)
    assert proc.returncode != 0 and "its answer (its last event came" in proc.stderr


def test_a_hook_being_recorded_right_now_is_waited_for_by_no_one(ws):
    a = one_settled_turn(ws)
    a.prompt("second")
    backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)
    fd = os.open(ws / ".turnback" / "agents" / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a hook holds the record this instant
        proc = tb(ws, "rewind", "--after-response", "1", check=False)
        assert proc.returncode != 0
        assert "an agent hook is being recorded right now; try again in a moment" in proc.stderr
    finally:
        os.close(fd)
    assert tb(ws, "rewind", "--after-response", "1").stdout.startswith("First: Turn 2")


@pytest.mark.parametrize("verb", ["redo", "fork"])
def test_redo_and_fork_settle_an_idle_turn_first(ws, verb):
    a = one_settled_turn(ws)
    a.prompt("second")
    a.write("b.txt", "new\n")
    a.stop("ok")
    tb(ws, "rewind", "--after-response", "1", "--yes")
    a.prompt("third")
    backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)
    if verb == "redo":
        head = max(tb_json(ws, "redo")["groups"], key=lambda g: g["turnCount"])["headSeq"]
        result = tb_json(ws, "redo", "--head", str(head))
        assert result["plan"]["settledFirst"]["turn"] == 2
    else:
        result = tb_json(ws, "fork", "--turn", "1")
        assert result["report"]["settledFirst"]["turn"] == 2
        assert result["report"]["summary"].startswith("Turn 2 was still open")
    assert turns(ws)[-1] == ("third", "cancelled")


@pytest.mark.parametrize("prompt_id", ["same", "unknown"])
def test_a_stray_tool_event_after_the_last_stop_opens_no_turn(ws, prompt_id):
    a = one_settled_turn(ws)
    backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)  # a while after the Stop
    if prompt_id == "unknown":
        a.prompt_id = "p-nobody-typed"  # no prompt record in the transcript has it
    code, out, err = a.send("PreToolUse", tool_name="Read", tool_input={"file_path": "/etc/passwd"},
                            tool_use_id="toolu_99")
    assert (code, out, err) == (0, "", "")
    a.send("PostToolUse", tool_name="Write", tool_input={"file_path": str(ws / "a.txt")},
           tool_use_id="toolu_98", tool_response={})
    assert turns(ws) == [("first", "settled")]
    assert any("PreToolUse Read with no turn running" in line and "no turn opened" in line
               for line in hook_log(ws))
    assert tb_json(ws, "rewind", "--before-prompt", "1", "--yes")["commit"]["status"] == "committed"


def test_the_next_prompt_and_the_session_end_close_the_turn(ws):
    a = one_settled_turn(ws)
    a.prompt("no stop for this one")
    a.write("b.txt", "x\n")
    a.prompt("the next")
    assert turns(ws) == [("first", "settled"), ("no stop for this one", "cancelled"),
                         ("the next", "running")]
    a.send("SessionEnd", reason="prompt_input_exit")
    assert turns(ws)[-1] == ("the next", "cancelled")
    assert record(ws)["sessions"]["claude-code:s-1"]["turn"] is None


@pytest.mark.parametrize("agent,event,fields", [
    ("codex", "Interrupt", {"turn_id": "t-2", "model": "gpt-5"}),
    ("cursor", "stop", {"status": "aborted", "loop_count": 0}),
])
def test_an_interrupt_ends_the_turn(ws, agent, event, fields):
    from agentkit import send

    if agent == "codex":
        base = {"session_id": "x", "cwd": str(ws), "transcript_path": None}
        prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go", "turn_id": "t-2"}
        stop = {**base, "hook_event_name": event, **fields}
    else:
        base = {"conversation_id": "x", "generation_id": "g", "workspace_roots": [str(ws)]}
        prompt = {**base, "hook_event_name": "beforeSubmitPrompt", "prompt": "go"}
        stop = {**base, "hook_event_name": event, **fields}
    assert send(agent, prompt, ws, "inproc")[0] == 0
    assert send(agent, stop, ws, "inproc")[0] == 0
    assert turns(ws) == [("go", "cancelled")]


def test_an_idle_turn_is_settled_through_the_live_owner(ws):
    from turnback.remote import client

    client.ensure_owner(str(ws), str(ws / ".turnback"), timeout=60)
    try:
        a = Hooked(ws, how="owner")
        a.prompt("through the owner")
        a.write("b.txt", "b\n", finish=False)
        backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)
        result = tb_json(ws, "rewind", "--before-prompt", "1", "--yes")
        assert result["candidate"]["settledFirst"]["turn"] == 1
        assert result["commit"]["status"] == "committed"
        assert not (ws / "b.txt").exists()
        info = tb_json(ws, "info")
        assert info["ownership"] == "owner" and info["socket"]
    finally:
        tb(ws, "daemon", "stop", check=False)


def _idle_second_turn(ws) -> None:
    a = one_settled_turn(ws)
    a.prompt("interrupted one")
    a.write("b.txt", "half\n")
    a.write("c.txt", "never\n", finish=False)  # interrupted: Claude Code sends no Stop
    backdate(ws, "claude-code:s-1", QUIET_SECONDS + 5)


def test_the_idle_settle_before_a_rewind_does_not_bind_the_rewind(ws):
    """The settle's publication waits are binding for the settle only: a rewind that settles an
    idle turn first is still cancellable (nothing of it yields a binding mark) until it touches a
    file itself; here it never does (its plan is stale), and the settle is whole all the same."""
    from turnback.workbench import Options, Workbench

    _idle_second_turn(ws)
    wb = Workbench.open(ws, Options())
    try:
        job = wb.rewind.commit_job({"boundary": {"kind": "afterResponse", "turn": 1}, "planHash": "not-the-plan"})
        values = []
        while True:
            try:
                values.append(next(job))
            except StopIteration as done:
                assert done.value["status"] == "stale"
                break
        assert not [v for v in values if getattr(v, "binding", False)]
        assert wb.state.turns[-1].state == "cancelled" and not wb.book.dirty
    finally:
        wb.close()


def test_a_rewind_closed_in_the_idle_settles_publication_leaves_it_published(ws):
    """Closed (a cancel, a client gone) once the idle turn is settled but before its publication
    ends, the rewind is closed, and the settle runs its publication to the end first."""
    from turnback.workbench import Options, Workbench

    _idle_second_turn(ws)
    before = workspace_files(ws)
    wb = Workbench.open(ws, Options())
    try:
        job = wb.rewind.commit_job({"boundary": {"kind": "afterResponse", "turn": 1}, "planHash": "not-the-plan"})
        steps = 0
        while wb.state.turns[-1].state == "running":
            next(job)
            steps += 1
        assert wb.book.dirty, "the settle's publication should still be ahead"
        job.close()
        assert not wb.book.dirty and wb.state.turns[-1].state == "cancelled", steps
        assert workspace_files(ws) == before
    finally:
        wb.close()
