"""One client on the owner's socket: framed messages read within the budgets, requests as tasks.

The reading side enforces what `budgets.py` says a client may cost: a first message within
`first_message` seconds of connecting, every message whole within `message_stall` seconds once
begun, its bytes counted against the listener's one `ByteBudget` until its request has been answered
(waiting for room stalls that client alone), at most MAX_IN_FLIGHT requests at once. The writing side
drops a client that does not read its answers. A superseded listener (its owner lost the lease)
answers every request `not-owner`, `turnback/daemon/stop` excepted.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from typing import Any

from pygls.exceptions import JsonRpcException

from ..errors import TurnbackError
from .editor import capture_uris
from .encoding import Encoded, encoded, response_text
from .errors import METHOD_NOT_FOUND, to_rpc
from .methods import METHODS, command_name

log = logging.getLogger("turnback.socket")

MAX_MESSAGE = 1 << 26         # bytes: one message larger than this closes the connection
MAX_IN_FLIGHT = 32            # requests per connection; reading pauses beyond that (back pressure)
BY_NAME = {spec.name: spec for spec in METHODS}
BY_COMMAND = {command_name(spec.name): spec for spec in METHODS}
STILL_ANSWERED = ("turnback/daemon/stop", "initialize", "shutdown")  # by a superseded owner too


def encode(message: dict) -> bytes:
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def refusal(code: str, message: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": None,
                   "error": {"code": -32000, "message": message, "data": {"code": code}}})


class Connection:
    """One attached client: reads framed messages within the budgets, runs each request as a task."""

    def __init__(self, listener, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter):
        self.listener = listener
        self.server = listener.server
        self.budgets = listener.budgets
        self.reader = reader
        self.writer = writer
        self.pending: dict[Any, asyncio.Task] = {}
        self.closed = False
        self.messages = 0
        self.connected = self.last_active = time.monotonic()

    def unsent(self) -> int:
        return 0 if self.closed else self.writer.transport.get_write_buffer_size()

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        transport = self.writer.transport
        if transport.is_closing():
            self.drop()
            return
        queued = transport.get_write_buffer_size()
        if queued > self.budgets.unsent or (
                queued > (1 << 20) and self.listener.unsent_total() > self.budgets.unsent_total):
            log.warning("dropping a client that does not read its messages (%d bytes queued)", queued)
            self.listener.refused["not-reading"] += 1
            self.drop()
            return
        self.writer.write(data)

    def refuse(self, code: str, message: str) -> None:
        """Say why (id null: it may have no request in flight), then close."""
        log.warning("closing a client connection: %s", message)
        if not self.closed:
            self.writer.write(refusal(code, message))
        self.drop()

    def drop(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()

    def _give(self, n: int) -> None:
        self.listener.bytes.give(n)

    async def run(self) -> None:
        try:
            while not self.closed:
                read = await self._read()
                if read is None:
                    break
                message, size = read
                await self._dispatch(message, size)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # ValueError: a header line over HEADER_LIMIT
        finally:
            # A client gone mid-request is a cancellation of what it asked for.
            for task in self.pending.values():
                task.cancel()
            self.drop()

    async def _within(self, awaitable, deadline: float, code: str, why: str):
        try:
            return await asyncio.wait_for(awaitable, max(0.001, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            self.listener.refused[code] += 1
            self.refuse(code, why)
            return None

    async def _read(self) -> tuple[dict, int] | None:
        b = self.budgets
        if self.messages == 0:  # a client that never says anything must not hold a connection
            line = await self._within(self.reader.readline(), self.connected + b.first_message,
                                      "idle", f"nothing was sent within {b.first_message:g} s "
                                      "of connecting")
        else:
            line = await self.reader.readline()
        if not line:
            return None
        stall = time.monotonic() + b.message_stall
        why = f"a message was not sent whole within {b.message_stall:g} s"
        length = None
        while line not in (b"\r\n", b"\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = -1
            line = await self._within(self.reader.readline(), stall, "stalled", why)
            if not line:
                return None
        if length is None or length < 0 or length > MAX_MESSAGE:
            log.warning("closing a connection that sent a bad header (Content-Length %r)", length)
            return None
        if not await self.listener.bytes.take(length, b.budget_wait):
            self.listener.refused["over-budget"] += 1
            self.refuse("over-budget", f"the owner holds {self.listener.bytes.used} bytes of "
                        f"requests already (budget {self.listener.bytes.total}); a message of "
                        f"{length} bytes waited {b.budget_wait:g} s for room and was refused")
            return None
        body = None
        try:
            body = await self._within(self.reader.readexactly(length),
                                      time.monotonic() + b.message_stall, "stalled", why)
        finally:
            if body is None:  # the message never came whole: its share of the budget goes back
                self.listener.bytes.give(length)
        if body is None:
            return None
        self.messages += 1
        self.last_active = time.monotonic()
        try:
            message = json.loads(body)
        except ValueError:
            self._error(None, -32700, "the message is not valid JSON", "parse-error")
            return {}, length
        return (message if isinstance(message, dict) else {"_bad": message}), length

    async def _dispatch(self, message: dict, size: int) -> None:
        queued = False
        try:
            queued = await self._route(message, size)
        finally:
            if not queued:
                self._give(size)

    async def _route(self, message: dict, size: int) -> bool:
        """Handle one message; True when a request task took over its share of the budget."""
        method, msg_id = message.get("method"), message.get("id")
        if not message:
            return False
        if not isinstance(method, str):
            if "id" in message and ("result" in message or "error" in message):
                return False  # a response to nothing we asked: ignored
            self._error(msg_id if _valid_id(msg_id) else None, -32600,
                        "not a JSON-RPC request or notification", "invalid-request")
            return False
        params = message.get("params")
        if "id" not in message:
            await self._notification(method, params)
            return False
        if not _valid_id(msg_id):
            log.warning("ignoring a request whose id is not a string or number: %r", msg_id)
            return False
        while len(self.pending) >= MAX_IN_FLIGHT:
            await asyncio.wait(list(self.pending.values()), return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.get_running_loop().create_task(self._request(msg_id, method, params))
        self.pending[msg_id] = task
        task.add_done_callback(functools.partial(self._done, msg_id, size))
        return True

    def _done(self, msg_id: Any, size: int, _task: asyncio.Task) -> None:
        self._finished(msg_id, size)

    def _finished(self, msg_id, size: int) -> None:
        self.pending.pop(msg_id, None)
        self._give(size)
        self.last_active = time.monotonic()

    async def _notification(self, method: str, params: Any) -> None:
        if method == "$/cancelRequest" and isinstance(params, dict):
            task = self.pending.get(params.get("id"))
            if task is not None:
                task.cancel()
        elif method == "exit":
            self.drop()
        elif self.listener.superseded:
            return  # no longer the owner: an editor's events are the new owner's to capture
        elif method == "textDocument/didSave" and isinstance(params, dict):
            uri = (params.get("textDocument") or {}).get("uri")
            if isinstance(uri, str):
                await capture_uris(self.server, [uri], "after")
        elif method == "workspace/didChangeWatchedFiles" and isinstance(params, dict):
            uris = [c.get("uri") for c in params.get("changes") or [] if isinstance(c, dict)]
            await capture_uris(self.server, [u for u in uris if isinstance(u, str)], "after",
                               "watch")
        # initialized, didOpen/didClose and the rest: nothing to do for a socket client

    async def _request(self, msg_id, method: str, params: Any) -> None:
        try:
            result = await self._answer(method, params)
        except asyncio.CancelledError:
            if not self.closed:
                self._error(msg_id, -32800, f"{method} was cancelled", "cancelled")
            raise
        except Exception as exc:
            rpc = to_rpc(exc, method)
            data = rpc.data if isinstance(rpc.data, dict) else {}
            self.send(encode({"jsonrpc": "2.0", "id": msg_id, "error": {
                "code": rpc.code, "message": rpc.message,
                "data": {k: v for k, v in data.items() if k != "traceback"}}}))
            return
        text = await encoded(result, ensure_ascii=False, default=str)  # in slices: never one hold
        if isinstance(text, Encoded):
            body = response_text(msg_id, text).encode("utf-8")
            self.send(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        else:
            self.send(encode({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    async def _answer(self, method: str, params: Any):
        if method not in STILL_ANSWERED and not self._still_owner():
            raise self.server.superseded_error()
        if method == "initialize":
            from .. import __version__

            return {"capabilities": {"executeCommandProvider": {"commands": sorted(BY_COMMAND)}},
                    "serverInfo": {"name": "turnback", "version": __version__}}
        if method == "shutdown":
            return None
        if method == "workspace/executeCommand":
            if not isinstance(params, dict) or not isinstance(params.get("command"), str):
                raise to_rpc(TurnbackError("executeCommand needs {command, arguments}",
                                           code="invalid-params"))
            spec = BY_COMMAND.get(params["command"])
            args = params.get("arguments") or []
            if spec is None:
                raise JsonRpcException(code=METHOD_NOT_FOUND, message=f"no command {params['command']}",
                                       data={"code": "method-not-found"})
            if not isinstance(args, list) or len(args) > 1:
                raise to_rpc(TurnbackError(f"{spec.command} takes one argument (the params object)",
                                           code="invalid-params"))
            return await self.server.call(spec, _local(args[0] if args else {}))
        spec = BY_NAME.get(method) or self.server.extra_methods.get(method)
        if spec is None:
            raise JsonRpcException(code=METHOD_NOT_FOUND, message=f"turnback has no method {method}",
                                   data={"code": "method-not-found", "method": method})
        return await self.server.call(spec, _local(params))

    def _still_owner(self) -> bool:
        """Whether this process may answer as the owner: checked before every request, so an owner
        woken after a takeover answers `not-owner` at once (reign.py)."""
        if self.listener.superseded:
            return False
        reign = getattr(self.server, "reign", None)
        if reign is None:
            return True  # a bare listener (tests)
        reign.verify()
        wb = self.server.wb
        return wb is not None and wb.is_owner and reign.ended is None

    def _error(self, msg_id, code: int, message: str, name: str) -> None:
        self.send(encode({"jsonrpc": "2.0", "id": msg_id,
                           "error": {"code": code, "message": message, "data": {"code": name}}}))


def _valid_id(msg_id) -> bool:
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)


def _local(params):
    """A socket client's params without a work-done token: progress goes to the stdio client only."""
    if isinstance(params, dict) and "workDoneToken" in params:
        return {k: v for k, v in params.items() if k != "workDoneToken"}
    return params
