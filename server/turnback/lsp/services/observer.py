"""An observer's loop: it follows the owner's publications, attaches to the live owner's socket
(relay.py), and takes the store over the normal way once the owner is gone (reign.py)."""

from __future__ import annotations

import asyncio
import logging
import time

from . import LoopService

log = logging.getLogger("turnback.lsp")

OBSERVER_POLL_SECONDS = 1.0


class ObserverService(LoopService):
    async def run(self) -> None:
        server = self.server
        wb = server.wb
        if wb is None:
            return
        while not server.closed:
            await asyncio.sleep(OBSERVER_POLL_SECONDS)
            if server.closed or wb.is_owner or server.reign.ended == "moved" or server.background:
                continue  # a background owner that is no owner any more is leaving (reign.py)
            if server.relay is not None and not server.relay.closed:
                continue  # the owner answers (relay.py): there is nothing to take over
            if time.monotonic() >= server.reign.retry_at:
                await self.take_over_now()
            if not wb.is_owner and not server.closed:
                async with server.lock:
                    try:
                        wb.follow()  # the owner's new gaps and heads reach this client too
                        wb.emit_status()
                    except Exception:
                        log.exception("could not follow the owner")
            if not wb.is_owner and (server.relay is None or server.relay.closed):
                await self.attach()

    async def take_over_now(self) -> bool:
        """Own the store if its owner is gone (the normal open-and-recover path); True if owner."""
        server = self.server
        wb = server.wb
        if wb is None or server.closed or server.reign.ended == "moved":
            return False
        async with server.lock:
            if wb.is_owner:
                return True
            try:
                if not wb.try_take_over():
                    return False
            except Exception:
                log.exception("could not take over the store")
                return False
            log.info("the owner went away; this server now owns the store")
            server.became_owner()
            return True

    async def attach(self) -> None:
        """Connect to the live owner's socket, when there is one, and relay to it."""
        from ..relay import attach

        await attach(self.server)

    def detach(self) -> None:
        """No line to another owner: this process owns the store now."""
        server = self.server
        if server.relay is not None:
            server.relay.close()
            server.relay = None
            if server.wb is not None:
                server.wb.live.pop("attachedTo", None)
