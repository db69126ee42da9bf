"""The owner's lease: renewed on time off the loop, and every GUARD_SECONDS a look whether the
folders it opened are still where it opened them (a renamed workspace ends the reign: reign.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from ...errors import NotOwner
from . import LoopService

if TYPE_CHECKING:
    from ...workbench import Workbench

log = logging.getLogger("turnback.lsp")

GUARD_SECONDS = 1.0  # how often an owner looks at its folders' identity (and renews when due)


def renewal_period(wb: Workbench) -> float:
    """Seconds between two renewals: a third of the lease, so two may fail before it lapses."""
    return max(0.5, wb.options.lease_ttl / 3.0)


class LeaseService(LoopService):
    async def run(self) -> None:
        server = self.server
        assert server.wb is not None, "started with an open workbench"
        period = renewal_period(server.wb)
        renewed = time.monotonic()
        while not server.closed:
            await asyncio.sleep(min(GUARD_SECONDS, period))
            wb = server.wb
            if server.closed or wb is None or not wb.is_owner:
                renewed = time.monotonic()
                continue
            if server.reign.moved():
                wb.book.lose_ownership()  # says so (status), and the reign ends as moved
                continue
            if time.monotonic() - renewed < period:
                server.reign.verify()  # a takeover is noticed within a second, requests or not
                server.reign.guard_socket()
                continue
            try:
                await self.renew_off_the_loop(wb)
            except Exception as exc:
                log.error("could not renew ownership of the store: %s", exc)
                if not server.closed:
                    wb.emit_status()
            renewed = time.monotonic()
            server.idle_memory.give_back()

    async def renew_off_the_loop(self, wb: Workbench) -> None:
        """The renewal writes the lease record (a temp file, its fsync, a rename, under the lease's
        lock) on a helper thread: a rename behind a busy journal held the loop for hundreds of
        milliseconds, none of it CPU (docs/performance.md). The record is the lease's own (a
        takeover or a close meets it under the same lock); a lease found lost is handled back
        here, on the loop."""
        owner = wb.book.owner
        if owner is None:
            return
        try:
            await asyncio.to_thread(owner.renew)
        except NotOwner:
            if not self.server.closed and wb.book.owner is owner:
                wb.book.lose_ownership()  # an observer now, and it says so
            raise
