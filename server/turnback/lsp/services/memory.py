"""Idle memory: what an owner keeps for its next read or compression goes back once unused for a
while. Asked after each lease renewal (lease.py), so an idle owner gives it back within a lease
period and a busy one never pays for it between two turns."""

from __future__ import annotations

import logging

from ...store import memory, waiting
from ...store.objects import zstdctx
from . import Service

log = logging.getLogger("turnback.lsp")


class IdleMemoryService(Service):
    def give_back(self) -> int:
        """The pack blocks kept for the next read and the zstd contexts kept for the next
        compression go once none was used for a while; the bytes given back. On the loop:
        dropping a few big buffers, each returned to the system as it is freed."""
        wb = self.server.wb
        freed = zstdctx.drop_idle()
        packs = getattr(getattr(wb.store, "objects", None), "packs", None) if wb else None
        try:
            if packs is not None:
                freed += packs.drop_cache_if_idle()
        except Exception:  # noqa: BLE001 - memory, not state: the next renewal tries again
            log.exception("could not drop the idle pack cache")
        codec = getattr(getattr(wb, "book", None), "codec", None)
        parsed = getattr(codec, "parsed", None)
        if parsed is not None and parsed.drop_if_idle():  # decoded shards and turns (parsed.py)
            freed = freed or 1
        if freed:  # once an idle spell begins: what the heap kept of the last turn goes back too
            waiting.in_thread(memory.give_back)
        return freed
