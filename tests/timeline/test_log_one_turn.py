"""`turnback/session/log` with `turn`: one turn of the log (what a hook asks about the running turn),
the same entry the whole log has, at the cost of one turn; an unknown turn is `unknown-turn`."""

from __future__ import annotations

import pytest

from turnback.errors import TurnbackError


def four_turns(a):
    (a.root / "a.txt").write_text("a0")
    for n in range(1, 4):
        a.turn(f"turn {n}", {"a.txt": f"a{n}", f"f{n}.txt": f"f{n}"})
    c = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": {"kind": "afterResponse", "turn": 1}})
    a.wb.restore.commit({"paths": ["a.txt"], "boundary": {"kind": "afterResponse", "turn": 1},
                         "planHash": c["planHash"]})  # a restore after turn 3
    a.begin("the running turn")
    a.write("now.txt", "now")


def test_one_turn_is_the_whole_logs_entry(agent):
    a = agent()
    four_turns(a)
    whole = a.wb.sessions.log({})
    assert [t["turn"] for t in whole["turns"]] == [1, 2, 3, 4] and len(whole["restores"]) == 1
    for n in (1, 2, 3, 4):
        one = a.wb.sessions.log({"turn": n})
        assert one["turns"] == [whole["turns"][n - 1]]
        assert one["sessionId"] == whole["sessionId"]
        assert one.get("restores", []) == ([whole["restores"][0]] if n == 3 else [])
    running = a.wb.sessions.log({"turn": 4})["turns"][0]
    assert running["state"] == "running" and [f["path"] for f in running["files"]] == ["now.txt"]


@pytest.mark.parametrize("turn, code", [(0, "unknown-turn"), (9, "unknown-turn"), ("2", "invalid-params"),
                                        (True, "invalid-params"), (2.0, "invalid-params")])
def test_a_turn_the_session_does_not_have_is_refused(agent, turn, code):
    a = agent()
    four_turns(a)
    with pytest.raises(TurnbackError) as err:
        a.wb.sessions.log({"turn": turn})
    assert err.value.code == code


def test_a_parked_sessions_log_takes_the_turn_too(agent):
    a = agent()
    a.turn("one", {"a.txt": "1"})
    a.turn("two", {"a.txt": "2"})
    parked = a.wb.state.session_id
    a.wb.sessions.start()
    one = a.wb.sessions.log({"sessionId": parked, "turn": 2})
    assert [t["prompt"] for t in one["turns"]] == ["two"] and one["frozen"] is False
