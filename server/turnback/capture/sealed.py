"""The envelope of turnback's small rebuildable cache files (the stat cache, the kept ignore rules):
a four-byte magic, a CBOR document `{version, ...}`, and the xxh3-64 of both as a trailer, so a
damaged or foreign file is refused whole instead of being half believed."""

from __future__ import annotations

import io

import cbor2
import xxhash


def seal(magic: bytes, version: int, fields: dict) -> bytes:
    head = magic + cbor2.dumps({"version": version, **fields})
    return head + xxhash.xxh3_64_digest(head)


def unseal(magic: bytes, version: int, data: bytes, what: str) -> dict:
    """The document inside `data`; raises ValueError on anything unexpected."""
    if len(data) < len(magic) + 8 or data[: len(magic)] != magic:
        raise ValueError(f"not {what}")
    head, tail = data[:-8], data[-8:]
    if xxhash.xxh3_64_digest(head) != tail:
        raise ValueError("checksum mismatch")
    fp = io.BytesIO(head[len(magic):])
    doc = cbor2.CBORDecoder(fp).decode()
    if fp.tell() != len(head) - len(magic):
        raise ValueError("trailing bytes")
    if not isinstance(doc, dict) or doc.get("version") != version:
        raise ValueError("unknown version")
    return doc
