"""fsck's checks of `objects/pack/`: every index, every pack, every object inside one (read-only).

Found and named: an index that does not decode (truncated, a bad checksum, impossible tables), an
index that names a missing pack, a pack of the wrong size (truncated) or whose trailer does not
match its bytes, and each packed object that does not read back to its digest, with the reason (a
segment that fails its checksum, a delta whose base is damaged). A pack without an index holds
nothing anyone can see: a warning (left by an interrupted write; the next owner removes it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import xxhash

from . import fs
from .objects.packformat import PACK_HEADER, PACK_MAGIC, TRAILER
from .objects.packs import PackDamage, PackSet

_NAME = re.compile(r"^[0-9a-f]{32}\.(pack|idx)$")


def check_packs(store, report) -> None:
    folder = store.objects.packs.folder
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return
    packs = PackSet(folder, store.hasher)  # a fresh view: fsck trusts nothing this process cached
    packs.refresh(force=True)
    for name in names:
        if fs.is_temp_name(name):
            continue
        if not _NAME.match(name):
            report.add(folder / name, "unexpected file in objects/pack/")
    for stem, why in sorted(packs.broken.items()):
        report.add(folder / f"{stem}.idx", f"the pack index is damaged: {why}")
    for name in names:
        if name.endswith(".pack") and _NAME.match(name) and name[:-5] + ".idx" not in names:
            report.add(folder / name, "a pack without an index (left by an interrupted write; the "
                                      "next owner removes it)", "warning")
    for pack in sorted(packs.packs.values(), key=lambda p: p.name):
        if _check_pack_file(pack, report):
            _check_objects(packs, pack, report)


def _check_pack_file(pack, report) -> bool:
    """The pack's size, header and trailer against its index; False when its objects cannot be
    read at all (then each is named once, below, as unreadable)."""
    path = pack.pack_path
    try:
        fd = fs.open_read(path)
    except FileNotFoundError:
        report.add(pack.index_path, f"the index names a missing pack ({path.name}); its "
                                    f"{pack.doc.count} object(s) cannot be read")
        return False
    try:
        size = os.fstat(fd).st_size
        if size != pack.doc.pack_size:
            report.add(path, f"the pack is {size} bytes, its index says {pack.doc.pack_size} "
                             f"({'truncated' if size < pack.doc.pack_size else 'grown'})")
        head = os.pread(fd, PACK_HEADER, 0)
        if head[:4] != PACK_MAGIC or head[8:24] != pack.doc.pack_id:
            report.add(path, "the pack's header does not match its index")
        h = xxhash.xxh3_128()
        at, end = 0, max(0, size - TRAILER)
        while at < end:
            chunk = os.pread(fd, min(1 << 20, end - at), at)
            if not chunk:
                break
            h.update(chunk)
            at += len(chunk)
        trailer = os.pread(fd, TRAILER, end)
        if size == pack.doc.pack_size and (trailer != pack.doc.pack_digest
                                           or h.digest() != pack.doc.pack_digest):
            report.add(path, "the pack fails its checksum (damaged bytes inside it)")
    finally:
        os.close(fd)
    return True


def _check_objects(packs: PackSet, pack, report) -> None:
    doc = pack.doc
    # In segment order, so each block is inflated once.
    order = sorted(range(doc.count), key=doc.segment_of)
    for i in order:
        report.objects_checked += 1
        digest = doc.digest_at(i).hex()
        try:
            packs.read(pack, i)
        except PackDamage as exc:
            report.add(pack.pack_path, f"object {digest} in pack {pack.name} is damaged: {exc.reason}")
        except OSError as exc:
            report.add(pack.pack_path, f"object {digest} in pack {pack.name} is unreadable: {exc}")


def pack_files(folder: Path) -> list[Path]:
    try:
        return sorted(Path(folder, n) for n in os.listdir(folder) if _NAME.match(n))
    except FileNotFoundError:
        return []
