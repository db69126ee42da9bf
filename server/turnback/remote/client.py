"""The thin client: one JSON-RPC request to the live owner of a store, over its private socket.

The socket speaks exactly what stdio speaks (LSP `Content-Length` framing, the contract's methods);
`initialize` is optional there, since the owner already has its workspace. Notifications the owner
fans out to every connection are skipped while waiting for the answer. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

from .paths import UnsafeSocket, check_private, store_dir, trusted_socket
from .wire import NoOwner, OwnerStarting, Reader, RemoteError, connect, framed, peer, stopped

__all__ = ["NoOwner", "OwnerStarting", "RemoteError", "call", "ensure_owner", "frame", "owner_socket"]

# How long an answer may keep the owner silent before the client asks, on a second connection,
# whether it is alive at all; and how long that question may go unanswered. A live owner answers a
# read between the slices of its longest work (10 ms each), so only a wedged one fails it.
STALL_SECONDS = 3.0
PROBE_SECONDS = 5.0
# A stopped owner (SIGSTOP, a debugger) answers nothing until it is continued: given up this soon.
STOPPED_SECONDS = 1.0
POLL_SECONDS = 0.25
# Turned away by an owner whose every slot is taken (`too-many-connections`, sent before any
# request of this connection ran): asked again after each of these pauses, then the refusal stands.
REFUSED_RETRIES = (0.05, 0.2, 0.5)
_given_up: dict = {}  # (socket, listener) -> the `unresponsive` error this process already got


def _socket_path(workspace, store) -> str | None:
    try:
        return trusted_socket(store_dir(workspace, store))
    except UnsafeSocket as exc:
        raise RemoteError("unsafe-socket", str(exc), {"store": store_dir(workspace, store)}) from None


def _connect(path: str, timeout: float):
    """A checked connection and the listening process's (pid, uid); NoOwner when nobody listens,
    or when the listener is this very process (asking itself would wait for ever)."""
    try:
        check_private(path)
    except UnsafeSocket as exc:
        raise RemoteError("unsafe-socket", str(exc), {"socket": path}) from None
    except OSError:
        raise NoOwner(f"the owner socket {path} is gone") from None
    try:
        sock = connect(path, timeout)
    except UnsafeSocket as exc:
        raise RemoteError("unsafe-socket", str(exc), {"socket": path}) from None
    who = peer(sock)
    if who is not None and who[0] == os.getpid():
        sock.close()
        raise NoOwner(f"the socket {path} is this process's own: no other owner listens")
    return sock, who


def owner_socket(workspace, store=None) -> str | None:
    """The live owner's socket path, or None when no owner listens (or only this process does). A
    socket (or a record of it) that another user owns or that others may open raises RemoteError
    `unsafe-socket`: it is never connected to."""
    path = _socket_path(workspace, store)
    if path is None or not os.path.lexists(path):
        return None
    try:
        sock, _who = _connect(path, 1.0)
    except NoOwner:
        return None
    except RemoteError as exc:
        if exc.code == "unsafe-socket":
            raise
        return path  # someone listens there but takes no connection now: the call says more
    sock.close()
    return path


def frame(message: dict) -> bytes:
    return framed(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class _Reader(Reader):
    def message(self) -> dict:
        return json.loads(self.body())


def call(workspace, method: str, params: dict, *, store=None, timeout: float = 30.0,
         stall: float | None = STALL_SECONDS) -> dict:
    """Send one request to the live owner and return its result. Raises NoOwner when no owner
    answers, RemoteError for an error reply (its `data.code` as `code`) or a broken exchange.

    However long `timeout` is (a commit of a big tree may take minutes), an owner that cannot
    answer is given up early with `unresponsive`: a stopped one after about STOPPED_SECONDS, a
    wedged one (silent for `stall` seconds, then no answer to a status question within
    PROBE_SECONDS). `stall=None` waits the whole timeout."""
    path = _socket_path(workspace, store)
    if path is None:
        raise NoOwner("no owner socket is recorded for this store")
    for pause in REFUSED_RETRIES:
        try:
            return _call_once(path, method, params, timeout, stall)
        except RemoteError as exc:
            if exc.code != "too-many-connections":
                raise
        import time  # only when turned away

        time.sleep(pause)  # a flood holds every slot: the owner named no request run, so ask again
    return _call_once(path, method, params, timeout, stall)


def _call_once(path: str, method: str, params: dict, timeout: float, stall: float | None) -> dict:
    sock, who = _connect(path, min(timeout, 5.0))
    known = _given_up.get((path, who))
    if known is not None and stall is not None:
        sock.close()
        raise known  # this process already waited for this very listener once
    try:
        sock.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        reply = _await_reply(sock, path, method, timeout, stall, who)
    except RemoteError as exc:
        if exc.code == "unresponsive":
            _given_up[(path, who)] = exc
        raise
    except TimeoutError:
        raise RemoteError("timeout", f"the owner did not answer {method} within {timeout:g} s",
                          {"socket": path}) from None
    except (OSError, ValueError) as exc:
        raise RemoteError("unreachable", f"the exchange with the owner at {path} broke off: {exc}",
                          {"socket": path}) from None
    finally:
        sock.close()
    error = reply.get("error")
    if error is not None:
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        raise RemoteError(str(data.get("code", "internal")), str(error.get("message", "")), data)
    result = reply.get("result")
    return result if isinstance(result, dict) else {"value": result}


def _await_reply(sock, path: str, method: str, timeout: float, stall: float | None, who) -> dict:
    import time  # only once a request is on its way

    reader = _Reader(sock)
    now = time.monotonic()
    deadline, heard, stopped_since = now + timeout, now, None
    pid = who[0] if who is not None else None
    while True:
        sock.settimeout(max(0.001, min(POLL_SECONDS, deadline - time.monotonic())))
        try:
            reply = reader.message()
        except TimeoutError:
            now = time.monotonic()
            if now >= deadline:
                raise
            if stall is None:
                continue
            if pid is not None and stopped(pid):
                stopped_since = stopped_since or now
                if now - stopped_since >= STOPPED_SECONDS:
                    raise _unresponsive(path, method, pid, "it is stopped (SIGSTOP or a debugger)")
                continue
            stopped_since = None
            if now - heard >= stall:
                if not _answers(path):
                    raise _unresponsive(path, method, pid, f"it answered nothing for {stall:g} s "
                                        f"and not a status question within {PROBE_SECONDS:g} s")
                heard = time.monotonic()
            continue
        heard = time.monotonic()
        if reply.get("id") == 1 and ("result" in reply or "error" in reply):
            return reply
        if reply.get("id") is None and isinstance(reply.get("error"), dict):
            return reply  # the owner closes this connection and says why (no request ran)


def _answers(path: str) -> bool:
    """Whether the owner at `path` answers a read on a connection of its own (it is alive)."""
    try:
        sock, _who = _connect(path, PROBE_SECONDS)
    except (NoOwner, RemoteError):
        return False
    try:
        sock.settimeout(PROBE_SECONDS)
        sock.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "turnback/session/status",
                            "params": {}}))
        reader = _Reader(sock)
        while True:
            reply = reader.message()
            if reply.get("id") == 1:
                return True
    except (OSError, ValueError):
        return False
    finally:
        sock.close()


def _unresponsive(path: str, method: str, pid, why: str) -> RemoteError:
    who = f"the owner (pid {pid})" if pid is not None else "the owner"
    return RemoteError("unresponsive", f"{who} holds its socket {path} but cannot answer "
                       f"{method}: {why}", {"socket": path, "pid": pid})


def ensure_owner(workspace, store=None, *, timeout: float = 5.0, idle: float | None = None) -> str:
    """The socket of a live owner, starting `turnback serve --background` when none answers (`idle`:
    its `--idle-exit`, else the daemon's default). Racing starters are safe: the store's lease lets
    exactly one of the started owners keep running."""
    import subprocess  # only when an owner must be started
    import time

    path = owner_socket(workspace, store)
    if path is not None:
        return path
    argv = [sys.executable, "-m", "turnback", "serve", "--background",
            "--workspace", os.path.realpath(os.fspath(workspace))]
    if store is not None:
        argv += ["--store", os.path.abspath(os.fspath(store))]
    if idle is not None:
        argv += ["--idle-exit", f"{idle:g}"]
    # `serve --background` waits until its owner listens (or another owner does) and then exits.
    starter = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, close_fds=True)
    log = os.path.join(store_dir(workspace, store), "run", "daemon.log")
    deadline = time.monotonic() + timeout
    while True:
        path = owner_socket(workspace, store)
        if path is not None:
            return path
        code = starter.poll()
        if code not in (None, 0):  # it waits for a racing starter's owner itself: this is final
            raise NoOwner(f"the background owner could not start (status {code}; see {log})")
        if time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    raise OwnerStarting(f"no owner answered within {timeout:g} s after starting one, which is "
                        f"still starting (see {log})")
