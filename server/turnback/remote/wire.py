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
BACKLOG_WAIT = 1.0  # seconds a connect waits out a full listen queue (EAGAIN), at most


class NoOwner(Exception):
    """No live owner is reachable: no socket, a stale one from a dead owner, or a refused connect."""


class OwnerStarting(NoOwner):
    """An owner was started and its starter still runs, but none answered in time (importing, or
    recovering a crash): one is on its way, so the caller must not open the store itself."""


class RemoteError(Exception):
    """A JSON-RPC error reply (or a failure talking to a live owner), with its stable `code`."""

    def __init__(self, code: str, message: str, data: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = dict(data or {})


def peer(sock) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a connected Unix socket (Linux SO_PEERCRED:
    for a client, the process that listens), or None where the platform does not say."""
    opt = getattr(_socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    import sys  # already imported by the interpreter's start-up: free

    raw = sock.getsockopt(_socket.SOL_SOCKET, opt, 12)  # struct ucred: pid, uid, gid (native ints)
    return (int.from_bytes(raw[0:4], sys.byteorder, signed=True),
            int.from_bytes(raw[4:8], sys.byteorder))


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP, a debugger): it can accept no answer. Linux's
    /proc only; False wherever that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read(512)
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2:][:1]  # the name may hold spaces and parentheses
    return state in (b"T", b"t")


def connect(path: str, timeout: float):
    """A connection to the owner's socket. UnsafeSocket (from paths) when the process listening
    there is another user's: nothing is sent to it."""
    import time  # a C module: nothing to import on the hook path

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    deadline = time.monotonic() + min(timeout, BACKLOG_WAIT)
    while True:
        try:
            sock.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise NoOwner(f"no owner listens on {path} ({exc.strerror})") from None
        except OSError as exc:
            if exc.errno == errno.EAGAIN and time.monotonic() < deadline:
                time.sleep(0.01)  # its queue of connections is full: it takes them in its own time
                continue
            sock.close()
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
                raise NoOwner(f"no owner listens on {path} ({exc.strerror})") from None
            if exc.errno == errno.EAGAIN:
                raise RemoteError("backlog-full", f"the owner at {path} took no connection for "
                                  f"{min(timeout, BACKLOG_WAIT):g} s (its queue is full: it is "
                                  "stopped or overloaded)", {"socket": path}) from None
            raise RemoteError("unreachable", f"cannot reach the owner at {path}: {exc}",
                              {"socket": path}) from None
    who = peer(sock)
    if who is not None and who[1] != _uid():
        sock.close()
        from .paths import UnsafeSocket

        raise UnsafeSocket(f"the process listening on {path} (pid {who[0]}) runs as user {who[1]}, "
                           f"not as you ({_uid()}); refusing to talk to it")
    return sock


def _uid() -> int:
    import os  # already imported by the interpreter's start-up: free

    return os.getuid()


class Reader:
    """LSP `Content-Length` framing over a connected socket, one message body at a time.

    Resumable: a socket timeout in the middle of a message (a big reply arriving slowly, while the
    caller polls in short timeouts) leaves the buffer whole, so the next call reads the same message
    on. It used to consume the header first, and the next call took body bytes for a header."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionResetError("the owner closed the connection")
        self.buf += chunk

    def body(self) -> bytes:
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            if len(self.buf) > MAX_HEADER:
                raise ValueError("header too long")
            self._fill()
        length = None
        for line in bytes(self.buf[:end]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise ValueError("a message without Content-Length")
        start = end + 4
        while len(self.buf) < start + length:
            self._fill()
        body = bytes(self.buf[start:start + length])
        del self.buf[:start + length]
        return body


def framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
