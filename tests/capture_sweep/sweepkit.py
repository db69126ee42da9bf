"""Fixtures for capture tests: a workspace with a store folder and a real object store.

Every test runs against the real `ObjectStore` in a temporary folder (no in-memory stand-in, no skip):
what a sweep or a read stores is what a session would store. `CountingObjects` is that store with two
test conveniences: how many puts it saw, and the bytes it holds.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from turnback.store.objects.digest import Hasher
from turnback.store.objects.objectstore import ObjectStore
from turnback.workspace import Workspace


class CountingObjects(ObjectStore):
    """The real object store, counting puts (a test asserts that a refused file was never stored)."""

    def __init__(self, root: Path):
        super().__init__(Path(root), Hasher(12345))
        self.puts = 0

    def put(self, data: bytes) -> str:
        self.puts += 1
        return super().put(data)

    def put_file(self, path, *, max_bytes=None):
        self.puts += 1
        return super().put_file(path, max_bytes=max_bytes)

    @property
    def blobs(self) -> dict[str, bytes]:
        """Every stored object's bytes, by digest (read back and verified)."""
        return {d: self.get(d) for d in self.list()}


def real_objects(root: Path | None = None) -> CountingObjects:
    """A real object store in `root`, or in a fresh temporary folder (for property tests)."""
    return CountingObjects(Path(root) if root is not None else Path(tempfile.mkdtemp()) / "objects")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    (root / ".turnback").mkdir(parents=True)
    return Workspace(root, ".turnback")


@pytest.fixture
def objects(ws: Workspace) -> CountingObjects:
    return real_objects(ws.store_path / "objects")


@pytest.fixture
def mem_objects(objects) -> CountingObjects:
    """The name older tests use; it is the same real store."""
    return objects
