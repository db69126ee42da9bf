"""zstd contexts kept for the next use by any thread, a few at most, given back when idle.

A context is not thread-safe, so each was kept per thread (`threading.local`); but a context keeps
the workspace of its biggest job: 9.8 MiB for a pack block's compressor (8 MiB window, long-distance
matching), 2.5 MiB for an envelope's after a 1 MiB object. Kept per thread, every helper thread that
ever compressed held its own for as long as it lived (the waiting helpers live 30 s idle), and the
loop's thread for ever: an owner at 250,000 files waited at 217-221 MiB resident, 198-203 with the
helpers ending at once (docs/performance.md, 4 December). Here a use takes a kept context or makes
one, and puts it back unless `keep` are kept already; `drop_idle` (the owner's lease timer) forgets
those unused for a while.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

IDLE_SECONDS = 10.0  # as the pack reader's kept blocks (store/packs.CACHE_IDLE_SECONDS)


class Kept:
    """Contexts made by `make` (zstandard's compressors and decompressors: untyped, hence Any)."""

    def __init__(self, make: Callable[[], Any], keep: int = 1):
        self._make = make
        self._keep = keep
        self._free: list[Any] = []
        self._lock = threading.Lock()
        self._used = 0.0
        _all.append(self)

    def take(self) -> Any:
        """A context for this thread's use alone, until `give`."""
        with self._lock:
            self._used = time.monotonic()
            if self._free:
                return self._free.pop()
        return self._make()

    def give(self, ctx: Any) -> None:
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(ctx)

    @contextmanager
    def use(self) -> Iterator[Any]:
        """`with kept.use() as ctx:` a context of this thread's own for the block."""
        ctx = self.take()
        try:
            yield ctx
        finally:
            self.give(ctx)

    def drop_if_idle(self, idle: float) -> int:
        with self._lock:
            if not self._free or time.monotonic() - self._used < idle:
                return 0
            dropped, self._free = self._free, []
        size: int = sum(c.memory_size() for c in dropped)
        dropped.clear()  # outside the lock: each workspace goes back to the system as it is freed
        return size


_all: list[Kept] = []


def drop_idle(idle: float | None = None) -> int:
    """Forget every kept context none used for `idle` seconds; the bytes given back."""
    idle = IDLE_SECONDS if idle is None else idle
    return sum(kept.drop_if_idle(idle) for kept in _all)
