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
# One int object per distinct mode: a state keeps every file's mode, and 250,000 ints of 32 bytes
# each (a read store's, or a walk's, made one by one between short-lived objects) pinned memory an
# owner never gave back. A tree has a handful of distinct modes.
_MODES = {m: m for m in range(0o10000)}


def one_mode(mode: int) -> int:
    """The shared int object for permission bits `mode` (0 to 0o7777)."""
    return _MODES.get(mode, mode)
_ids = itertools.count(1)
_NONE = object()


def shard_of(rel: str) -> int:
    return zlib.crc32(rel.encode()) % SHARDS


class KnownMap(MutableMapping):
    """Beside each image, the permission bits it was seen with (`mode`), kept in the same shards."""

    __slots__ = ("map_id", "generations", "_shards", "_modes")

    def __init__(self, data=None, modes=None, **kw):
        self.map_id = next(_ids)  # a copy is a new map: its shards are encoded afresh once
        self.generations = [0] * SHARDS
        self._shards: list[dict] = [{} for _ in range(SHARDS)]
        self._modes: list[dict] = [{} for _ in range(SHARDS)]
        if data is not None:
            self.update(data)
        if kw:
            self.update(kw)
        for rel, mode in (modes or {}).items():
            self.set_mode(rel, mode)

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

    def shard_modes(self, i: int) -> dict:
        """The modes of shard i (read only); empty for paths never seen with a mode."""
        return self._modes[i]

    def mode(self, rel: str) -> int | None:
        """The permission bits of the last known image of `rel`, or None when never recorded."""
        return self._modes[shard_of(rel)].get(rel)

    def modes(self) -> dict:
        return {rel: m for shard in self._modes for rel, m in shard.items()}

    def set_mode(self, rel: str, mode: int | None) -> None:
        i = shard_of(rel)
        shard = self._modes[i]
        if type(mode) is int:
            mode = _MODES.get(mode, mode)
        if mode is None:
            if rel in shard:
                del shard[rel]
                self.generations[i] += 1
        elif shard.get(rel) != mode:
            shard[rel] = mode
            self.generations[i] += 1

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
        self._modes[i].pop(rel, None)
        self.generations[i] += 1

    def update(self, other=(), **kw) -> None:
        pairs = other.items() if hasattr(other, "items") else other
        for rel, image in pairs:
            self[rel] = image
        for rel, image in kw.items():
            self[rel] = image

    def clear(self) -> None:
        for i, shard in enumerate(self._shards):
            if shard or self._modes[i]:
                shard.clear()
                self._modes[i].clear()
                self.generations[i] += 1

    # -- copies ------------------------------------------------------------------------------
    def copy(self) -> "KnownMap":
        return KnownMap(self, self.modes())

    def __deepcopy__(self, memo) -> "KnownMap":
        return KnownMap(self, self.modes())  # strings and ints: sharing them is deep enough

    def __reduce__(self):
        return (KnownMap, (dict(self.items()), self.modes()))

    def __repr__(self) -> str:
        return f"KnownMap({len(self)} paths)"
