"""Fixtures for capture tests: a workspace with a store folder and an object store.

The real ObjectStore is used when it is importable; otherwise (while the store floor is still being
built) a small in-memory double with the same public methods stands in.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import xxhash

from turnback.workspace import Workspace


class MemoryObjects:
    """put / put_file / get / has / stat, in memory; records what was stored."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.puts = 0

    def put(self, data: bytes) -> str:
        d = xxhash.xxh3_128_hexdigest(bytes(data))
        self.blobs[d] = bytes(data)
        self.puts += 1
        return d

    def put_file(self, path, *, max_bytes=None):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                from turnback.errors import InvalidParams
                raise InvalidParams("not a regular file")
            chunks = []
            while b := os.read(fd, 1 << 20):
                chunks.append(b)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if max_bytes is not None and len(data) > max_bytes:
            from turnback.errors import TooLarge
            raise TooLarge("too large", data={"size": len(data), "limit": max_bytes})
        return self.put(data), len(data)

    def get(self, digest: str) -> bytes:
        return self.blobs[digest]

    def has(self, digest: str) -> bool:
        return digest in self.blobs

    def stat(self, digest: str):
        b = self.blobs.get(digest)
        return None if b is None else len(b)


def _real_store(path: Path):
    try:
        from turnback.store.digest import Hasher
        from turnback.store.objects import ObjectStore
    except ImportError:
        return None
    return ObjectStore(path, Hasher(12345))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    (root / ".turnback").mkdir(parents=True)
    return Workspace(root, ".turnback")


@pytest.fixture(params=["real", "memory"])
def objects(request, ws: Workspace):
    if request.param == "real":
        store = _real_store(ws.store_path / "objects")
        if store is None:
            pytest.skip("turnback.store.objects is not available yet")
        return store
    return MemoryObjects()


@pytest.fixture
def mem_objects() -> MemoryObjects:
    return MemoryObjects()
