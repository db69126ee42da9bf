"""Directives and agents mix (issue 26, "directives with an agent"): a directive attempt an editor began
(`turn/begin` kind `directive`) and the agent's turn for it are one turn: the agent's hooks join the
attempt instead of failing with `turn-running`, its answer is recorded as the attempt's, and its Stop
settles the turn."""

from __future__ import annotations

import pytest
from agentkit import Hooked
from hookkit import hook_log, tb, tb_json

from turnback.remote import client


@pytest.fixture
def owned(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    (root / "app.py").write_text("def bye():\n    return 'bye'\n")
    client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)
    yield root
    tb(root, "daemon", "stop", check=False)


def call(root, method: str, params: dict) -> dict:
    return client.call(str(root), method, params, store=str(root / ".turnback"))


@pytest.mark.parametrize("how", ["inproc-owner", "owner"])
def test_the_agents_turn_joins_the_directive_attempt_an_editor_began(owned, how):
    root = owned
    d = call(root, "turnback/directive/upsert", {"uri": (root / "app.py").as_uri(),
                                                 "anchor": {"line": 0, "character": 0},
                                                 "request": "rename bye to farewell"})
    begun = call(root, "turnback/turn/begin", {"kind": "directive", "directiveId": d["id"],
                                               "prompt": "rename bye to farewell"})
    a = Hooked(root, how=how)
    a.send("SessionStart", source="startup")
    code, out, err = a.prompt("rename bye to farewell (from the editor's directive)")
    assert (code, err) == (0, "")
    a.write("app.py", "def farewell():\n    return 'bye'\n", tool="Edit")
    a.stop("Renamed bye to farewell.")
    log = tb_json(root, "log")["turns"]
    assert len(log) == 1, "one turn: the attempt"
    turn = log[0]
    assert (turn["turn"], turn["kind"], turn["state"], turn["directiveId"]) == \
        (begun["turn"], "directive", "settled", d["id"])
    assert [s["summary"] for s in turn["stepList"]] == ["Edit app.py"]
    directive = call(root, "turnback/directive/list", {})["directives"][0]
    assert directive["attempts"][0]["answer"] == "Renamed bye to farewell."
    assert directive["state"] == "answered"
    assert not any("turn-running" in line for line in hook_log(root))
    assert any("joins directive attempt 1" in line for line in hook_log(root))
