"""What the owner's socket may cost: connections, silence, buffered bytes, descriptors.

An owner is shared by every client of a workspace, so no client (a bug, or an attacker of the same
user) may take it all: a cap on connections (and the one quiet the longest makes room for a new one),
a limit on connections that say nothing, one budget of request bytes held across all connections,
one of answers queued for clients that do not read, and descriptors kept in reserve, so the lease's
renewal, a publication and the watcher never fail with `Too many open files`. Past a budget the
client hears a JSON-RPC error with a stable `data.code` (id null: it may have sent no request yet)
and its connection closes; every other client is still answered. `TURNBACK_SOCKET_BUDGETS`
("connections=8,first_message=0.5", any of the fields below) changes them, for tests and tuning.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, fields

log = logging.getLogger("turnback.socket")


@dataclass
class Budgets:
    connections: int = 256          # clients at once (fewer when RLIMIT_NOFILE is low: see cap)
    reserve_fds: int = 64           # descriptors never spent on clients
    first_message: float = 10.0     # seconds a new connection may take to send its first message
    message_stall: float = 30.0     # seconds a message, once begun, may take to arrive whole
    buffered: int = 160 << 20       # request bytes held at once, across connections
    budget_wait: float = 30.0       # seconds a body may wait for room in `buffered`
    unsent: int = 16 << 20          # answers queued for one client that does not read them
    unsent_total: int = 64 << 20    # the same, across connections

    @classmethod
    def from_env(cls, environ=None) -> "Budgets":
        spec = (environ if environ is not None else os.environ).get("TURNBACK_SOCKET_BUDGETS", "")
        budgets = cls()
        kinds = {f.name: f.type for f in fields(cls)}
        for item in filter(None, (part.strip() for part in spec.split(","))):
            name, _, value = item.partition("=")
            name = name.strip()
            if name not in kinds:
                log.warning("TURNBACK_SOCKET_BUDGETS: no budget named %r (ignored)", name)
                continue
            try:
                setattr(budgets, name, int(value) if kinds[name] in (int, "int") else float(value))
            except ValueError:
                log.warning("TURNBACK_SOCKET_BUDGETS: %s=%r is not a number (ignored)", name, value)
        return budgets

    def cap(self) -> int:
        """Connections allowed now: the configured cap, or what the descriptor limit leaves once
        the descriptors in use and the reserve are counted, whichever is smaller."""
        try:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (ImportError, ValueError, OSError):
            return self.connections
        if soft == getattr(resource, "RLIM_INFINITY", -1):
            return self.connections
        try:
            in_use = len(os.listdir("/proc/self/fd"))
        except OSError:
            in_use = 64
        return max(1, min(self.connections, soft - in_use - self.reserve_fds))


class ByteBudget:
    """Bytes held at once across connections; a taker waits (its client's sends stall in the
    kernel: back pressure) until there is room, or gives up after a while."""

    def __init__(self, total: int):
        self.total = total
        self.used = 0
        self.peak = 0
        self._changed = asyncio.Event()

    async def take(self, n: int, wait: float) -> bool:
        if n > self.total:
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while self.used + n > self.total:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                return False
        self.used += n
        self.peak = max(self.peak, self.used)
        return True

    def give(self, n: int) -> None:
        self.used -= n
        self._changed.set()
