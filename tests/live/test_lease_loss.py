"""Losing the lease ends the reign (issue 21, item 2): real owners, a real SIGSTOP/SIGCONT and a real
takeover. A superseded owner stops listening, never attaches to its own socket, tells its clients,
answers every request `not-owner` naming the new owner, and a background one leaves (`daemon stop`
of it finishes). Gates, not sleeps: each step waits for the condition it needs (a lease record, a
socket's listener, a process's state), with a generous limit that only a wedge reaches."""

from __future__ import annotations

import json
import os
import signal
import time

import psutil
import pytest

from turnback.remote import client as remote
from turnback.store.ownership.owners import who_owns

from .sockclient import SocketClient
from .test_daemon import daemons, root, tb, wait_gone  # noqa: F401 - root is a fixture

GATE = 30.0  # seconds a gate may wait: only a wedged owner gets near it


def until(predicate, what: str, limit: float = GATE):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def listener_pid(path: str) -> int | None:
    """The pid of the process listening on the socket at `path` (SO_PEERCRED), or None."""
    import socket
    import struct

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        return struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    except OSError:
        return None
    finally:
        s.close()


def stopped(pid: int) -> bool:
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED


@pytest.fixture
def stop_owner(root):  # noqa: F811 - the fixture above
    """Start a background owner (its lease `ttl` seconds long), attach a client, stop it; continued
    at the end whatever happens (a stopped process would outlive the test)."""
    stopped_pids = []

    def start(ttl: float):
        started = json.loads(tb(root, "--json", "serve", "--background", "--idle-exit", "120",
                                env={"TURNBACK_LEASE_TTL": str(ttl)}).stdout)
        pid = started["pid"]
        attached = SocketClient(started["socket"], timeout=GATE)
        assert attached.result("turnback/session/info", {})["owner"]["pid"] == pid
        os.kill(pid, signal.SIGSTOP)
        stopped_pids.append((pid, attached))
        until(lambda: stopped(pid), "the owner to stop")
        return started, attached

    yield start
    for pid, attached in stopped_pids:
        attached.close()
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


@pytest.fixture
def stopped_owner(stop_owner):
    return stop_owner(2)  # a lease that runs out while the owner is stopped


def _expired(root) -> bool:
    return who_owns(root / ".turnback", "heads") is None


def test_a_woken_superseded_owner_answers_not_owner_naming_the_new_one_and_leaves(root, stopped_owner):  # noqa: F811
    started, attached = stopped_owner
    old = started["pid"]
    # A client that connects while the owner is stopped is queued in its listen backlog.
    queued = SocketClient(started["socket"], timeout=GATE)
    queued.send({"jsonrpc": "2.0", "id": 7, "method": "turnback/session/info", "params": {}})
    # The lease runs out while it is stopped; a new owner starts and takes the store and the
    # socket's name (the old owner, stopped, still listens on the unnamed socket).
    until(lambda: _expired(root), "the stopped owner's lease to run out")
    new = json.loads(tb(root, "--json", "serve", "--background", "--idle-exit", "120").stdout)
    assert new["started"] is True and new["pid"] != old
    assert new["socket"] == started["socket"] and listener_pid(new["socket"]) == new["pid"]
    assert remote.call(root, "turnback/session/info", {})["owner"]["pid"] == new["pid"]
    os.kill(old, signal.SIGCONT)
    # Both of the old owner's clients are answered, not-owner, with the new owner's pid.
    for c, msg_id in ((attached, None), (queued, 7)):
        reply = c.request("turnback/session/info", {}) if msg_id is None else c.reply(msg_id)
        assert reply["error"]["data"]["code"] == "not-owner", reply
        assert reply["error"]["data"]["owner"]["pid"] == new["pid"], reply
        assert str(new["pid"]) in reply["error"]["message"]
    # It told its clients it is no owner any more, before anything else.
    notes = [n["params"] for n in attached.notifications if n.get("method") == "turnback/status"]
    assert notes and notes[-1]["ownership"] == "observer"
    # Mutations too; and nothing it holds reaches the store.
    reply = attached.request("turnback/turn/begin", {"prompt": "from the superseded owner"})
    assert reply["error"]["data"]["code"] == "not-owner"
    # `daemon stop` of it finishes: answered, and it exits.
    assert attached.result("turnback/daemon/stop", {})["pid"] == old
    assert wait_gone(old, GATE)
    # The new owner was never disturbed and owns the store alone.
    assert remote.owner_socket(root) == new["socket"] and listener_pid(new["socket"]) == new["pid"]
    assert remote.call(root, "turnback/turn/begin", {"prompt": "next"})["turn"] == 1
    assert [p.pid for p in daemons(root) if p.is_running() and p.status() != "zombie"] == [new["pid"]]
    tb(root, "daemon", "stop")



def test_a_superseded_background_owner_leaves_by_itself(root, stop_owner):  # noqa: F811
    """With a confirmed takeover (its lease still runs): the old owner, continued, stops listening
    at once and leaves once its clients have heard why."""
    started, attached = stop_owner(600)
    old = started["pid"]
    taken = json.loads(tb(root, "--json", "takeover", "--yes").stdout)
    assert taken["status"] == "taken" and taken["previous"]["pid"] == old
    os.kill(old, signal.SIGCONT)
    attached.close()  # its only client goes: nothing keeps it
    assert wait_gone(old, GATE)
    # it left the socket of the command that took over alone, and took nothing back
    assert who_owns(root / ".turnback", "heads") is None  # the takeover's command released it
    assert tb(root, "turn", "begin", "--prompt", "direct, no owner").stdout.strip() == "1"
    assert tb(root, "fsck").returncode == 0


def test_the_command_line_gives_a_stopped_owner_up_in_bounded_time(root, stopped_owner):  # noqa: F811
    """Item 5, the command line's part: a stopped owner holding its lease is reported (exit 3,
    naming it), not waited for; once its lease has run out the command opens the store itself."""
    started, _attached = stopped_owner
    old = started["pid"]
    # still leased: the subprocess's own timeout (60 s) is far above the bound (about 1 s)
    if not _expired(root):
        held = tb(root, "info", check=False)
        if not _expired(root):  # the lease may have run out meanwhile: then the next case applies
            assert held.returncode == 3, (held.stdout, held.stderr)
            assert f"pid {old}" in held.stderr and "stopped" in held.stderr
    until(lambda: _expired(root), "the stopped owner's lease to run out")
    direct = tb(root, "--json", "turn", "begin", "--prompt", "while the owner is stopped")
    assert direct.stdout.strip() in ("1", '{\n  "turn": 1\n}') or json.loads(direct.stdout)["turn"] == 1
    log = json.loads(tb(root, "--json", "log").stdout)
    assert [t["prompt"] for t in log["turns"]] == ["while the owner is stopped"]


def test_turn_begin_and_capture_give_a_stopped_owner_up_in_bounded_time(root, stop_owner):  # noqa: F811
    """The lean path of `turn begin` and `turn capture` (cli/turnwire.py, what scripts and hooks
    run on every prompt and tool call) answers through the socket without the thin client: it
    must not wait the request's 600 s on a stopped owner either. While the lease runs: exit 3,
    naming the stopped pid (the subprocess's own limit, 60 s, is what fails it otherwise)."""
    started, _attached = stop_owner(600)
    old = started["pid"]
    for args in (["turn", "begin", "--prompt", "to a stopped owner"], ["turn", "capture", "a.txt"]):
        held = tb(root, *args, check=False)
        assert held.returncode == 3, (args, held.stdout, held.stderr)
        assert f"pid {old}" in held.stderr and "stopped" in held.stderr, held.stderr
    assert who_owns(root / ".turnback", "heads")["pid"] == old  # nobody took its store


def test_turn_begin_takes_the_store_of_a_stopped_owner_whose_lease_ran_out(root, stopped_owner):  # noqa: F811
    """Once the stopped owner's lease has run out, the plain `turn begin` opens the store itself
    (as `--json turn begin` and every other command do) and prints the turn's number."""
    started, _attached = stopped_owner
    until(lambda: _expired(root), "the stopped owner's lease to run out")
    direct = tb(root, "turn", "begin", "--prompt", "while the owner is stopped")
    assert direct.stdout.strip() == "1", (direct.stdout, direct.stderr)
    log = json.loads(tb(root, "--json", "log").stdout)
    assert [t["prompt"] for t in log["turns"]] == ["while the owner is stopped"]
