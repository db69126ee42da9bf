"""An agent's turn ends through the owner with a settle that answers once durable (issue 39, item
4; docs/protocol.md, `turnback/turn/settle`, `answer`): the Stop hook returns while the owner still
holds the head's publication, the hook's own reads after the settle (the turn's files) see the
settled turn, and the head is published right after, before the next turn begins."""

from __future__ import annotations

import json
import os
import subprocess
import time

from agentkit import Hooked, record, workspace
from hookkit import TURNBACK, tb

from turnback.hooks.lifecycle import LifecycleMixin
from turnback.remote import client

GATE_METHOD = "turnback/turn/settle"
KEY = "claude-code:s-1"


def _info(root) -> dict:
    return client.call(str(root), "turnback/session/info", {}, timeout=30)


def test_the_stop_hook_answers_before_the_head_is_published(tmp_path):
    root = workspace(tmp_path, {"a.txt": "one\n"})
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {"TURNBACK_JOB_GATE": f"{GATE_METHOD}:{gate}"}
    tb(root, "serve", "--background", "--idle-exit", "120", env=env)
    try:
        a = Hooked(root, how="owner")  # `turnback hook` processes reaching the owner
        assert a.prompt("first")[0] == 0
        a.write("a.txt", "two\n")
        assert a.stop("done")[0] == 0  # settled (ungated) and published
        first_head = _info(root)["headSeq"]
        assert isinstance(first_head, int)

        assert a.prompt("second")[0] == 0
        a.write("b.txt", "new\n")
        (gate / "step").write_text("answer")  # hold the settle right after its early answer
        code, _out, err = a.stop("done again")
        assert code == 0, err
        # The hook came back while the owner holds the publication: only a settle that asked for
        # the durable answer gets there (a published answer would never pause at the gate).
        assert (gate / "paused").exists() and not (gate / "ended").exists()
        assert _info(root)["headSeq"] == first_head  # not published yet
        s = record(root)["sessions"][KEY]
        assert s["turn"] is None and s["last"]["n"] == 2  # the hook saw its turn end
        ends = {e["n"]: e for e in s["ends"].values()}
        assert ends[2].get("files") == ["b.txt"]  # its files, read after the early answer
        log = client.call(str(root), "turnback/session/log", {"turn": 2}, timeout=30)
        assert log["turns"][0]["state"] == "settled"

        # The next prompt's begin waits for the publication, then runs.
        begin = subprocess.Popen(TURNBACK + ["hook", "claude-code"], cwd=root,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE,
                                 env={k: v for k, v in os.environ.items()
                                      if k != "TURNBACK_HOOK_DIRECT"})
        a.prompt_id = "p-third"
        a.transcript.prompt("third", a.prompt_id)
        begin.stdin.write(json.dumps(a.payload("UserPromptSubmit", prompt="third")).encode())
        begin.stdin.close()
        (gate / "go").write_text("")
        assert begin.wait(timeout=120) == 0, begin.stderr.read()
        info = _info(root)
        assert info["headSeq"] > first_head  # the second settle's head came first
        turns = client.call(str(root), "turnback/session/log", {}, timeout=30)["turns"]
        assert [(t["turn"], t["state"]) for t in turns] == [(1, "settled"), (2, "settled"),
                                                            (3, "running")]
    finally:
        (gate / "go").write_text("")
        tb(root, "daemon", "stop", check=False)


def test_an_owner_killed_after_the_hooks_early_answer_keeps_the_turn_settled(tmp_path):
    """What the durable answer promises, through the hook: the owner SIGKILLed between its answer
    and the publication comes back (the next opener replays the journal) with the turn settled."""
    root = workspace(tmp_path, {"a.txt": "one\n"})
    gate = tmp_path / "gate"
    gate.mkdir()
    tb(root, "serve", "--background", "--idle-exit", "120",
       env={"TURNBACK_JOB_GATE": f"{GATE_METHOD}:{gate}"})
    pid = _info(root)["owner"]["pid"]
    try:
        a = Hooked(root, how="owner")
        a.prompt("first")
        a.write("a.txt", "two\n")
        (gate / "step").write_text("answer")
        assert a.stop("done")[0] == 0
        assert (gate / "paused").exists()
        os.kill(pid, 9)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
    finally:
        (gate / "go").write_text("")
    log = json.loads(tb(root, "log", "--json", env={"TURNBACK_DIRECT": "1"}).stdout)
    assert [(t["turn"], t["state"]) for t in log["turns"]] == [(1, "settled")]
    assert (root / "a.txt").read_text() == "two\n"
    tb(root, "rewind", "--before-prompt", "1", "--yes", env={"TURNBACK_DIRECT": "1"})
    assert (root / "a.txt").read_text() == "one\n"  # its checkpoint is whole: a rewind undoes it


def test_only_a_port_to_an_owner_asks_for_the_durable_answer():
    """The direct path runs the whole settle in the hook's own process: it keeps the default (the
    durable answer would add a journal sync there and answer no sooner)."""
    for name, wanted in (("owner", "durable"), ("socket", "durable"), ("direct", None)):
        calls = []

        class Port:
            def call(self, method, params):
                calls.append((method, params))
                return {}

        port = Port()
        port.name = name
        mapper = LifecycleMixin.__new__(LifecycleMixin)
        mapper.port = port
        mapper._settle(3, "settled")
        assert calls == [("turnback/turn/settle", {"turn": 3, "status": "settled",
                                                   **({"answer": wanted} if wanted else {})})]
