"""The background work of a serving process, one service each, started and stopped together.

`TurnbackServer.start_services` fans `start` out once its workbench is open (the editor's
`initialized`, or the background owner's start), `became_owner` whenever a reign begins (opened as
the owner, a takeover, the store taken back) and `stop` at shutdown. The set is closed and
its order is the server's (`server.py`): the loops first, then the socket, then the watcher.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server import TurnbackServer


class Service:
    """A part of the server that lives while its workbench is open."""

    def __init__(self, server: TurnbackServer) -> None:
        self.server = server

    def start(self) -> None:
        """The workbench is open (as its owner or as an observer)."""

    def became_owner(self) -> None:
        """A reign begins: this process owns the store from now on."""

    def stop(self) -> None:
        """The server shuts down: no more work, whatever was under way."""


class LoopService(Service):
    """A service that is one task on the server's loop, from `start` to `stop`."""

    def __init__(self, server: TurnbackServer) -> None:
        super().__init__(server)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def run(self) -> None:
        raise NotImplementedError
