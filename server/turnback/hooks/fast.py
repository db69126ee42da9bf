"""A hook's fast path: the agent's payload handed whole to the live sidecar, in one request.

An agent runs `turnback hook AGENT` on every event, and waits for it. Mapping the event onto the
session takes several contract calls (runtime.py, mapper.py); made from the hook, each would cost a
connection, and the hook would first compile the mapper and the store's seam. So when a live owner
listens, the hook only finds the workspace and sends `turnback/hook/event`; the owner parses the
payload and runs the same mapper next to the session (`lsp/hookhost.py`), and answers with what to
print and the exit status.

The common case costs no `json`, `socket` or `re` import (each pulls in `enum`; together they are
most of a hook's start-up): the workspace is found from the hook's own folder, the payload travels
base64-encoded in a request put together by hand, and the usual answer (exit 0, nothing to print) is
recognised byte for byte (the status notifications that may come first, by their opening bytes).
Anything else is parsed properly (`reply.answer`). The owner checks that the payload's `cwd`
is in its workspace; when it is not, or no owner listens, or the payload is not JSON, the hook
takes the slower path (passed in by `cli/fast.py`): `fallback.parsed` (the payload read, its own `cwd`
followed), then `runtime.run` (a background owner started, or the store opened in this process),
which logs whatever goes wrong.

Never in the agent's way, whatever happens: the workspace is trusted only when it is the user's own
(`store/trust.py`); the hook never waits on an owner that is stopped or gone (its pid, from the
socket's peer credentials, is looked up in `/proc` while the hook waits), never longer than
`HOOK_SECONDS` in all; and an event it could not hand over is kept in the store's spool
(`agents/spool.py`) with its id, for the next owner to record in order (docs/agents/README.md).
"""

from __future__ import annotations

import binascii
import os
import sys
import time

from ..remote.paths import owner_gone
from . import EXIT_OK, NO_OWNER, Missed

HOOK_METHOD = "turnback/hook/event"
# The owner's answer to an event that prints nothing (its socket encodes with json.dumps defaults).
QUIET_REPLY = b'{"jsonrpc": "2.0", "id": 1, "result": {"exit": 0, "stdout": "", "stderr": ""}}'
NOTIFICATION = b'{"jsonrpc": "2.0", "method": '  # what the owner fans out to every connection
# Budgets, in seconds (TURNBACK_HOOK_SECONDS and TURNBACK_HOOK_START_SECONDS override them).
HOOK_SECONDS = 10.0   # the most a hook waits for a running owner's answer, start-up included
START_SECONDS = 5.0   # the most it waits for an owner it started (recovering a crash, say)
SLICE_SECONDS = 0.02  # how often a waiting hook looks whether its owner was stopped or has died
BACKLOG_SECONDS = 0.2  # how long a full listen backlog is tried again before the event is kept
RESERVE_SECONDS = 0.5  # kept back from the budget for writing the event to the spool


def budget(variable: str, default: float) -> float:
    """A budget in seconds: `default`, or the environment's `variable` (tests shorten them)."""
    try:
        return max(0.0, float(os.environ.get(variable) or default))
    except ValueError:
        return default


DEADLINE = [time.monotonic() + HOOK_SECONDS]  # set by `start_clock`; shared with the runtime


def start_clock() -> None:
    """A hook's budget starts now (when it starts, not when this module was first imported)."""
    DEADLINE[0] = time.monotonic() + budget("TURNBACK_HOOK_SECONDS", HOOK_SECONDS)


def remaining() -> float:
    return max(0.0, DEADLINE[0] - time.monotonic())


class _GaveUp(Exception):
    pass


def read_body(stream) -> bytes:
    try:
        body = stream.read()
    except (OSError, ValueError):
        return b""
    return body.encode("utf-8", "replace") if isinstance(body, str) else body


def parse(body: bytes, event: str | None):
    """The payload as a dict, list or value; None when it is not JSON (or nested too deeply for
    Python's parser). `--event` names the event for agents whose payload does not (Copilot)."""
    import json

    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(raw, dict) and event and not raw.get("hook_event_name"):
        raw["hook_event_name"] = event
    return raw


def cwd_of(raw, fallback: str | None = None) -> str:
    cwd = raw.get("cwd") if isinstance(raw, dict) else None
    if cwd is None and isinstance(raw, dict) and isinstance(raw.get("workspace_roots"), list):
        cwd = next(iter(raw["workspace_roots"]), None)  # Cursor names its workspace, not a cwd
    if isinstance(cwd, str):
        return cwd
    if fallback:
        return fallback
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under the hook
        return ""


def find_workspace(cwd: str | None):
    """The workspace (and its store) that holds `cwd`: the nearest folder, going up, with a
    turnback store or a `turnback.toml`; None when there is none, or when what it found is not the
    user's own. The walk ends at the first folder that is not the user's or that others may write
    (`store/trust.py`): nothing planted in a shared folder is ever believed."""
    return locate(cwd)[0]


def locate(cwd: str | None):
    """(the workspace and store, or None; why a workspace found was refused, or None)."""
    from ..store.ownership.owned import entry_ok

    if not cwd:
        return None, None
    try:
        folder = os.path.realpath(cwd)
    except (OSError, ValueError):
        return None, None
    while entry_ok(folder, private=False, folder=True):
        store = os.path.join(folder, ".turnback")
        toml = os.path.join(folder, "turnback.toml")
        fmt = os.path.join(store, "FORMAT")
        if os.path.lexists(fmt) or os.path.lexists(toml):
            if entry_ok(toml, private=False) is False or entry_ok(store, folder=True) is False \
                    or entry_ok(fmt) is False:
                from ..store.trust import markers_problem

                return None, markers_problem(folder)
            return (folder, store), None
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None, None


def run(agent: str, event: str | None = None, *, slower) -> int:
    """The hook, start to exit; never a traceback, never an exit status the agent did not ask for.
    `slower` is the slower path (`fallback.parsed`), passed in by the command: fallback sits above
    this module, and the usual event never loads it."""
    start_clock()
    try:
        return _run(agent, event, slower)
    except Exception:  # noqa: BLE001 - the promise: exit 0, print nothing, whatever happened
        return EXIT_OK


def _run(agent: str, event: str | None, slower) -> int:
    body = read_body(sys.stdin.buffer)
    try:
        here = os.getcwd()
    except OSError:  # the agent's folder was removed under it
        here = None
    event_id = os.urandom(8).hex()
    place = find_workspace(here)
    tried = None
    if place is not None and (event is None or event.isalnum()):
        outcome = send(place, agent, body, event, here, event_id)
        if isinstance(outcome, int):
            return outcome
        tried = (place, outcome)
    return slower(agent, body, event, event_id, here, tried=tried)


def send(place, agent: str, body: bytes, event: str | None, cwd: str | None, event_id: str):
    """Hand the event to the owner of `place`: the exit status it answered, or NO_OWNER,
    OLDER_OWNER (it has no `turnback/hook/event`), OTHER_PLACE, or a `Missed`."""
    from ..remote.paths import UnsafeSocket, check_private, recorded_socket
    from ..remote.wire import NoOwner, RemoteError, connect, framed

    path = recorded_socket(place[1])
    if path is None:
        return NO_OWNER
    try:
        check_private(path)
    except UnsafeSocket as exc:
        return Missed(str(exc), sent=False)
    except OSError:
        return NO_OWNER  # vanished while we looked: the owner just went away
    busy_until = time.monotonic() + BACKLOG_SECONDS
    while True:
        try:
            sock = connect(path, SLICE_SECONDS)
            break
        except NoOwner:
            return NO_OWNER
        except (RemoteError, OSError) as exc:  # a full listen backlog: EAGAIN at once
            if time.monotonic() >= min(busy_until, DEADLINE[0]):
                return Missed(f"the owner's socket took no connection: {exc}", sent=False)
            time.sleep(SLICE_SECONDS)
    sent = False
    try:
        pid = _peer_pid(sock)
        gone = owner_gone(pid)
        if gone:
            return Missed(gone, sent=False)
        params = b'{"agent":"%s","payload64":"%s","cwd64":"%s","eventId":"%s","hookParent":%d%s}' % (
            agent.encode(), _b64(body), _b64(os.fsencode(cwd or "")), event_id.encode(),
            os.getppid(), b',"event":"%s"' % event.encode() if event else b"")
        sent = True  # from the first byte on, the owner may record it
        _send_all(sock, framed(b'{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}'
                               % (HOOK_METHOD.encode(), params)), pid)
        reader = _patient_reader(sock, pid)
        reply = reader.body()
        while reply.startswith(NOTIFICATION):
            reply = reader.body()
        if reply == QUIET_REPLY:
            return EXIT_OK
        from .reply import answer

        return answer(reply, reader)
    except _GaveUp as exc:
        return Missed(str(exc), sent=sent)
    except Exception as exc:  # noqa: BLE001 - a dropped connection, a garbled answer
        return Missed(f"the exchange with the owner broke off ({type(exc).__name__}: {exc})",
                      sent=sent)
    finally:
        sock.close()


def _b64(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False)


def _peer_pid(sock) -> int | None:
    """The owner's pid from the connection's peer credentials (Linux), or None."""
    import _socket

    try:
        cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    except (AttributeError, OSError):
        return None
    pid = int.from_bytes(cred[:4], sys.byteorder)
    return pid or None


def _waited(pid) -> None:
    """Called each time a slice passes with nothing sent or read: give up when it is pointless."""
    gone = owner_gone(pid)
    if gone:
        raise _GaveUp(gone)
    if time.monotonic() >= DEADLINE[0] - RESERVE_SECONDS:
        raise _GaveUp("the owner did not answer within the hook's budget")


def _send_all(sock, data: bytes, pid) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view):]
        except TimeoutError:
            _waited(pid)


def _reader_class():
    from ..remote.wire import Reader

    class Patient(Reader):
        """Reads in short slices, looking between them whether the owner can still answer."""

        def __init__(self, sock, pid):
            super().__init__(sock)
            self.pid = pid

        def _fill(self) -> None:
            while True:
                try:
                    chunk = self.sock.recv(1 << 16)
                    break
                except TimeoutError:
                    _waited(self.pid)
            if not chunk:
                raise ConnectionResetError("the owner closed the connection")
            self.buf += chunk

    return Patient


def _patient_reader(sock, pid):
    return _reader_class()(sock, pid)
