"""Decoded state objects kept by digest, so travel reads a shard or a turn once, not once per look.

Objects are write-once and content-addressed: a digest names the same payload for ever, so what
was decoded once can be answered again without reading (and inflating) it. Redo's listing compares
every left-behind state with the current one shard by shard, and Redo itself reads the state it
brings back: without this, each of those reads is an object read, and a packed one inflates a
solid block (docs/performance.md, "Travel on real histories").

The cache is bounded by weight (paths of a known shard, files and steps of a turn), never by
count alone, and dropped whole when the owner goes idle (`clear`), so nothing big outlives the
work that needed it. Payloads are shared: callers copy before they change one.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

# About 40 MiB of decoded paths and digests at most, whatever the workspace's size.
MAX_WEIGHT = 200_000
IDLE_SECONDS = 30.0  # unused this long: an owner's idle timer drops it (`drop_if_idle`)


class ParsedCache:
    def __init__(self, max_weight: int = MAX_WEIGHT):
        self.max_weight = max_weight
        self._items: OrderedDict[str, tuple[object, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()  # a listing's helper thread and the job's thread both read
        self.hits = self.misses = 0
        self._used = 0.0

    def get(self, digest: str):
        with self._lock:
            self._used = time.monotonic()
            hit = self._items.get(digest)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(digest)
            self.hits += 1
            return hit[0]

    def put(self, digest: str, payload, weight: int) -> None:
        weight = max(1, weight)
        if weight > self.max_weight:
            return  # one object past the whole budget: read again when needed, never kept
        with self._lock:
            self._used = time.monotonic()
            old = self._items.pop(digest, None)
            if old is not None:
                self._weight -= old[1]
            self._items[digest] = (payload, weight)
            self._weight += weight
            while self._weight > self.max_weight:
                _d, (_p, w) = self._items.popitem(last=False)
                self._weight -= w

    def forget(self, digests) -> None:
        with self._lock:
            for d in digests:
                old = self._items.pop(d, None)
                if old is not None:
                    self._weight -= old[1]

    def clear(self) -> int:
        """Drop everything; the weight given back."""
        with self._lock:
            freed, self._weight = self._weight, 0
            self._items = OrderedDict()
        return freed

    def drop_if_idle(self, idle: float = IDLE_SECONDS) -> int:
        """`clear` once nothing was read or kept for `idle` seconds; the weight given back."""
        if not self._items or time.monotonic() - self._used < idle:
            return 0
        return self.clear()

    def __len__(self) -> int:
        return len(self._items)
