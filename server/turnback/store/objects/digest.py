"""Content digests: seeded xxh3-128, 32 lowercase hex characters.

The seed is per store (kept in FORMAT). It is not a secret defence against collisions (objects are
always compared byte for byte before sharing); it keeps digests from being predictable across stores.
"""

from __future__ import annotations

import os

import xxhash

DIGEST_LEN = 32
_HEX = frozenset("0123456789abcdef")


def new_seed() -> int:
    """A random 64-bit seed for a new store."""
    return int.from_bytes(os.urandom(8), "big")


def is_digest(text: object) -> bool:
    return isinstance(text, str) and len(text) == DIGEST_LEN and set(text) <= _HEX


class Hasher:
    __slots__ = ("seed",)

    def __init__(self, seed: int):
        if not 0 <= seed < 1 << 64:
            raise ValueError("seed must be an unsigned 64-bit integer")
        self.seed = seed

    def digest(self, data: bytes) -> str:
        return xxhash.xxh3_128_hexdigest(data, seed=self.seed)

    def stream(self) -> "xxhash.xxh3_128":
        """An incremental hasher: `.update(chunk)`, then `.hexdigest()`."""
        return xxhash.xxh3_128(seed=self.seed)
