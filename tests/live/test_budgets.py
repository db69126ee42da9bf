"""What a client may cost the owner (issue 21, item 3): a cap on connections that the descriptor limit
lowers (with descriptors in reserve), an idle limit, one budget of buffered request bytes. Past a
budget a client hears a clear refusal (a JSON-RPC error, id null, stable code); the honest client is
still answered, and the lease is still renewed. Real background owners; gates, not sleeps."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading

import psutil
import pytest

from turnback.remote import client as remote
from turnback.remote.client import _Reader, frame
from turnback.store.records import read_record

from .test_daemon import TB, root, tb  # noqa: F401 - root is a fixture
from .test_lease_loss import GATE, until


def start_owner(root, *, nofile: int | None = None, budgets: str = "", ttl: float = 30) -> dict:
    def limit():
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    env = {**os.environ, "TURNBACK_SOCKET_BUDGETS": budgets, "TURNBACK_LEASE_TTL": str(ttl)}
    proc = subprocess.run([*TB, "--workspace", str(root), "--json", "serve", "--background",
                           "--idle-exit", "120"], capture_output=True, text=True, cwd=root,
                          timeout=60, env=env, preexec_fn=limit)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def connect(path: str):
    """A connection, waiting out a full listen queue (the owner takes them in its own time)."""
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(None)  # blocking: a full queue makes connect wait, not fail
    s.connect(path)
    s.settimeout(GATE)
    return s


def refusal(s) -> dict | None:
    """What the owner said before it closed this connection: its refusal, or None (plain EOF)."""
    try:
        message = _Reader(s).message()
    except (ConnectionError, OSError):
        return None
    assert message.get("id") is None and "error" in message, message
    return message["error"]


def _expires(root) -> float:
    return read_record(root / ".turnback" / "lease.cbor", "lease")["expires"]


def test_more_connections_than_descriptors_are_refused_and_the_owner_goes_on(root):  # noqa: F811
    started = start_owner(root, nofile=160, ttl=2)
    owner = psutil.Process(started["pid"])
    fds_before = owner.num_fds()
    info = remote.call(root, "turnback/session/info", {})
    cap = info["sockets"]["cap"]
    assert 8 <= cap <= 160 - 64  # what the descriptor limit leaves, 64 kept in reserve
    idle = [connect(started["socket"]) for _ in range(cap + 120)]  # far past what it can hold
    try:
        # the honest client is answered, by the one owner, while the attack holds every slot
        honest = remote.call(root, "turnback/session/info", {})
        assert honest["owner"]["pid"] == started["pid"]
        assert honest["sockets"]["connections"] <= cap
        refused = honest["sockets"]["refused"]
        assert refused.get("too-many-connections", 0) >= 120
        # idle clients are closed for room, never a newcomer turned away (nor the honest one asked
        # to try again) for the timing of a flood: the owner waits for the ones it is setting up
        assert refused.get("turned-away", 0) == 0, refused
        # the quietest connections were closed to make room, each with a clear refusal
        said = refusal(idle[0])
        assert said is not None and said["data"]["code"] == "too-many-connections", said
        # lease renewal and publication still find their descriptors
        renewed = _expires(root)
        until(lambda: _expires(root) > renewed, "the lease to be renewed under the attack")
        n = remote.call(root, "turnback/turn/begin", {"prompt": "under attack"})["turn"]
        assert remote.call(root, "turnback/turn/settle", {"turn": n})["headSeq"] is not None
    finally:
        for s in idle:
            s.close()
    until(lambda: remote.call(root, "turnback/session/info", {})["sockets"]["connections"] <= 1,
          "the attack's connections to go")
    assert owner.num_fds() <= fds_before + 4
    tb(root, "daemon", "stop")


def test_a_connection_that_says_nothing_is_closed_one_that_spoke_is_kept(root):  # noqa: F811
    started = start_owner(root, budgets="first_message=0.3,message_stall=0.3")
    spoke = connect(started["socket"])
    spoke.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "turnback/session/status",
                         "params": {}}))
    reader = _Reader(spoke)
    assert reader.message()["id"] == 1
    silent = connect(started["socket"])
    said = refusal(silent)  # blocks until the owner gives up on it
    assert said is not None and said["data"]["code"] == "idle", said
    half = connect(started["socket"])
    half.sendall(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":")  # a message begun, never finished
    said = refusal(half)
    assert said is not None and said["data"]["code"] == "stalled", said
    # the client that spoke first has been quiet longer than both, and is still served
    spoke.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "turnback/session/info",
                         "params": {}}))
    reply = reader.message()
    while reply.get("id") != 2:
        reply = reader.message()
    assert reply["result"]["sockets"]["refused"] == {"idle": 1, "stalled": 1}
    for s in (spoke, silent, half):
        s.close()
    tb(root, "daemon", "stop")


def _big_request(msg_id: int, size: int) -> bytes:
    pad = "x" * size
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": "turnback/session/status",
                  "params": {"padding": pad}})


@pytest.mark.parametrize("clients", [6])
def test_request_bytes_held_at_once_stay_within_one_budget(root, clients):  # noqa: F811
    budget = 4 << 20
    started = start_owner(root, budgets=f"buffered={budget},budget_wait=60")
    answers: list = []
    errors: list = []
    go = threading.Barrier(clients + 1)

    def big(i: int) -> None:
        try:
            s = connect(started["socket"])
            go.wait()
            s.sendall(_big_request(i, 3 << 20))  # 3 MiB each: one fits the budget at a time
            reader = _Reader(s)
            reply = reader.message()
            while reply.get("id") != i:
                reply = reader.message()
            answers.append(reply)
            s.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=big, args=(i,)) for i in range(1, clients + 1)]
    for t in threads:
        t.start()
    go.wait()
    honest = remote.call(root, "turnback/session/info", {})  # answered while they wait their turn
    for t in threads:
        t.join(GATE)
    assert not errors and len(answers) == clients, errors
    assert all("result" in a for a in answers)  # the budget delays, it refuses nothing that fits
    info = remote.call(root, "turnback/session/info", {})
    assert honest["owner"]["pid"] == started["pid"]
    assert budget >= info["sockets"]["peakBuffered"] >= 3 << 20, info["sockets"]
    assert info["sockets"]["buffered"] < 1 << 16  # given back as each was answered
    # one message larger than the whole budget can never be held: refused at once, and only it
    s = connect(started["socket"])
    s.sendall(b"Content-Length: %d\r\n\r\n" % (budget + 1))
    said = refusal(s)
    assert said is not None and said["data"]["code"] == "over-budget", said
    s.close()
    assert remote.call(root, "turnback/session/status", {})["ownership"] == "owner"
    tb(root, "daemon", "stop")


def test_budgets_are_read_from_the_environment():
    from turnback.lsp.budgets import Budgets

    b = Budgets.from_env({"TURNBACK_SOCKET_BUDGETS": "connections=8, first_message=0.5,nope=1,"
                                                     "buffered=x"})
    assert (b.connections, b.first_message, b.buffered) == (8, 0.5, Budgets().buffered)
    assert sys.maxsize > b.cap() >= 1


STAND_IN = """
import socket, sys
from turnback.lsp.connection import encode, refusal
from turnback.remote.client import _Reader
path, refusals, serve = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
import os; os.chmod(path, 0o600)
listener.listen(8)
print("ready", flush=True)
for n in range(1, serve + 1):
    conn, _ = listener.accept()
    print(_Reader(conn).message()["method"], flush=True)  # read before the refusal, as the owner does
    if n <= refusals:
        conn.sendall(refusal("too-many-connections", "every slot is taken"))
    else:
        conn.sendall(encode({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}))
    conn.close()
"""


@pytest.mark.parametrize("refusals", [2, len(remote.REFUSED_RETRIES) + 1])
def test_a_client_turned_away_by_a_full_owner_asks_again_then_says_why(short_tmp, refusals):
    """A stand-in owner (its own process: a client never asks itself) turns away the first
    `refusals` connections the way a full owner does, id null and `too-many-connections`."""
    run = short_tmp / ".turnback" / "run"
    run.mkdir(parents=True, mode=0o700)
    os.chmod(short_tmp / ".turnback", 0o700)
    tries = len(remote.REFUSED_RETRIES) + 1
    stand_in = subprocess.Popen([sys.executable, "-c", STAND_IN, str(run / "owner.sock"),
                                 str(refusals), str(min(refusals + 1, tries))],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert stand_in.stdout.readline() == "ready\n"
        if refusals < tries:
            assert remote.call(short_tmp, "turnback/session/status", {}) == {"ok": True}
        else:
            with pytest.raises(remote.RemoteError) as caught:
                remote.call(short_tmp, "turnback/session/status", {})
            assert caught.value.code == "too-many-connections", caught.value  # the reason, no reset
            assert "every slot is taken" in caught.value.message
        out, _ = stand_in.communicate(timeout=GATE)
    finally:
        stand_in.kill()
    # asked again after each refusal, each time the same request, and no more than the retries
    assert out.split() == ["turnback/session/status"] * min(refusals + 1, tries)
