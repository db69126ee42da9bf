"""`turn settle` through an owner answers once the settle is durable (`"answer": "durable"`, an
addition to `turnback/turn/settle`, docs/protocol.md) and the owner publishes the head right after,
still holding the mutation lock: the next begin waits for the publication, and an owner killed
between the answer and the publication loses nothing (its journal holds the settle)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from cli_helpers import turnback_exe

from turnback.remote import client

GATE_METHOD = "turnback/turn/settle"


def _tb(ws, *args, env=None, check=True):
    proc = subprocess.run([*turnback_exe(), "--workspace", str(ws), *args], capture_output=True,
                          text=True, timeout=120, env=env)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def _gated_owner(tmp_path):
    ws, gate = tmp_path / "ws", tmp_path / "gate"
    ws.mkdir()
    gate.mkdir()
    (ws / "a.txt").write_text("one\n")
    env = dict(os.environ, TURNBACK_JOB_GATE=f"{GATE_METHOD}:{gate}")
    env.pop("TURNBACK_START_OWNER", None)
    _tb(ws, "serve", "--background", "--idle-exit", "120", env=env)
    return ws, gate


def _head_seq(ws) -> int | None:
    return client.call(ws, "turnback/session/info", {}, timeout=30)["headSeq"]


def _settle_held_after_its_answer(ws, gate) -> int | None:
    """A first turn (ungated), then a second whose settle is gated at its early answer: the command
    answers while the owner is held before its publication. Returns the head seq then."""
    assert _tb(ws, "turn", "begin", "--prompt", "first").stdout.strip() == "1"
    _tb(ws, "turn", "settle")
    assert _tb(ws, "turn", "begin", "--prompt", "second").stdout.strip() == "2"
    (ws / "a.txt").write_text("two\n")
    before = _head_seq(ws)
    assert isinstance(before, int)
    (gate / "step").write_text("answer")
    settled = _tb(ws, "turn", "settle")
    assert settled.stdout.startswith("turn 2 settled"), settled.stdout
    assert (gate / "paused").exists()  # answered, and the owner is held before it publishes
    assert _head_seq(ws) == before  # a read is answered meanwhile: the head is not published yet
    return before


def test_a_begin_after_an_early_settle_answer_waits_for_the_head(tmp_path):
    ws, gate = _gated_owner(tmp_path)
    try:
        before = _settle_held_after_its_answer(ws, gate)
        begin = subprocess.Popen([*turnback_exe(), "--workspace", str(ws), "turn", "begin",
                                  "--prompt", "third"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)
            assert begin.poll() is None, begin.communicate()  # it waits for the publication
            assert _head_seq(ws) == before
            (gate / "go").write_text("")
            out, err = begin.communicate(timeout=60)
        finally:
            if begin.poll() is None:
                begin.kill()
        assert begin.returncode == 0 and out.strip() == "3", err
        assert _head_seq(ws) > before  # the settle's head, published before the begin ran
        turns = json.loads(_tb(ws, "--json", "log").stdout)["turns"]
        assert [t["state"] for t in turns] == ["settled", "settled", "running"]
        assert [f["path"] for f in turns[1]["files"]] == ["a.txt"]
    finally:
        _tb(ws, "daemon", "stop", check=False)


def test_an_owner_killed_after_the_answer_keeps_the_settle(tmp_path):
    """The answer promised a durable settle: the journal's settle op, replayed by the next opener."""
    ws, gate = _gated_owner(tmp_path)
    pid = json.loads(_tb(ws, "--json", "daemon", "status").stdout)["pid"]
    try:
        _settle_held_after_its_answer(ws, gate)
    finally:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    env = {k: v for k, v in os.environ.items() if k not in ("TURNBACK_JOB_GATE", "TURNBACK_START_OWNER")}
    turns = json.loads(_tb(ws, "--json", "log", env=env).stdout)["turns"]
    assert [t["state"] for t in turns] == ["settled", "settled"]
    assert [f["path"] for f in turns[1]["files"]] == ["a.txt"]
    assert (ws / "a.txt").read_text() == "two\n"
    rewound = _tb(ws, "rewind", "--before-prompt", "2", "--yes", env=env)
    assert rewound.returncode == 0 and (ws / "a.txt").read_text() == "one\n"


def test_the_general_path_and_other_callers_still_answer_with_the_published_head(tmp_path):
    """Only a caller that asks (`answer: durable`, the lean `turn settle`) gets the early answer:
    `--json` (the general path) and every editor still get the published `headSeq`."""
    ws, gate = _gated_owner(tmp_path)
    try:
        _tb(ws, "turn", "begin", "--prompt", "first")
        (ws / "a.txt").write_text("two\n")
        out = json.loads(_tb(ws, "--json", "turn", "settle").stdout)
        assert isinstance(out.get("headSeq"), int) and not out.get("publishing"), out
        assert out["headSeq"] == _head_seq(ws)
    finally:
        _tb(ws, "daemon", "stop", check=False)
