"""The thin client: one JSON-RPC request to the live owner of a store, over its private socket.

The socket speaks exactly what stdio speaks (LSP `Content-Length` framing, the contract's methods);
`initialize` is optional there, since the owner already has its workspace. Notifications the owner
fans out to every connection are skipped while waiting for the answer. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

from .paths import UnsafeSocket, check_private, recorded_socket, store_dir
from .wire import NoOwner, Reader, RemoteError, connect, framed

__all__ = ["NoOwner", "RemoteError", "call", "ensure_owner", "frame", "owner_socket"]


def owner_socket(workspace, store=None) -> str | None:
    """The live owner's socket path, or None when no owner listens. A socket that another user owns
    or that others may open raises RemoteError `unsafe-socket`: it is never connected to."""
    path = recorded_socket(store_dir(workspace, store))
    if path is None or not os.path.lexists(path):
        return None
    try:
        check_private(path)
    except UnsafeSocket as exc:
        raise RemoteError("unsafe-socket", str(exc), {"socket": path}) from None
    except OSError:
        return None  # vanished while we looked: the owner just went away
    try:
        connect(path, 1.0).close()
    except NoOwner:
        return None
    return path


def frame(message: dict) -> bytes:
    return framed(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


class _Reader(Reader):
    def message(self) -> dict:
        return json.loads(self.body())


def call(workspace, method: str, params: dict, *, store=None, timeout: float = 30.0) -> dict:
    """Send one request to the live owner and return its result. Raises NoOwner when no owner
    answers, RemoteError for an error reply (its `data.code` as `code`) or a broken exchange."""
    path = recorded_socket(store_dir(workspace, store))
    if path is None:
        raise NoOwner("no owner socket is recorded for this store")
    try:
        check_private(path)
    except UnsafeSocket as exc:
        raise RemoteError("unsafe-socket", str(exc), {"socket": path}) from None
    except OSError:
        raise NoOwner(f"the owner socket {path} is gone") from None
    sock = connect(path, timeout)
    try:
        sock.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        reader = _Reader(sock)
        while True:
            reply = reader.message()
            if reply.get("id") == 1 and ("result" in reply or "error" in reply):
                break
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


def ensure_owner(workspace, store=None, *, timeout: float = 5.0) -> str:
    """The socket of a live owner, starting `turnback serve --background` when none answers. Racing
    starters are safe: the store's lease lets exactly one of the started owners keep running."""
    import subprocess  # only when an owner must be started
    import time

    path = owner_socket(workspace, store)
    if path is not None:
        return path
    argv = [sys.executable, "-m", "turnback", "serve", "--background",
            "--workspace", os.path.realpath(os.fspath(workspace))]
    if store is not None:
        argv += ["--store", os.path.abspath(os.fspath(store))]
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
    raise NoOwner(f"no owner answered within {timeout:g} s after starting one (see {log})")
