"""The thin client: one JSON-RPC request to the live owner of a store, over its private socket.

The socket speaks exactly what stdio speaks (LSP `Content-Length` framing, the contract's methods);
`initialize` is optional there, since the owner already has its workspace. Notifications the owner
fans out to every connection are skipped while waiting for the answer. Standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys

from .paths import UnsafeSocket, check_private, recorded_socket, store_dir

_MAX_HEADER = 1 << 16


class NoOwner(Exception):
    """No live owner is reachable: no socket, a stale one from a dead owner, or a refused connect."""


class RemoteError(Exception):
    """A JSON-RPC error reply (or a failure talking to a live owner), with its stable `code`."""

    def __init__(self, code: str, message: str, data: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = dict(data or {})


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
        _connect(path, 1.0).close()
    except NoOwner:
        return None
    return path


def _connect(path: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        sock.close()
        raise NoOwner(f"no owner listens on {path} ({exc.strerror})") from None
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
            raise NoOwner(f"no owner listens on {path} ({exc.strerror})") from None
        raise RemoteError("unreachable", f"cannot reach the owner at {path}: {exc}",
                          {"socket": path}) from None
    return sock


def frame(message: dict) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _Reader:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionResetError("the owner closed the connection")
        self.buf += chunk

    def message(self) -> dict:
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > _MAX_HEADER:
                raise ValueError("header too long")
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        length = None
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise ValueError("a message without Content-Length")
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return json.loads(body)


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
    sock = _connect(path, timeout)
    try:
        sock.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        reader = _Reader(sock)
        while True:
            reply = reader.message()
            if reply.get("id") == 1 and ("result" in reply or "error" in reply):
                break
    except socket.timeout:
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
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = owner_socket(workspace, store)
        if path is not None:
            return path
        if starter.poll() not in (None, 0):
            # The starter gave up; another starter's owner may still be coming up.
            pass
        time.sleep(0.02)
    starter.poll()
    raise NoOwner(f"no owner answered within {timeout:g} s after starting one "
                  f"(see {os.path.join(store_dir(workspace, store), 'run', 'daemon.log')})")
