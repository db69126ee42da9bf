"""The narrow views of the object space its consumers are given (typing.Protocol, checked by mypy
only: nothing here runs), after restic's `restic.Repository` interfaces.

`ObjectReader` is what travel reads with (the transaction's disk writes, the Redo's and rewind's
derivations): names, sizes and verified bytes, never a put or a delete. `ObjectRemover` is what the
collector's sweep lists and deletes with; it cannot read or write objects. `ObjectStore` satisfies
both.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from .digest import Digest, Hasher
from .loose import CHUNK

__all__ = ["ObjectReader", "ObjectRemover"]


class ObjectReader(Protocol):
    @property
    def hasher(self) -> Hasher: ...

    def has(self, digest: str) -> bool: ...

    def stat(self, digest: Digest) -> int | None: ...

    def stored_size(self, digest: Digest) -> int | None: ...

    def get(self, digest: Digest) -> bytes: ...

    def iter_chunks(self, digest: Digest, chunk_size: int = CHUNK) -> Iterator[bytes]: ...

    def read_order(self, digests: Iterable[Digest]) -> list[Digest]: ...

    def iter_warm(self, digest: Digest) -> Generator[Any, Any, None]: ...


class ObjectRemover(Protocol):
    removals: int  # the remover counts its removals (readers' caches of digests may lie after one)

    @property
    def root(self) -> Path: ...

    @property
    def batch_open(self) -> bool: ...

    def list(self) -> Iterator[Digest]: ...

    def list_loose(self) -> Iterator[Digest]: ...

    def remove(self, digest: Digest) -> None: ...
