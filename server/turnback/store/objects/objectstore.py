"""Content-addressed, write-once object space, named by the seeded xxh3-128 digest of the raw bytes.

An object lives loose (`objects/ab/cdef…`, loose.py) or in a pack (`objects/pack/`, packs.py), or
both for a while; nothing above this class sees the difference. A batch that writes many small
objects (the first checkpoint above all) writes one pack; fewer, or big ones, are loose files; the
collector moves small loose objects into packs later (collect/repack.py).

Sharing is never trusted to the digest alone: before a put reuses an existing object it confirms size
and bytes, so a crafted collision cannot make a restore return wrong bytes. An existing copy that is
torn or damaged (its bytes no longer hash to its name) does not count: the put writes a sound one.
Every read verifies; a damaged copy is passed over when another copy is sound.

With `compress` (store format 2) a loose object's file may hold a zstd envelope (`envelope.py`); with
`pack` (format 3) batches may write packs. A format-1 store's raw objects read as they always did.

`ObjectStore` is a façade: each concern is a layer of its own file, each building on the one below
(so a read costs no extra call): `space.py` (state, naming) < `reader.py` (get, has, sizes, the
block cache's warming) < `listing.py` (list, damage, remove) < `writer.py` (put, stage, adopt,
put_file, confirming existing copies) < `batches.py` (batch, iter_batch, publish_pack). Consumers
that only read or only remove ask for the narrow `ObjectReader` / `ObjectRemover` (interfaces.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .batches import ObjectBatches

if TYPE_CHECKING:
    from .interfaces import ObjectReader, ObjectRemover

__all__ = ["ObjectStore"]


class ObjectStore(ObjectBatches):
    """The object space of one store (`Store.objects`): every layer of this package in one."""


if TYPE_CHECKING:
    def _views(store: ObjectStore) -> tuple[ObjectReader, ObjectRemover]:
        """mypy's proof that the façade offers both narrow views (never runs)."""
        return store, store
