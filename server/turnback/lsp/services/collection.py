"""Collection: the owner's background loop that collects when something is pending, and the one
`collect` a `turnback/collect/run` request shares with it (one collection at a time)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ...errors import NotOwner
from ...workbench.collection import job_options
from ..progress import Token
from ..slices import SliceStats, cycles_deferred, reclaim_frozen, run_job
from . import LoopService

if TYPE_CHECKING:
    from ..server import TurnbackServer

log = logging.getLogger("turnback.lsp")

COLLECT_IDLE_SECONDS = 1.0
RECLAIM_QUIET_SECONDS = 60  # this long with no mutation: time for one full gc pass (slices.py)
UNAVAILABLE = {"headsRetired": 0, "objectsDeleted": 0, "bytesFreed": 0, "bytesKept": 0,
               "slices": 0, "maxSliceMs": 0.0, "available": False}


class CollectionService(LoopService):
    def __init__(self, server: TurnbackServer) -> None:
        super().__init__(server)
        self.lock = asyncio.Lock()  # one collection at a time (background or requested)
        self.wake = asyncio.Event()

    def kick(self) -> None:
        self.wake.set()

    def became_owner(self) -> None:
        self.kick()

    async def collect(self, token: Token | None = None, *, background: bool = False,
                      params: Any = None) -> dict[str, Any]:
        server = self.server
        wb = server.workbench()
        if not wb.is_owner:
            owner = wb.owner_info()
            raise NotOwner(f"this server is a read-only observer; process {owner.get('pid')} on "
                           f"{owner.get('host')} owns the store and collects it",
                           data={"owner": {"pid": owner.get("pid"), "host": owner.get("host")}})
        feature = wb.collection
        async with self.lock:
            if not hasattr(feature, "job"):
                if hasattr(feature, "run") and not background:
                    async with server.lock:
                        ran: dict[str, Any] = feature.run(dict(params or {}))
                        return ran
                log.info("collection is not available in this build; nothing collected")
                return dict(UNAVAILABLE)
            stats = SliceStats()
            started = time.monotonic()
            server.work_progress.begin(token, "turnback: collecting unreferenced data")
            wb.collecting = True
            wb.emit_status()
            try:
                async with server.lock:
                    job = feature.job(**job_options(params))
                # budget 0: the collector times its own slices; joining two of them held the loop
                with cycles_deferred():
                    result = await run_job(job, lock=server.lock, stats=stats, budget=0.0,
                                           on_step=server.work_progress.collect_reporter(token, stats))
            finally:
                wb.collecting = False
                if not server.closed:
                    wb.emit_status()
                server.work_progress.end(token, "collection finished")
            result = dict(result or {})
            result.setdefault("slices", stats.slices)
            result.setdefault("maxSliceMs", round(stats.max_slice_ms, 3))
            log.info("collection finished in %.1f ms: %s", (time.monotonic() - started) * 1000, result)
            return result

    async def run(self) -> None:
        server = self.server
        quiet = 0  # seconds in a row with nothing to collect and no mutation
        while not server.closed:
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=COLLECT_IDLE_SECONDS)
                quiet = 0
            except asyncio.TimeoutError:
                quiet += 1
                if quiet >= RECLAIM_QUIET_SECONDS and not server.lock.locked():
                    reclaim_frozen()  # once per deferred job: the garbage cycles it left frozen
            self.wake.clear()
            wb = server.wb
            if (wb is None or server.closed or not wb.is_owner or not hasattr(wb.collection, "job")
                    or not getattr(wb.collection, "pending", False)):
                continue
            try:
                token = await server.work_progress.server_token()
                await self.collect(token, background=True)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background collection failed; it will be retried")
            await asyncio.sleep(COLLECT_IDLE_SECONDS)  # coalesce triggers; never spin
