"""The collector's cache of head facts: `cache/collect-heads.cbor` and its in-memory twin.

What it holds, per head: the facts of `scan.HeadFacts` (seq, record size and mtime, created, settled
turn count, fork point, settled flag, body digest, body size). Never a body, never a reference list,
never a manifest: the decision record measured 459 MiB of heap for cached whole manifests against
5.5 MiB for references and sizes. Marking reads the body of each retained head when it needs it.

Head records are immutable, so an entry stays valid for as long as a record with the same seq, size
and modification time exists. The file is a self-checking record; a missing, torn, foreign or corrupt cache loads
empty and costs one cold scan, never a wrong decision. Deleting `cache/` loses nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..store import fs
from ..store.records import decode_record, encode_record
from .scan import HeadFacts, facts_of

KIND = "collect-cache"
FILE_NAME = "collect-heads.cbor"


class HeadCache:
    def __init__(self, path: Path, store_id: str):
        self.path = Path(path)
        self.store_id = store_id
        self.facts: dict[int, HeadFacts] = {}
        self.dirty = False

    @classmethod
    def load(cls, store) -> "HeadCache":
        cache = cls(Path(store.cache_dir) / FILE_NAME, store.store_id)
        try:
            body = decode_record(fs.read_file(cache.path), path=str(cache.path), kind=KIND)
            if body.get("store") != store.store_id:
                raise ValueError("cache of another store")
            for obs in body.get("heads", []):
                facts = facts_of(obs)
                if facts is not None:
                    cache.put(facts)
        except Exception:  # missing, torn, foreign or damaged: start empty (a cold scan)
            cache.facts.clear()
            cache.dirty = bool(cache.path.exists())
        else:
            cache.dirty = False
        return cache

    def get(self, seq: int, stamp: tuple[int, int]) -> HeadFacts | None:
        """The cached facts of head `seq` if its record still has this (size, mtime_ns)."""
        f = self.facts.get(seq)
        return f if f is not None and (f.size, f.mtime_ns) == stamp else None

    def put(self, facts: HeadFacts) -> None:
        # Fork points repeat across many heads: share one string per fork point.
        self.facts[facts.seq] = facts._replace(fork_point=sys.intern(facts.fork_point))
        self.dirty = True

    def drop(self, seq: int) -> None:
        if self.facts.pop(seq, None) is not None:
            self.dirty = True

    def keep_only(self, seqs) -> None:
        """Forget heads that no longer exist."""
        gone = set(self.facts) - set(seqs)
        for seq in gone:
            del self.facts[seq]
        self.dirty = self.dirty or bool(gone)

    def save(self) -> bool:
        """Write the cache if it changed (no fsync: losing it costs a rescan, nothing else)."""
        if not self.dirty:
            return False
        if not self.path.parent.is_dir():
            fs.mkdir(self.path.parent)
        data = encode_record(KIND, {"store": self.store_id,
                                    "heads": [f.to_obs() for _, f in sorted(self.facts.items())]})
        fs.write_atomic(self.path, data, sync=False)
        self.dirty = False
        return True

    def memory_bytes(self) -> int:
        """What the in-memory cache takes: the dict, every tuple and every distinct value in it."""
        return deep_size(self.facts)


def deep_size(obj, seen: set[int] | None = None) -> int:
    """sys.getsizeof summed over an object graph of dicts, lists, tuples, sets and scalars, each
    distinct object counted once (interned strings shared by many heads count once)."""
    seen = set() if seen is None else seen
    stack, total = [obj], 0
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
    return total
