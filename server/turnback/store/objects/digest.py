"""Content digests: seeded xxh3-128, 32 lowercase hex characters, typed as `Digest`.

The seed is per store (kept in FORMAT). It is not a secret defence against collisions (objects are
always compared byte for byte before sharing); it keeps digests from being predictable across stores.

`Digest` is a `typing.NewType` over `str`, not a class: digests are made, hashed into sets and
dicts, compared and sliced by the million (a sweep of 250,000 files, a collector's mark), and a
NewType costs nothing at run time (a digest *is* the hex string; `Digest(s)` is the identity
function, and this module does not even call it), where a `str` subclass or a wrapper would cost a call per digest and lose str's fast
paths in dict lookups. The type checker still tells a digest from any other string: a digest comes
from `Hasher.digest`, from `is_digest` (a type guard), or from a listing of the store.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, NewType, cast

import xxhash

if TYPE_CHECKING:
    from typing import TypeGuard

__all__ = ["DIGEST_LEN", "Digest", "Hasher", "is_digest", "new_seed"]

Digest = NewType("Digest", str)

DIGEST_LEN = 32
_HEX = frozenset("0123456789abcdef")
# xxhash's own function, typed as giving a Digest: `Hasher.digest` wraps nothing (no `Digest(...)`
# call per object; NewType's call is a Python function call).
_hexdigest = cast(Callable[..., Digest], xxhash.xxh3_128_hexdigest)


def new_seed() -> int:
    """A random 64-bit seed for a new store."""
    return int.from_bytes(os.urandom(8), "big")


def is_digest(text: object) -> "TypeGuard[Digest]":
    return isinstance(text, str) and len(text) == DIGEST_LEN and set(text) <= _HEX


class Hasher:
    __slots__ = ("seed",)

    def __init__(self, seed: int):
        if not 0 <= seed < 1 << 64:
            raise ValueError("seed must be an unsigned 64-bit integer")
        self.seed = seed

    def digest(self, data: bytes) -> Digest:
        return _hexdigest(data, seed=self.seed)

    def stream(self) -> "xxhash.xxh3_128":
        """An incremental hasher: `.update(chunk)`, then `.hexdigest()`."""
        return xxhash.xxh3_128(seed=self.seed)
