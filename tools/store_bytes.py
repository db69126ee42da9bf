"""Where a turnback store's bytes are: its files by part (packs, indexes, loose objects, caches,
heads, folders at their apparent size), and inside the packs each object's share by kind (file
images or text, deltas, and the session's CBOR objects by their kind `t`). A block member's share
is its block's stored bytes times its part of the block's raw bytes; a delta costs its frame.

    python tools/store_bytes.py WORKSPACE_OR_STORE

Reads only; verifies nothing (`turnback fsck` does). docs/performance.md ("Bytes after collection
on real histories") has its figures for requests and mypy.
"""

from __future__ import annotations

import collections
import os
import sys
from pathlib import Path

import cbor2

from turnback.store.objects.packformat import BLOCK, DELTA, decode_index
from turnback.store.objects.packs import inflate


def _kind(obj: bytes) -> str:
    if obj[:1] in (b"\xa1", b"\xa2", b"\xa3"):  # a CBOR map of 1-3 keys: {"t", "v", "p"}
        try:
            doc = cbor2.loads(obj)
        except Exception:  # noqa: BLE001 - not CBOR after all: a file that starts like it
            return "file/text"
        if isinstance(doc, dict) and isinstance(doc.get("t"), str):
            return "cbor:" + doc["t"]
    return "file/text"


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    if (root / ".turnback").is_dir():
        root = root / ".turnback"
    parts: collections.Counter = collections.Counter()
    for folder, _dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        parts["folders (apparent size)"] += os.lstat(folder).st_size
        for name in files:
            size = os.lstat(os.path.join(folder, name)).st_size
            if rel == os.path.join("objects", "pack"):
                key = "pack indexes" if name.endswith(".idx") else "packs"
            elif rel.split(os.sep)[0] == "objects":
                key = "loose objects"
            else:
                key = rel.split(os.sep)[0] if rel != "." else "top files"
            parts[key] += size
    for key, size in parts.most_common():
        print(f"{key:24s} {size:12,d}")
    print(f"{'total':24s} {sum(parts.values()):12,d}\n")
    stored: collections.Counter = collections.Counter()
    raw: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for index in sorted((root / "objects" / "pack").glob("*.idx")):
        doc = decode_index(index.read_bytes())
        pack = index.with_suffix(".pack").read_bytes()
        block: tuple[int, bytes] | None = None
        for i in range(doc.count):
            seg, start, size, _base = doc.entry(i)
            if seg.kind == DELTA:
                kind, share = "delta", seg.stored
            else:
                if block is None or block[0] != seg.offset:
                    data = pack[seg.offset:seg.offset + seg.stored]
                    block = (seg.offset, inflate(data, seg.raw) if seg.kind == BLOCK else data)
                kind, share = _kind(block[1][start:start + size]), seg.stored * size / seg.raw
            stored[kind] += share
            raw[kind] += size
            count[kind] += 1
    print(f"{'in the packs':24s} {'objects':>8s} {'raw':>12s} {'stored':>12s}")
    for kind, share in stored.most_common():
        print(f"{kind:24s} {count[kind]:8,d} {raw[kind]:12,d} {int(share):12,d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
