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
Anything else is parsed properly. The owner checks that the payload's `cwd`
is in its workspace; when it is not, or no owner listens, or the payload is not JSON, the hook
takes the slower path: `_parsed` (the payload read, its own `cwd` followed), then `runtime.run`
(a background owner started, or the store opened in this process), which logs whatever goes wrong.
"""

from __future__ import annotations

import binascii
import os
import sys

EXIT_OK, EXIT_BLOCK = 0, 2
HOOK_METHOD = "turnback/hook/event"
ELSEWHERE = "other-workspace"  # the owner's error code: the payload's cwd is not in its workspace
# The owner's answer to an event that prints nothing (its socket encodes with json.dumps defaults).
QUIET_REPLY = b'{"jsonrpc": "2.0", "id": 1, "result": {"exit": 0, "stdout": "", "stderr": ""}}'
NOTIFICATION = b'{"jsonrpc": "2.0", "method": '  # what the owner fans out to every connection
TIMEOUT_SECONDS = 30.0


def read_body(stream) -> bytes:
    try:
        body = stream.read()
    except (OSError, ValueError):
        return b""
    return body.encode("utf-8", "replace") if isinstance(body, str) else body


def parse(body: bytes, event: str | None):
    """The payload as a dict, list or value; None when it is not JSON. `--event` names the event
    for agents whose payload does not (Copilot)."""
    import json

    try:
        raw = json.loads(body)
    except ValueError:
        return None
    if isinstance(raw, dict) and event and not raw.get("hook_event_name"):
        raw["hook_event_name"] = event
    return raw


def cwd_of(raw, fallback: str | None = None) -> str:
    cwd = raw.get("cwd") if isinstance(raw, dict) else None
    if cwd is None and isinstance(raw, dict) and isinstance(raw.get("workspace_roots"), list):
        cwd = next(iter(raw["workspace_roots"]), None)  # Cursor names its workspace, not a cwd
    return cwd if isinstance(cwd, str) else (fallback or os.getcwd())


def find_workspace(cwd: str | None):
    """The workspace (and its store) that holds `cwd`: the nearest folder, going up, with a
    turnback store or a `turnback.toml`; None when there is none."""
    if not cwd:
        return None
    try:
        folder = os.path.realpath(cwd)
    except (OSError, ValueError):
        return None
    while True:
        store = os.path.join(folder, ".turnback")
        if os.path.isfile(os.path.join(store, "FORMAT")) \
                or os.path.isfile(os.path.join(folder, "turnback.toml")):
            return folder, store
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def run(agent: str, event: str | None = None) -> int:
    body = read_body(sys.stdin.buffer)
    here = os.getcwd()
    place = find_workspace(here)
    if place is None or (event is not None and not event.isalnum()):
        return _parsed(agent, body, event)
    from ..remote.paths import UnsafeSocket, check_private, recorded_socket
    from ..remote.wire import NoOwner, Reader, connect, framed

    path = recorded_socket(place[1])
    try:
        if path is None:
            raise NoOwner("no owner socket is recorded")
        check_private(path)
        sock = connect(path, TIMEOUT_SECONDS)
    except (NoOwner, UnsafeSocket, OSError):
        return _parsed(agent, body, event)  # it says (and logs) what is wrong, or starts an owner
    try:
        params = b'{"agent":"%s","payload64":"%s","cwd64":"%s"%s}' % (
            agent.encode(), _b64(body), _b64(os.fsencode(here)),
            b',"event":"%s"' % event.encode() if event else b"")
        sock.sendall(framed(b'{"jsonrpc":"2.0","id":1,"method":"%s","params":%s}'
                            % (HOOK_METHOD.encode(), params)))
        reader = Reader(sock)
        reply = reader.body()
        while reply.startswith(NOTIFICATION):
            reply = reader.body()
        if reply == QUIET_REPLY:
            return EXIT_OK
        return _answer(agent, body, event, reply, reader, place)
    except Exception as exc:  # noqa: BLE001 - timeouts, a garbled answer: it may have been recorded
        return _lost(agent, body, event, place, exc)
    finally:
        sock.close()


def _b64(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False)


def _answer(agent, body, event, reply: bytes, reader, place) -> int:
    """Any answer but the quiet one: parsed, after the notifications the owner fans out."""
    import json

    message = json.loads(reply)
    while not (isinstance(message, dict) and message.get("id") == 1
               and ("result" in message or "error" in message)):
        message = json.loads(reader.body())
    error = message.get("error")
    if error is not None:
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        code = data.get("code")
        if code == ELSEWHERE or code == "method-not-found":  # elsewhere, or an older owner
            return _parsed(agent, body, event)
        from ..remote.wire import RemoteError

        return _lost(agent, body, event, place,
                     RemoteError(str(code or "internal"), str(error.get("message", "")), data))
    return emit(message.get("result"))


def emit(answer) -> int:
    """Print what the owner said the hook prints; its exit status."""
    answer = answer if isinstance(answer, dict) else {}
    out, err = answer.get("stdout"), answer.get("stderr")
    if isinstance(out, str) and out:
        sys.stdout.write(out)
        sys.stdout.flush()
    if isinstance(err, str) and err:
        sys.stderr.write(err)
    code = answer.get("exit")
    return code if code in (EXIT_OK, EXIT_BLOCK) else EXIT_OK


def _parsed(agent: str, body: bytes, event: str | None) -> int:
    """The payload read first, and sent to the owner of the workspace its own `cwd` names."""
    raw = parse(body, event)
    place = find_workspace(cwd_of(raw))
    if place is None:
        return EXIT_OK  # not a workspace turnback knows: no trace at all
    if isinstance(raw, dict):
        from ..remote import client

        try:
            return emit(client.call(place[0], HOOK_METHOD, {"agent": agent, "payload": raw},
                                    store=place[1], timeout=TIMEOUT_SECONDS))
        except client.NoOwner:
            pass
        except client.RemoteError as exc:
            if exc.code != "method-not-found":
                return _lost(agent, body, event, place, exc)
    from .runtime import run as run_here

    return run_here(agent, event=event, body=body)


def _lost(agent: str, body: bytes, event: str | None, place, exc) -> int:
    """The owner was reached but the exchange failed (a timeout, a dropped connection, an error
    reply): the event may or may not be recorded, so it is not sent again; it is logged, with its
    payload."""
    from .runtime import lost

    return lost(agent, parse(body, event), place[0], place[1], exc)
