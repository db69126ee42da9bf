"""A small socket client for tests: keeps its connection, collects notifications, sends requests."""

from __future__ import annotations

import json
import socket
import time

from turnback.remote.client import _Reader, frame


class SocketClient:
    def __init__(self, path: str, timeout: float = 20.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.reader = _Reader(self.sock)
        self.notifications: list[dict] = []
        self.next_id = 1

    def send(self, message: dict) -> None:
        self.sock.sendall(frame(message))

    def request(self, method: str, params=None) -> dict:
        msg_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            reply = self.reader.message()
            if "method" in reply and "id" not in reply:
                self.notifications.append(reply)
            elif reply.get("id") == msg_id:
                return reply

    def reply(self, msg_id) -> dict:
        """The answer to a request sent with `send`; notifications before it are kept."""
        while True:
            reply = self.reader.message()
            if reply.get("id") == msg_id:
                return reply
            self.notifications.append(reply)

    def result(self, method: str, params=None):
        reply = self.request(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    def drain(self, seconds: float = 0.3) -> list[dict]:
        """Collect the notifications that arrive within `seconds`."""
        self.sock.settimeout(0.05)
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                try:
                    self.notifications.append(self.reader.message())
                except socket.timeout:
                    continue
        finally:
            self.sock.settimeout(20.0)
        return self.notifications

    def methods(self) -> list[str]:
        return [n.get("method") for n in self.notifications]

    def close(self) -> None:
        self.sock.close()


async def socket_of(tb) -> str:
    """The socket an editor's sidecar (a pytest-lsp server) listens on, once it does."""
    import asyncio

    for _ in range(400):
        info = await tb.req("turnback/session/info", {})
        if info.get("socket"):
            return info["socket"]
        await asyncio.sleep(0.02)
    raise AssertionError("the owner never reported a socket")


def raw(path: str, data: bytes) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(data)
    return s


def dumps(message) -> bytes:
    return json.dumps(message).encode()
