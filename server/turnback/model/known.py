"""The known-image map: path -> last known image, kept in shards that know when they changed.

A publication writes the map as 64 shard objects. Re-encoding and re-hashing every shard at every
publication made publishing a large workspace cost the whole map each time; instead each shard carries
a generation that every change bumps, so the codec re-encodes only the shards that changed. Every
mutation of a dict goes through the overrides below, so no caller can change the map unseen.
"""

from __future__ import annotations

import itertools
import zlib

SHARDS = 64
_ids = itertools.count(1)


def shard_of(rel: str) -> int:
    return zlib.crc32(rel.encode()) % SHARDS


class KnownMap(dict):
    __slots__ = ("map_id", "generations")

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.map_id = next(_ids)  # a copy is a new map: its shards are encoded afresh once
        self.generations = [0] * SHARDS

    def _touch(self, rel: str) -> None:
        self.generations[shard_of(rel)] += 1

    def __setitem__(self, rel, image) -> None:
        if dict.get(self, rel, _NONE) != image:
            self._touch(rel)
        super().__setitem__(rel, image)

    def __delitem__(self, rel) -> None:
        super().__delitem__(rel)
        self._touch(rel)

    def update(self, *args, **kw) -> None:
        for rel, image in dict(*args, **kw).items():
            self[rel] = image

    def setdefault(self, rel, default=None):
        if rel not in self:
            self[rel] = default
        return dict.__getitem__(self, rel)

    def pop(self, rel, *default):
        if rel in self:
            self._touch(rel)
        return super().pop(rel, *default)

    def popitem(self):
        rel, image = super().popitem()
        self._touch(rel)
        return rel, image

    def clear(self) -> None:
        super().clear()
        self.generations = [g + 1 for g in self.generations]

    def __ior__(self, other):
        self.update(other)
        return self

    def copy(self) -> "KnownMap":
        return KnownMap(self)

    def __deepcopy__(self, memo) -> "KnownMap":
        return KnownMap(self)  # keys and images are strings: a shallow copy of them is deep enough

    def __reduce__(self):
        return (KnownMap, (dict(self),))


_NONE = object()
