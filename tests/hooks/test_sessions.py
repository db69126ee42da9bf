"""One turnback session per agent session: a new agent session (startup, clear, fork) starts its own
turnback session with lineage; resume of the live one changes nothing; compact is only logged."""

from __future__ import annotations

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
    return root


def send(ws, session: str, event: str, **fields) -> tuple[int, str]:
    payload = {"session_id": session, "transcript_path": None, "cwd": str(ws),
               "hook_event_name": event, **fields}
    out = io.StringIO()
    code = run("claude-code", stdin=io.BytesIO(json.dumps(payload).encode()), stdout=out,
               stderr=io.StringIO())
    return code, out.getvalue()


def one_turn(ws, session: str, prompt: str) -> None:
    send(ws, session, "UserPromptSubmit", prompt=prompt)
    send(ws, session, "Stop", last_assistant_message=f"answer to {prompt}")


def _list(ws) -> list[dict]:
    from turnback.workbench import Options, Workbench

    wb = Workbench.open(ws, Options(store_path=str(ws / ".turnback")), take_ownership=False)
    try:
        return wb.sessions.list({})["sessions"]
    finally:
        wb.close()


def test_each_agent_session_gets_its_own_turnback_session(ws):
    send(ws, "A", "SessionStart", source="startup")
    one_turn(ws, "A", "first in A")
    send(ws, "A", "SessionStart", source="compact")
    assert len(_list(ws)) == 1
    send(ws, "B", "SessionStart", source="clear")
    one_turn(ws, "B", "first in B")
    listed = _list(ws)
    assert len(listed) == 2
    live = next(s for s in listed if s["current"])
    parked = next(s for s in listed if not s["current"])
    assert live["turnCount"] == 1 and parked["turnCount"] == 1
    assert live["parentId"] == parked["sessionId"]  # /clear: lineage from the session it left
    log = tb_json(ws, "log")
    assert [t["prompt"] for t in log["turns"]] == ["first in B"]
    record = json.loads((ws / ".turnback" / "agents" / "state.json").read_text())
    assert record["sessions"]["claude-code:A"]["turnback"] == parked["sessionId"]
    assert record["sessions"]["claude-code:B"]["turnback"] == live["sessionId"]
    assert any("started turnback session" in line for line in hook_log(ws))


def test_resuming_a_parked_agent_session_continues_in_a_child(ws):
    one_turn(ws, "A", "a1")
    one_turn(ws, "B", "b1")
    send(ws, "A", "SessionStart", source="resume")
    one_turn(ws, "A", "a2")
    listed = _list(ws)
    assert len(listed) == 3
    live = next(s for s in listed if s["current"])
    record = json.loads((ws / ".turnback" / "agents" / "state.json").read_text())
    assert record["sessions"]["claude-code:A"]["turnback"] == live["sessionId"]
    first_a = next(s for s in listed if s["sessionId"] not in
                   (live["sessionId"], record["sessions"]["claude-code:B"]["turnback"]))
    assert live["parentId"] == first_a["sessionId"]
    assert [t["prompt"] for t in tb_json(ws, "log")["turns"]] == ["a2"]


def test_a_mid_turn_session_is_not_cut_short(ws):
    send(ws, "A", "UserPromptSubmit", prompt="long task")
    send(ws, "B", "SessionStart", source="startup")
    send(ws, "A", "Stop", last_assistant_message="done")
    turns = tb_json(ws, "log")["turns"]
    assert [(t["prompt"], t["state"]) for t in turns] == [("long task", "settled")]
    assert any("in the middle of a turn; sharing" in line for line in hook_log(ws))
    assert len(_list(ws)) == 1


def test_a_dead_sessions_turn_is_closed_when_a_new_one_starts(ws):
    send(ws, "A", "UserPromptSubmit", prompt="abandoned")
    record = ws / ".turnback" / "agents" / "state.json"
    data = json.loads(record.read_text())
    data["sessions"]["claude-code:A"]["active"] -= 3600  # an hour without a hook event
    record.write_text(json.dumps(data))
    send(ws, "B", "SessionStart", source="startup")
    one_turn(ws, "B", "fresh")
    listed = _list(ws)
    parked = next(s for s in listed if not s["current"])
    assert parked["turnCount"] == 1
    assert any("never stopped" in line for line in hook_log(ws))
    assert [t["prompt"] for t in tb_json(ws, "log")["turns"]] == ["fresh"]
