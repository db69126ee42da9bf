"""An observer's line to the live owner: the second editor is a client of the one sidecar too.

An editor whose `turnback serve` finds the store owned (by the background owner, or another editor)
would otherwise be a read-only observer. While the owner answers on its socket, this server keeps one
connection to it: every contract request is forwarded and answered by the owner, and the owner's
notifications reach this editor. When the owner goes away the connection closes, and the observer's
take-over poll makes this server the owner, as before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging

from pygls.exceptions import JsonRpcException

from ..remote.client import frame

log = logging.getLogger("turnback.relay")


class RelayGone(Exception):
    """The owner's connection closed; the caller answers locally."""


class Relay:
    def __init__(self, on_notification):
        self.on_notification = on_notification
        self.pending: dict[int, asyncio.Future] = {}
        self.ids = itertools.count(1)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task | None = None
        self.closed = False

    async def open(self, path: str) -> None:
        self.reader, self.writer = await asyncio.open_unix_connection(path, limit=1 << 26)
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def request(self, method: str, params) -> object:
        if self.closed:
            raise RelayGone()
        msg_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = future
        try:
            self.writer.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method,
                                     "params": params}))
            reply = await future
        except asyncio.CancelledError:
            if not self.closed:
                self.writer.write(frame({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                         "params": {"id": msg_id}}))
            raise
        finally:
            self.pending.pop(msg_id, None)
        if "error" in reply:
            err = reply["error"] or {}
            raise JsonRpcException(code=err.get("code", -32603), message=err.get("message", ""),
                                   data=err.get("data"))
        return reply.get("result")

    def notify(self, method: str, params) -> None:
        if not self.closed:
            self.writer.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def _read(self) -> None:
        try:
            while True:
                length = None
                while True:
                    line = await self.reader.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None:
                    return
                message = json.loads(await self.reader.readexactly(length))
                if "id" in message and "method" not in message:
                    future = self.pending.get(message["id"])
                    if future is not None and not future.done():
                        future.set_result(message)
                elif isinstance(message.get("method"), str):
                    self.on_notification(message["method"], message.get("params"))
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
            log.info("the owner's connection broke: %s", exc)
        finally:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self.pending.values():
            if not future.done():
                future.set_exception(RelayGone())
        if self.writer is not None:
            self.writer.close()
