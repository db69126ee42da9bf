"""The hook's fast path and the sidecar's side of it (`turnback/hook/event`, lsp/hookhost.py): the
event goes to the workspace its payload names, bad input is logged by the owner, a broken exchange is
never sent twice but kept in the spool for the next owner, and the method refuses malformed params
without stopping the server."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from hookkit import TURNBACK, hook_log, prompts, replayed_by_new_owner, spooled, tb, tb_json

from turnback.hooks import reply
from turnback.remote import client


def start_owner(root):
    (root / "turnback.toml").write_text("")
    client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)


def run_hook(cwd, payload, *, env=None, agent="claude-code"):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(TURNBACK + ["hook", agent], input=body, capture_output=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=120)


def prompt(cwd, text="hello") -> dict:
    return {"session_id": "s", "transcript_path": None, "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit", "prompt": text}


@pytest.fixture
def owned(tmp_path):
    root = tmp_path / "a"
    root.mkdir()
    start_owner(root)
    yield root
    tb(root, "daemon", "stop", check=False)


def test_the_payload_names_another_workspace(owned, tmp_path):
    other = tmp_path / "b"
    other.mkdir()
    (other / "turnback.toml").write_text("")
    proc = run_hook(owned, prompt(other), env={"TURNBACK_HOOK_DIRECT": "1"})
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert tb_json(other, "info")["turnCount"] == 1  # recorded where its cwd is
    assert tb_json(owned, "info")["turnCount"] == 0  # not by the owner the hook reached first


def test_a_payload_from_no_known_workspace_is_ignored(owned, tmp_path):
    nowhere = tmp_path / "elsewhere"
    nowhere.mkdir()
    proc = run_hook(owned, prompt(nowhere))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert tb_json(owned, "info")["turnCount"] == 0
    assert hook_log(owned) == []


def test_not_json_is_logged_by_the_owner(owned):
    proc = run_hook(owned, b"{not json at all")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert any("not JSON" in line and "{not json at all" in line for line in hook_log(owned))
    proc = run_hook(owned, prompt(owned))  # and the owner records the next one as usual
    assert proc.returncode == 0 and tb_json(owned, "info")["turnCount"] == 1


def test_the_event_is_answered_through_the_owner(owned):
    assert run_hook(owned, prompt(owned)).returncode == 0
    pre = {"session_id": "s", "transcript_path": None, "cwd": str(owned),
           "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": "ls"}, "tool_use_id": "t1"}
    assert run_hook(owned, pre).returncode == 0
    post = {**pre, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "x"}}
    assert run_hook(owned, post).returncode == 0
    info = tb_json(owned, "info")
    assert info["turnCount"] == 1 and info["ownership"] == "owner"
    steps = tb_json(owned, "log")["turns"][0]["stepList"]
    assert [(s["kind"], s["scope"]) for s in steps] == [("shell", "none")], steps  # `ls` reads only


def test_malformed_params_are_refused_and_the_owner_keeps_running(owned):
    for params, code in (({"agent": "nobody", "payload": {}}, "invalid-params"),
                         ({"agent": "claude-code", "payload": [1]}, "invalid-params"),
                         ({"agent": "claude-code", "payload64": "@@@"}, "invalid-params"),
                         ({"agent": "claude-code", "payload": {}, "eventId": 7}, "invalid-params"),
                         ({"agent": "claude-code", "payload": {}, "eventId": "x" * 65},
                          "invalid-params"),
                         ({"agent": "claude-code", "payload": {}, "hookParent": "1"},
                          "invalid-params"),
                         ({"agent": "claude-code", "payload": {}, "hookParent": -4},
                          "invalid-params"),
                         ([1, 2], "invalid-params")):
        with pytest.raises(client.RemoteError) as err:
            client.call(str(owned), "turnback/hook/event", params)
        assert err.value.code == code, params
    assert tb_json(owned, "info")["ownership"] == "owner"


def _broken_owner(root, stop: threading.Event, reply: bytes = b""):
    """A socket where the owner's is that accepts a request and hangs up after `reply` (none: no
    answer at all)."""
    run = root / ".turnback" / "run"
    run.mkdir(parents=True, mode=0o700)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(run / "owner.sock"))
    os.chmod(run / "owner.sock", 0o600)
    sock.listen(4)
    sock.settimeout(0.2)
    seen = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            conn.settimeout(5)
            seen.append(conn.recv(1 << 16))
            if reply:
                conn.sendall(b"Content-Length: %d\r\n\r\n" % len(reply) + reply)
            conn.close()
        sock.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread, seen


def test_a_broken_exchange_is_kept_and_recorded_once_by_the_next_owner(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    stop = threading.Event()
    thread, seen = _broken_owner(root, stop)
    try:
        proc = run_hook(root, prompt(root, "lost prompt"))
    finally:
        stop.set()
        thread.join(5)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b""), proc.stderr
    assert len(seen) == 1 and b"turnback/hook/event" in seen[0]  # sent once, never retried
    assert not (root / ".turnback" / "FORMAT").exists()  # nor mapped in the hook process
    kept = spooled(root)
    assert [(k["sent"], json.loads(base64.b64decode(k["body64"]))["prompt"]) for k in kept] \
        == [(True, "lost prompt")]
    assert kept[0]["id"].encode() in seen[0]  # the id it was sent with: recorded once only
    assert any("kept in the spool" in line for line in hook_log(root))
    os.unlink(root / ".turnback" / "run" / "owner.sock")
    start_owner(root)  # the next owner replays it
    try:
        assert replayed_by_new_owner(root, ["lost prompt"]), (prompts(root), spooled(root))
    finally:
        tb(root, "daemon", "stop", check=False)


def test_a_garbled_answer_is_kept_not_a_traceback(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    stop = threading.Event()
    thread, seen = _broken_owner(root, stop, reply=b"[1, 2]")
    try:
        proc = run_hook(root, prompt(root, "garbled"))
    finally:
        stop.set()
        thread.join(5)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert len(seen) == 1
    assert [k["sent"] for k in spooled(root)] == [True]
    assert any("kept in the spool" in line for line in hook_log(root))


def test_what_the_owner_says_is_printed_with_its_exit_status(monkeypatch):
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert reply.emit({"exit": 2, "stdout": "", "stderr": "blocked\n"}) == 2
    assert reply.emit({"exit": 0, "stdout": '{"systemMessage": "m"}\n', "stderr": ""}) == 0
    assert reply.emit({"exit": 77}) == 0  # only the agent's two statuses pass through
    assert (out.getvalue(), err.getvalue()) == ('{"systemMessage": "m"}\n', "blocked\n")
