"""Listing the object space and reporting damage: what the collector and fsck walk and delete.

`list` names every object once, loose or packed; `damage` says in a few words what is wrong with an
object when no copy is sound; `remove` deletes a loose file (packed copies go when the collector
rewrites their pack, collect/repack.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from .. import fs
from . import loose
from .digest import Digest, is_digest
from .reader import ObjectReading

__all__ = ["ObjectListing"]


class ObjectListing(ObjectReading):
    def verify(self, digest: Digest) -> bool:
        return self.damage(digest) is None

    def damage(self, digest: Digest) -> str | None:
        """None if a copy of the object is sound; else what is wrong with it, in a few words."""
        b = self._holder(digest)
        if b is not None and digest in b.pending:
            return loose.damage(b.pending[digest][0], digest, self.hasher, self.limit)
        try:
            reason = loose.damage(self.path(digest), digest, self.hasher, self.limit)
        except FileNotFoundError:
            reason = None if self.packs.locate(digest) is not None else "missing"
        else:
            if reason is None:
                return None
        got = self._get_packed(digest)
        if isinstance(got, bytes):
            return None
        if got is not None:
            said = got.data.get("reason") or got.message
            return str(said)
        return reason

    def list(self) -> Iterator[Digest]:
        """Every object name, loose or packed, each once (pending batch objects are not listed)."""
        seen = set()
        for digest in self.list_loose():
            seen.add(digest)
            yield digest
        for digest in self.packs.digests():
            if digest not in seen:
                yield digest

    def list_loose(self) -> Iterator[Digest]:
        try:
            fans = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return
        for fan in fans:
            if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                continue
            try:
                entries = sorted(os.listdir(fan.path))
            except FileNotFoundError:  # emptied and removed since the scan: a live owner's collection
                continue
            for entry in entries:
                digest = fan.name + entry
                if is_digest(digest):
                    yield digest

    def remove(self, digest: Digest) -> None:
        """Delete an object's loose file. For the collector only, after it proved nothing references
        it (packed copies go when their pack is rewritten: collect/repack.py)."""
        self.removals += 1
        fs.unlink(self.path(digest), missing_ok=True)
