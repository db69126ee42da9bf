"""The owner's private socket (sockets.py): listened on at each reign's start, closed at shutdown.
An owner nobody else can reach gives its lease up (`cannot_serve`)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from ...workbench.ownership import resign
from . import Service

if TYPE_CHECKING:
    from ..server import TurnbackServer
    from ..sockets import Listener

log = logging.getLogger("turnback.lsp")


class ListenerService(Service):
    def __init__(self, server: TurnbackServer) -> None:
        super().__init__(server)
        self.listener: Listener | None = None

    def became_owner(self) -> None:
        self.server.tasks.append(asyncio.get_running_loop().create_task(self.listen()))

    def drop_superseded(self) -> None:
        """The clients of an earlier reign go with its listener."""
        if self.listener is not None and self.listener.superseded:
            self.listener.close(store_too=False)
            self.listener = None

    async def listen(self) -> None:
        """Listen on the private socket; a refusal (an unsafe path) is logged, the server goes on."""
        from ..sockets import Listener

        server = self.server
        wb = server.wb
        if self.listener is not None or server.closed or wb is None or not wb.is_owner:
            return
        listener = Listener(server, str(wb.store.path))
        try:
            path = await listener.start()
        except Exception as exc:
            log.error("not listening on a socket: %s", exc)
            wb.live["socketError"] = str(exc)
            await self.cannot_serve(exc)
            return
        if server.closed or not wb.is_owner:
            listener.close()
            return
        self.listener = listener
        wb.listener = listener  # session/info reports its budgets (methods.py)
        wb.live["socket"] = path
        wb.live.pop("socketError", None)
        server.reign.listening()
        self.clients_changed()

    async def cannot_serve(self, exc: Exception) -> None:
        """An owner nobody else can reach must not keep the lease: the background owner releases it
        and leaves; an editor's sidecar releases it and serves its editor as an observer, trying
        again later (hooks and commands meanwhile open the store themselves)."""
        server = self.server
        wb = server.workbench()
        async with server.lock:
            server.reign.resign()
            server.watcher.stop()
            if self.listener is not None:  # what is left of a socket it can no longer trust
                self.listener.close(store_too=False)
                self.listener = None
                wb.live["socket"] = None
            try:
                resign(wb)
            except Exception:
                log.exception("could not give up the store's ownership")
        if server.background and server.stop_event is not None:
            server.exit_status = 4
            server.stop_event.set()

    def clients_changed(self) -> None:
        server = self.server
        server.last_client_seen = time.monotonic()
        if server.wb is not None and self.listener is not None:
            server.wb.live["clients"] = len(self.listener.connections)

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.close(store_too=self.server.reign.ended != "moved")
            self.listener = None
            if self.server.wb is not None:
                self.server.wb.live["socket"] = None
