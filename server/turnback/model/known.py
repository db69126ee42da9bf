"""The known-image map: path -> last known image, kept in 64 shards that know when they changed.

A publication writes the map as one object per shard. Each shard carries a generation that every
change bumps, so the codec encodes again only the shards that changed, reading them straight from
here. The map is stored only as its shards (no second copy of the paths); every mutation goes through
the methods below, so no caller can change a shard unseen.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator, MutableMapping

SHARDS = 64
_ids = itertools.count(1)
_NONE = object()


def shard_of(rel: str) -> int:
    return zlib.crc32(rel.encode()) % SHARDS


class KnownMap(MutableMapping):
    __slots__ = ("map_id", "generations", "_shards")

    def __init__(self, data=None, **kw):
        self.map_id = next(_ids)  # a copy is a new map: its shards are encoded afresh once
        self.generations = [0] * SHARDS
        self._shards: list[dict] = [{} for _ in range(SHARDS)]
        if data is not None:
            self.update(data)
        if kw:
            self.update(kw)

    # -- reading -----------------------------------------------------------------------------
    def __getitem__(self, rel: str):
        return self._shards[shard_of(rel)][rel]

    def get(self, rel: str, default=None):
        return self._shards[shard_of(rel)].get(rel, default)

    def __contains__(self, rel) -> bool:
        return isinstance(rel, str) and rel in self._shards[shard_of(rel)]

    def __iter__(self) -> Iterator[str]:
        for shard in self._shards:
            yield from shard

    def __len__(self) -> int:
        return sum(len(s) for s in self._shards)

    def items(self):
        return itertools.chain.from_iterable(s.items() for s in self._shards)

    def values(self):
        return itertools.chain.from_iterable(s.values() for s in self._shards)

    def shard(self, i: int) -> dict:
        """Shard i itself, for the codec to encode (read only)."""
        return self._shards[i]

    # -- changing ----------------------------------------------------------------------------
    def __setitem__(self, rel: str, image) -> None:
        i = shard_of(rel)
        shard = self._shards[i]
        if shard.get(rel, _NONE) != image:
            self.generations[i] += 1
            shard[rel] = image

    def __delitem__(self, rel: str) -> None:
        i = shard_of(rel)
        del self._shards[i][rel]
        self.generations[i] += 1

    def update(self, other=(), **kw) -> None:
        pairs = other.items() if hasattr(other, "items") else other
        for rel, image in pairs:
            self[rel] = image
        for rel, image in kw.items():
            self[rel] = image

    def clear(self) -> None:
        for i, shard in enumerate(self._shards):
            if shard:
                shard.clear()
                self.generations[i] += 1

    # -- copies ------------------------------------------------------------------------------
    def copy(self) -> "KnownMap":
        return KnownMap(self)

    def __deepcopy__(self, memo) -> "KnownMap":
        return KnownMap(self)  # paths and images are strings: sharing them is deep enough

    def __reduce__(self):
        return (KnownMap, (dict(self.items()),))

    def __repr__(self) -> str:
        return f"KnownMap({len(self)} paths)"
