"""The owner's private Unix socket: any number of clients on the one workbench.

Each connection is a small JSON-RPC peer of its own on the server's event loop (LSP framing, the same
method table as stdio), calling `TurnbackServer.call`, so the one mutation lock serialises every
client. `initialize` is optional on the socket (the owner already has its workspace; if sent it is
answered and changes nothing). Notifications reach every connection. A connection that closes with
requests in flight cancels them (a commit past its first file write still runs to its end). Only the
same user may connect (SO_PEERCRED). A client that sends garbage, floods requests, says nothing or
sends more than the budgets allow (`budgets.py`) loses its own connection; the others do not notice.

Where the socket is bound is `sockplace.py`. An owner that loses its lease stops listening at once
(`supersede`): the clients already connected, and those already queued, are answered `not-owner`
with the new owner's pid; new clients find the new owner.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import struct
from collections import Counter
from typing import Any

from .budgets import Budgets, ByteBudget
from .connection import BY_COMMAND, BY_NAME, MAX_MESSAGE, Connection, encode, refusal  # noqa: F401
from .sockplace import Placement, SocketRefused  # noqa: F401 - SocketRefused is part of this API

log = logging.getLogger("turnback.socket")

HEADER_LIMIT = 1 << 16        # bytes of one header line
# Connections closed to make room give their descriptors back only on the loop's next turn: one
# batch of accepts closes at most this many, so a flood never runs the owner out of descriptors.
EVICTIONS_PER_TURN = 8


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's user id (Linux SO_PEERCRED), or None where the platform hides it."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt,
                                                         struct.calcsize("3i")))
    return uid


class Listener:
    """Binds the socket (`sockplace.py`), accepts within the budgets, serves each connection
    (`connection.py`)."""

    def __init__(self, server, store_path: str, budgets: Budgets | None = None):
        self.server = server
        self.store = os.fspath(store_path)
        self.budgets = budgets or Budgets.from_env()
        self.place = Placement(self.store)
        self.path: str | None = None
        self.connections: set[Connection] = set()
        self.bytes = ByteBudget(self.budgets.buffered)
        self.superseded = False
        self.refused: Counter = Counter()
        self.cap = self.budgets.connections
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._admitting = 0  # accepted, admitted, their streams not set up yet
        self._closed = False
        self._serving: set[asyncio.Task] = set()
        self._spare: int | None = None
        self._held = False  # accepting waits for admitted clients to be set up

    async def start(self) -> str:
        self._sock = self.place.bind()
        self.path = self.place.path
        self.cap = self.budgets.cap()
        self._spare = _open_spare()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._sock.fileno(), self._accept_ready)
        log.info("listening on %s (at most %d clients)", self.path, self.cap)
        return self.path

    # -- accepting --------------------------------------------------------------------------------
    # Accepting is synchronous, in the listening socket's reader callback: a client accepted is
    # never lost to a task cancelled between accept and admission (a superseded owner stopping).
    def _accept_ready(self, batch: int = 64) -> None:
        evicted = 0
        for _ in range(batch):
            if self._sock is None:
                return
            if self._full() and self._admitting and self._victim() is None:
                # Every slot is a client still being set up: none is known quiet yet, so turning
                # the next one away would refuse it for a flood's timing. Wait for them in the queue.
                self._hold_accepting()
                return
            if evicted >= EVICTIONS_PER_TURN:
                return  # the listener is still readable: the loop calls again once they are closed
            try:
                client, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    if not self._shed():
                        self._pause_accepting(0.05)  # nothing to give back: look again shortly
                    return
                log.error("accepting a client failed: %s", exc)
                self._pause_accepting(0.05)
                return
            evicted += self._admit(client)

    def _full(self) -> bool:
        return sum(not c.closed for c in self.connections) + self._admitting >= self.cap

    def _victim(self) -> "Connection | None":
        """The connection quiet the longest with no request in flight: the one closed for room."""
        return min((c for c in self.connections if not c.closed and not c.pending),
                   key=lambda c: c.last_active, default=None)

    def _hold_accepting(self) -> None:
        if self._sock is not None and not self._held:
            self._held = True
            self._loop.remove_reader(self._sock.fileno())

    def _release_accepting(self) -> None:
        if self._held:
            self._held = False
            if self._sock is not None:
                self._loop.add_reader(self._sock.fileno(), self._accept_ready)

    def _pause_accepting(self, seconds: float) -> None:
        if self._sock is None:
            return
        self._loop.remove_reader(self._sock.fileno())

        def resume():
            if self._sock is not None:
                self._loop.add_reader(self._sock.fileno(), self._accept_ready)
        self._loop.call_later(seconds, resume)

    def _shed(self) -> bool:
        """Out of descriptors anyway: the spare one lets a queued client be told so, not hang."""
        if self._spare is None or self._sock is None:
            return False
        os.close(self._spare)
        self._spare = None
        try:
            client, _ = self._sock.accept()
        except OSError:
            client = None
        if client is not None:
            self.refused["no-descriptors"] += 1
            self.refused["turned-away"] += 1
            _refuse_raw(client, "too-many-connections", "the owner has no descriptor to spare for "
                        "another client; try again when a client has left")
        self._spare = _open_spare()
        return client is not None

    def _admit(self, client: socket.socket) -> int:
        """Decide at once (the peer, the cap); the streams are set up by a task of its own. Returns
        how many connections were closed to make room (0 or 1)."""
        client.setblocking(False)
        uid = peer_uid(client)
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from user %s (only user %s may attach)", uid, os.getuid())
            self.refused["other-user"] += 1
            client.close()
            return 0
        evicted = 0
        if self._full():
            victim = self._victim()
            self.refused["too-many-connections"] += 1
            if victim is None:
                self.refused["turned-away"] += 1
                _refuse_raw(client, "too-many-connections", f"the owner serves at most {self.cap} "
                            "clients at once and every one is busy; try again")
                return 0
            victim.refuse("too-many-connections", f"the owner serves at most {self.cap} clients at "
                          "once; this connection, quiet the longest, was closed to make room")
            evicted = 1
        self._admitting += 1
        task = self._loop.create_task(self._connect(client))
        self._serving.add(task)
        task.add_done_callback(self._serving.discard)
        return evicted

    async def _connect(self, client: socket.socket) -> None:
        reader = asyncio.StreamReader(limit=HEADER_LIMIT)
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            transport, _ = await self._loop.connect_accepted_socket(lambda: protocol, client)
        except OSError:
            client.close()
            return
        finally:
            self._admitting -= 1
            self._release_accepting()
        writer = asyncio.StreamWriter(transport, protocol, reader, self._loop)
        conn = Connection(self, reader, writer)
        if self._closed:  # the listener closed while this one was being set up
            conn.drop()
            return
        self.connections.add(conn)
        await self._serve(conn)

    async def _serve(self, conn: "Connection") -> None:
        self._clients_changed()
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            self._clients_changed()

    def _clients_changed(self) -> None:
        hook = getattr(self.server, "on_clients_changed", None)
        if hook is not None:
            hook()

    # -- notifications, losing the lease, closing -------------------------------------------------
    def broadcast(self, method: str, params: Any) -> None:
        data = encode({"jsonrpc": "2.0", "method": method, "params": params})
        for conn in list(self.connections):
            conn.send(data)

    async def supersede(self, *, store_too: bool = True) -> None:
        """The lease is lost: every client queued now is taken in to hear why (`not-owner`, naming
        the new owner), then the socket stops listening and its name goes (if still ours; see
        Placement.remove for `store_too`)."""
        if self.superseded:
            return
        self.superseded = True
        while self._sock is not None:
            try:
                client, _ = self._sock.accept()
            except OSError:
                break  # EAGAIN: the queue is empty
            self._admit(client)
        self._stop_accepting()
        self.place.remove(store_too=store_too)
        self.path = None

    def rebind(self) -> str:
        """Listen anew (its socket was removed, replaced or given away under it): the clients
        already connected stay. SocketRefused when there is no place left to listen."""
        self._stop_accepting()
        self.place = Placement(self.store)
        self._sock = self.place.bind()
        self.path = self.place.path
        self._loop.add_reader(self._sock.fileno(), self._accept_ready)
        if self._spare is None:
            self._spare = _open_spare()
        log.info("listening anew on %s", self.path)
        return self.path

    def _stop_accepting(self) -> None:
        sock, self._sock = self._sock, None
        self._held = False
        if sock is not None:
            try:
                self._loop.remove_reader(sock.fileno())
            except (ValueError, RuntimeError):
                pass  # the loop is closing
            sock.close()
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None

    def close(self, *, store_too: bool = True) -> None:
        """Stop accepting, drop every client, remove the socket file (see Placement.remove)."""
        self._closed = True
        self._stop_accepting()
        for conn in list(self.connections):
            conn.drop()
        self.place.remove(store_too=store_too)
        self.path = None

    def unsent_total(self) -> int:
        return sum(c.unsent() for c in self.connections)

    def stats(self) -> dict:
        return {"connections": sum(not c.closed for c in self.connections), "cap": self.cap,
                "buffered": self.bytes.used, "peakBuffered": self.bytes.peak,
                "bufferBudget": self.bytes.total, "refused": dict(self.refused)}


def _open_spare() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _refuse_raw(client: socket.socket, code: str, message: str) -> None:
    """Tell a client that was never admitted why (best effort: it may not read), then close. What
    it already sent is read first: closing over unread bytes resets the connection, and the client
    would see `Connection reset` instead of the reason."""
    try:
        client.setblocking(False)
        client.send(refusal(code, message))
        for _ in range(16):
            if not client.recv(1 << 16):
                break
    except OSError:
        pass  # BlockingIOError: nothing more to read
    finally:
        client.close()
