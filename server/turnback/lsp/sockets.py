"""The owner's private Unix socket: any number of clients on the one workbench.

Each connection is a small JSON-RPC peer of its own on the server's event loop (LSP framing, the same
method table as stdio), calling `TurnbackServer.call`, so the one mutation lock serialises every
client. `initialize` is optional on the socket (the owner already has its workspace; if sent it is
answered and changes nothing). Notifications reach every connection. A connection that closes with
requests in flight cancels them (a commit past its first file write still runs to its end). Only the
same user may connect (SO_PEERCRED). A client that sends garbage or floods requests loses its own
connection; the others do not notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import struct
from typing import Any

from pygls.exceptions import JsonRpcException

from ..errors import TurnbackError
from ..remote.paths import (POINTER_NAME, SOCKET_NAME, check_private, fits, pointer_path,
                            preferred_socket, run_dir)
from ..store import fsio
from .errors import METHOD_NOT_FOUND, to_rpc
from .methods import METHODS, command_name

log = logging.getLogger("turnback.socket")

MAX_MESSAGE = 1 << 26         # bytes: one message larger than this closes the connection
MAX_IN_FLIGHT = 32            # requests per connection; reading pauses beyond that (back pressure)
MAX_UNSENT = 16 << 20         # bytes queued for a client that does not read: it is dropped
BY_NAME = {spec.name: spec for spec in METHODS}
BY_COMMAND = {command_name(spec.name): spec for spec in METHODS}


class SocketRefused(TurnbackError):
    code = "unsafe-socket"


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's user id (Linux SO_PEERCRED), or None where the platform hides it."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt,
                                                         struct.calcsize("3i")))
    return uid


def _encode(message: dict) -> bytes:
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Listener:
    """Binds the socket (replacing a stale one, refusing an unsafe one) and serves connections."""

    def __init__(self, server, store_path: str):
        self.server = server
        self.store = os.fspath(store_path)
        self.path: str | None = None
        self.connections: set[Connection] = set()
        self._aio: asyncio.base_events.Server | None = None
        self._ino: int | None = None

    async def start(self) -> str:
        path = preferred_socket(self.store)
        folder = os.path.dirname(path)
        fsio.mkdir(folder, mode=0o700, parents=True, exist_ok=True)
        fsio.chmod(folder, 0o700)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise SocketRefused(f"the socket folder {folder} is not a folder of yours; not listening")
        self._clear_stale(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound under a private name, made 0600, then renamed into place: a client (or a racing
        # starter) that looks between bind and chmod would see the socket open to others and refuse
        # it as unsafe. The name is shorter than the real one, so it fits wherever that fits.
        staged = os.path.join(folder, f".o{os.getpid()}")
        try:
            if os.path.lexists(staged):
                fsio.unlink(staged)
            sock.bind(staged)
            fsio.chmod(staged, 0o600)
            fsio.rename(staged, path)
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            if os.path.lexists(staged):
                fsio.unlink(staged, missing_ok=True)
            raise
        self._ino = os.lstat(path).st_ino
        if path != os.path.join(run_dir(self.store), SOCKET_NAME):
            fsio.mkdir(run_dir(self.store), mode=0o700, parents=True, exist_ok=True)
            fsio.write_atomic(pointer_path(self.store), path.encode() + b"\n", sync=False)
        self._aio = await asyncio.start_unix_server(self._accept, sock=sock, limit=MAX_MESSAGE)
        self.path = path
        log.info("listening on %s", path)
        return path

    def _clear_stale(self, path: str) -> None:
        """A socket file left by a dead owner is removed; anything else there is refused."""
        if not os.path.lexists(path):
            return
        try:
            check_private(path)
        except Exception as exc:
            raise SocketRefused(f"{exc}; not listening (remove it if it is yours)") from None
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            log.info("removing the stale socket %s of an owner that is gone", path)
            fsio.unlink(path, missing_ok=True)
            return
        finally:
            probe.close()
        raise SocketRefused(f"another process already listens on {path}; not listening")

    def broadcast(self, method: str, params: Any) -> None:
        data = _encode({"jsonrpc": "2.0", "method": method, "params": params})
        for conn in list(self.connections):
            conn.send(data)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from user %s (only user %s may attach)", uid, os.getuid())
            writer.close()
            return
        conn = Connection(self.server, reader, writer)
        self.connections.add(conn)
        self.server.on_clients_changed()
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            self.server.on_clients_changed()

    def close(self) -> None:
        """Stop accepting, drop every client, remove the socket file."""
        if self._aio is not None:
            self._aio.close()
            self._aio = None
        for conn in list(self.connections):
            conn.drop()
        self.remove_file()

    def remove_file(self) -> None:
        """Unlink the socket (and the pointer) only if they are still this owner's."""
        path, self.path = self.path, None
        if path is None:
            return
        with contextlib.suppress(OSError):
            if os.lstat(path).st_ino == self._ino:
                fsio.unlink(path, missing_ok=True)
        pointer = os.path.join(run_dir(self.store), POINTER_NAME)
        with contextlib.suppress(OSError):
            if not fits(os.path.join(run_dir(self.store), SOCKET_NAME)):
                fsio.unlink(pointer, missing_ok=True)


class Connection:
    """One attached client: reads framed messages, runs each request as its own task."""

    def __init__(self, server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.pending: dict[Any, asyncio.Task] = {}
        self.closed = False

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        transport = self.writer.transport
        if transport.is_closing():
            self.drop()
            return
        if transport.get_write_buffer_size() > MAX_UNSENT:
            log.warning("dropping a client that does not read its messages")
            self.drop()
            return
        self.writer.write(data)

    def drop(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()

    async def run(self) -> None:
        try:
            while not self.closed:
                message = await self._read()
                if message is None:
                    break
                await self._dispatch(message)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            # A client gone mid-request is a cancellation of what it asked for.
            for task in self.pending.values():
                task.cancel()
            self.drop()

    async def _read(self) -> dict | None:
        length = None
        while True:
            line = await self.reader.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = -1
        if length is None or length < 0 or length > MAX_MESSAGE:
            log.warning("closing a connection that sent a bad header (Content-Length %r)", length)
            return None
        body = await self.reader.readexactly(length)
        try:
            message = json.loads(body)
        except ValueError:
            self._error(None, -32700, "the message is not valid JSON", "parse-error")
            return {}
        return message if isinstance(message, dict) else {"_bad": message}

    async def _dispatch(self, message: dict) -> None:
        method, msg_id = message.get("method"), message.get("id")
        if not message:
            return
        if not isinstance(method, str):
            if "id" in message and ("result" in message or "error" in message):
                return  # a response to nothing we asked: ignored
            self._error(msg_id if _valid_id(msg_id) else None, -32600,
                        "not a JSON-RPC request or notification", "invalid-request")
            return
        params = message.get("params")
        if "id" not in message:
            await self._notification(method, params)
            return
        if not _valid_id(msg_id):
            log.warning("ignoring a request whose id is not a string or number: %r", msg_id)
            return
        while len(self.pending) >= MAX_IN_FLIGHT:
            await asyncio.wait(list(self.pending.values()), return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.get_running_loop().create_task(self._request(msg_id, method, params))
        self.pending[msg_id] = task
        task.add_done_callback(lambda _t, key=msg_id: self.pending.pop(key, None))

    async def _notification(self, method: str, params: Any) -> None:
        if method == "$/cancelRequest" and isinstance(params, dict):
            task = self.pending.get(params.get("id"))
            if task is not None:
                task.cancel()
        elif method == "exit":
            self.drop()
        elif method == "textDocument/didSave" and isinstance(params, dict):
            uri = (params.get("textDocument") or {}).get("uri")
            if isinstance(uri, str):
                await self.server.capture_uris([uri], "after")
        elif method == "workspace/didChangeWatchedFiles" and isinstance(params, dict):
            uris = [c.get("uri") for c in params.get("changes") or [] if isinstance(c, dict)]
            await self.server.capture_uris([u for u in uris if isinstance(u, str)], "after", "watch")
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
            self.send(_encode({"jsonrpc": "2.0", "id": msg_id, "error": {
                "code": rpc.code, "message": rpc.message,
                "data": {k: v for k, v in data.items() if k != "traceback"}}}))
            return
        self.send(_encode({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    async def _answer(self, method: str, params: Any):
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

    def _error(self, msg_id, code: int, message: str, name: str) -> None:
        self.send(_encode({"jsonrpc": "2.0", "id": msg_id,
                           "error": {"code": code, "message": message, "data": {"code": name}}}))


def _valid_id(msg_id) -> bool:
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)


def _local(params):
    """A socket client's params without a work-done token: progress goes to the stdio client only."""
    if isinstance(params, dict) and "workDoneToken" in params:
        return {k: v for k, v in params.items() if k != "workDoneToken"}
    return params
