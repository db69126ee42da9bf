"""The hook spool: an owner replays, every few seconds, the hook events no owner could take when
they came (hookhost.py), so they are recorded even when no other hook event arrives."""

from __future__ import annotations

from ..hookhost import spool_loop
from . import LoopService


class SpoolService(LoopService):
    async def run(self) -> None:
        await spool_loop(self.server)
