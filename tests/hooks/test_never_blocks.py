"""A hook never blocks and never loses (issue 21, item 5): whatever happens to the owner, its socket or
its lock, `turnback hook` exits 0, prints nothing unasked and returns in bounded time; an event it
could not hand over is kept in the spool and recorded, in order and once, by the next owner.

Bounded time is shown without a clock: the hook runs with an hour's budget
(`TURNBACK_HOOK_SECONDS=3600`), so it returns only if it saw why waiting was pointless (a stopped
or dead owner, a full backlog) rather than by running out of time; `turnback bench hook-budgets`
times it."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import time

import pytest
from hookkit import TURNBACK, hook_log, prompts, replayed_by_new_owner, spooled, tb

from turnback.remote import client

HOUR = {"TURNBACK_HOOK_SECONDS": "3600"}


def event(cwd, name="UserPromptSubmit", **fields) -> dict:
    return {"session_id": "s", "transcript_path": None, "cwd": str(cwd), "hook_event_name": name,
            **fields}


def prompt(cwd, text) -> dict:
    return event(cwd, prompt=text)


def run_hook(cwd, payload, *, env=None, timeout=120) -> subprocess.CompletedProcess:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(TURNBACK + ["hook", "claude-code"], input=body, capture_output=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout)


def quiet(proc) -> tuple:
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    return root


def start_owner(root, monkeypatch, lock_seconds: str = "3600"):
    """A background owner whose wait for the agent record's lock is `lock_seconds` (the owner
    inherits this environment)."""
    monkeypatch.setenv("TURNBACK_HOOK_LOCK_SECONDS", lock_seconds)
    client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)
    monkeypatch.delenv("TURNBACK_HOOK_LOCK_SECONDS")


@pytest.fixture
def owned(ws, monkeypatch):
    start_owner(ws, monkeypatch)
    yield ws
    _cont(_owner_pid(ws, quiet=True))
    tb(ws, "daemon", "stop", check=False)


def _owner_pid(root, quiet=False):
    try:
        return client.call(str(root), "turnback/session/info", {}, timeout=30)["owner"]["pid"]
    except Exception:
        if quiet:
            return None
        raise


def _cont(pid):
    if pid:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


class HeldLock:
    """The agent record's lock, held by this process (as a stopped hook process would)."""

    def __init__(self, root):
        agents = root / ".turnback" / "agents"
        agents.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.fd = os.open(agents / "lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def test_deeply_nested_json_is_logged_not_a_traceback(ws, monkeypatch):
    deep = b'{"cwd": "%s", "x": ' % str(ws).encode() + b"[" * 200_000 + b"]" * 200_000 + b"}"
    proc = run_hook(ws, deep, env={"TURNBACK_HOOK_DIRECT": "1"})
    assert quiet(proc) == (0, b"", b"")
    assert any("not JSON" in line for line in hook_log(ws))
    client.ensure_owner(str(ws), str(ws / ".turnback"), timeout=60)
    try:
        proc = run_hook(ws, deep)  # through the owner: it parses, the hook does not
        assert quiet(proc) == (0, b"", b"")
        assert sum("not JSON" in line for line in hook_log(ws)) == 2
        assert quiet(run_hook(ws, prompt(ws, "still fine"))) == (0, b"", b"")
        assert prompts(ws) == ["still fine"]
    finally:
        tb(ws, "daemon", "stop", check=False)


def test_a_full_listen_backlog_keeps_the_event(ws):
    run = ws / ".turnback" / "run"
    run.mkdir(parents=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(run / "owner.sock"))
    os.chmod(run / "owner.sock", 0o600)
    listener.listen(0)  # an owner that accepts nothing more
    waiting = []
    try:
        while True:  # fill the backlog until the kernel refuses (EAGAIN), as a flood would
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(str(run / "owner.sock"))
            except BlockingIOError:
                s.close()
                break
            waiting.append(s)
        proc = run_hook(ws, prompt(ws, "flooded"), env=HOUR)
    finally:
        for s in waiting:
            s.close()
        listener.close()
        os.unlink(run / "owner.sock")
    assert quiet(proc) == (0, b"", b""), proc.stderr
    kept = spooled(ws)
    assert [(k["sent"], "took no connection" in k["why"]) for k in kept] == [(False, True)]
    client.ensure_owner(str(ws), str(ws / ".turnback"), timeout=60)  # the next owner replays it
    try:
        assert replayed_by_new_owner(ws, ["flooded"]), (prompts(ws), spooled(ws))
    finally:
        tb(ws, "daemon", "stop", check=False)


def test_a_stopped_owner_holds_no_hook_and_records_the_event_when_woken(owned):
    assert quiet(run_hook(owned, prompt(owned, "before"))) == (0, b"", b"")
    pid = _owner_pid(owned)
    os.kill(pid, signal.SIGSTOP)
    try:
        proc = run_hook(owned, event(owned, "Stop", last_assistant_message="done"), env=HOUR)
        assert quiet(proc) == (0, b"", b"")
        proc = run_hook(owned, prompt(owned, "while stopped"), env=HOUR)
        assert quiet(proc) == (0, b"", b"")
    finally:
        os.kill(pid, signal.SIGCONT)
    kept = spooled(owned)
    assert [(k["sent"], k["why"]) for k in kept] == [(False, f"the owner (pid {pid}) is stopped")] * 2
    assert quiet(run_hook(owned, event(owned, "Stop", last_assistant_message="ok"))) == (0, b"", b"")
    log = tb_log(owned)
    assert [(t["prompt"], t["state"]) for t in log] == [("before", "settled"),
                                                         ("while stopped", "settled")]
    assert spooled(owned) == []


def tb_log(root) -> list[dict]:
    return json.loads(tb(root, "log", "--json").stdout)["turns"]


def test_an_event_the_owner_got_after_the_hook_gave_up_is_recorded_once(owned):
    held = HeldLock(owned)  # the owner's worker waits here while the hook runs out of time
    try:
        proc = run_hook(owned, prompt(owned, "once"), env={"TURNBACK_HOOK_SECONDS": "1"})
        assert quiet(proc) == (0, b"", b"")
    finally:
        held.release()  # now the owner records it, as it was sent
    kept = spooled(owned)
    assert [k["sent"] for k in kept] == [True]
    proc = run_hook(owned, event(owned, "Stop", last_assistant_message="answer"))
    assert quiet(proc) == (0, b"", b"")  # the owner replays the spool first: the copy is passed over
    assert [t["prompt"] for t in tb_log(owned)] == ["once"]
    assert spooled(owned) == []
    assert any("already recorded" in line for line in hook_log(owned))


def test_a_held_agent_lock_keeps_the_event_for_later(ws, monkeypatch):
    start_owner(ws, monkeypatch, lock_seconds="0.3")
    try:
        held = HeldLock(ws)
        try:
            proc = run_hook(ws, prompt(ws, "held"), env=HOUR)  # the owner keeps it and answers
            assert quiet(proc) == (0, b"", b"")
            proc = run_hook(ws, prompt(ws, "behind it"), env=HOUR)  # joins it: order is kept
            assert quiet(proc) == (0, b"", b"")
        finally:
            held.release()
        assert [k["sent"] for k in spooled(ws)] == [False, False]
        log = hook_log(ws)
        assert any("lock-timeout" in line and "kept in the spool" in line for line in log)
        assert any("earlier events still wait" in line for line in log)
        assert quiet(run_hook(ws, prompt(ws, "next"))) == (0, b"", b"")
        assert prompts(ws) == ["held", "behind it", "next"] and spooled(ws) == []
    finally:
        tb(ws, "daemon", "stop", check=False)


def test_a_held_agent_lock_on_the_direct_path(ws):
    direct = {"TURNBACK_HOOK_DIRECT": "1", "TURNBACK_HOOK_LOCK_SECONDS": "0.3", **HOUR}
    assert quiet(run_hook(ws, prompt(ws, "first"), env=direct)) == (0, b"", b"")
    held = HeldLock(ws)
    try:
        proc = run_hook(ws, event(ws, "Stop", last_assistant_message="x"), env=direct)
        assert quiet(proc) == (0, b"", b"")
    finally:
        held.release()
    assert [k["sent"] for k in spooled(ws)] == [False]
    assert quiet(run_hook(ws, prompt(ws, "second"), env=direct)) == (0, b"", b"")
    turns = tb_log(ws)
    assert [(t["prompt"], t["state"]) for t in turns] == [("first", "settled"),
                                                          ("second", "running")]
    assert spooled(ws) == []


def test_a_dead_owner_is_replaced_and_the_event_recorded(owned):
    pid = _owner_pid(owned)
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)
    # The start budget too is an hour: under load a cold owner takes longer than the default 5 s to
    # start, and the hook would then (rightly) keep the event in the spool instead of handing it over.
    started = {**HOUR, "TURNBACK_HOOK_START_SECONDS": "3600"}
    assert quiet(run_hook(owned, prompt(owned, "after the kill"), env=started)) == (0, b"", b"")
    assert prompts(owned) == ["after the kill"]
    assert _owner_pid(owned) != pid


def _wait_gone(pid, seconds=60.0):
    deadline = time.monotonic() + seconds
    while os.path.exists(f"/proc/{pid}") and _state(pid) not in ("Z", "X"):
        assert time.monotonic() < deadline, f"process {pid} did not end"
        time.sleep(0.02)


def _state(pid) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2:][:1].decode()


def test_daemon_stop_finishes_with_a_hook_in_flight(owned):
    pid = _owner_pid(owned)
    held = HeldLock(owned)
    hook = subprocess.Popen(TURNBACK + ["hook", "claude-code"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=owned,
                            env={**os.environ, **HOUR})
    try:
        hook.stdin.write(json.dumps(prompt(owned, "in flight")).encode())
        hook.stdin.close()
        deadline = time.monotonic() + 60  # gate: the owner's worker says it waits for the lock
        while not any("waiting for the agent record's lock" in line for line in hook_log(owned)):
            assert time.monotonic() < deadline and hook.poll() is None, "the worker never waited"
            time.sleep(0.02)
        stop = tb(owned, "daemon", "stop", check=False)
        assert stop.returncode == 0, stop.stderr
        _wait_gone(pid)  # the worker thread, still waiting, did not keep it alive
        hook.wait(timeout=60)
        assert (hook.returncode, hook.stdout.read(), hook.stderr.read()) == (0, b"", b"")
    finally:
        held.release()
        if hook.poll() is None:
            hook.kill()
    assert [k["id"] for k in spooled(owned)] and len({k["id"] for k in spooled(owned)}) == 1
    assert quiet(run_hook(owned, prompt(owned, "after"))) == (0, b"", b"")  # a new owner starts
    assert prompts(owned) == ["in flight", "after"]
