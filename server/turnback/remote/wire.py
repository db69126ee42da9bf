"""The bytes of a connection to the owner: connecting, and reading one LSP-framed message.

Below the thin client (client.py) and the hook's fast path (hooks/fast.py). It uses the C modules
`_socket` and nothing that pulls in `enum` or `re` (the `socket` and `json` modules both do, and
importing them costs an agent's hook several milliseconds on every event); what a message means is
left to the caller.
"""

from __future__ import annotations

import _socket
import errno

MAX_HEADER = 1 << 16


class NoOwner(Exception):
    """No live owner is reachable: no socket, a stale one from a dead owner, or a refused connect."""


class RemoteError(Exception):
    """A JSON-RPC error reply (or a failure talking to a live owner), with its stable `code`."""

    def __init__(self, code: str, message: str, data: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = dict(data or {})


def connect(path: str, timeout: float):
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
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


class Reader:
    """LSP `Content-Length` framing over a connected socket, one message body at a time."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionResetError("the owner closed the connection")
        self.buf += chunk

    def body(self) -> bytes:
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEADER:
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
        return body


def framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
