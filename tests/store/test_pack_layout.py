"""The pack layout for random reads (docs/storage-format.md 3b, "Why small blocks"): one object's
read inflates at most its small block, never megabytes; packs of the earlier layout (8 MiB blocks,
no level in the header) still read, and the collector rewrites them at its next run."""

from __future__ import annotations

import os
import random

from turnback.store.objects import packs as packs_mod, packwrite
from turnback.workbench import Options, Workbench


def _text(seed: int, size: int) -> bytes:
    r = random.Random(seed)
    words = [b"def", b"return", b"self", b"value", b"import", b"class", b"None", b"for", b"in"]
    out = bytearray()
    while len(out) < size:
        out += r.choice(words) + b" " + str(r.randrange(10**6)).encode() + b"\n"
    return bytes(out[:size])


def _inflations(monkeypatch) -> list[int]:
    sizes = []
    real = packs_mod.inflate

    def counting(stored, raw_size, pack=None):
        sizes.append(raw_size)
        return real(stored, raw_size, pack)

    monkeypatch.setattr(packs_mod, "inflate", counting)
    return sizes


def test_one_read_inflates_at_most_its_small_block(tmp_path, monkeypatch):
    wb = Workbench.open(tmp_path)
    try:
        objects = wb.store.objects
        datas = [_text(i, 40 << 10) for i in range(120)]  # 4.7 MiB: one block of the old layout
        with objects.batch():
            digests = [objects.put(d) for d in datas]
        assert not list(objects.list_loose())
        objects.packs.drop_cache()
        sizes = _inflations(monkeypatch)
        for i in (0, 57, 119):
            assert objects.get(digests[i]) == datas[i]
        assert sizes and max(sizes) <= packwrite.BLOCK_RAW <= 512 << 10, sizes  # never megabytes
        assert sum(sizes) <= 3 * packwrite.BLOCK_RAW
    finally:
        wb.close()


def test_a_pack_of_the_earlier_layout_reads_and_the_collector_rewrites_it(tmp_path, monkeypatch):
    real_header = packwrite.pack_header
    monkeypatch.setattr(packwrite, "pack_header", lambda pack_id, level=0: real_header(pack_id, 0))
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    files = {f"src/m{i}.py": _text(1000 + i, 3000) for i in range(80)}
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    wb = Workbench.open(root, Options(grace_heads=0, grace_seconds=0.0, publish_interval=0.0))
    try:
        n = wb.run(wb.turns.begin_job({"prompt": "first"}))["turn"]  # the first sweep: one pack
        wb.run(wb.turns.settle_job({"turn": n}))
        packs = list(wb.store.objects.packs.packs.values())
        assert packs and {p.made_at() for p in packs} == {0}  # written as the earlier layout did
        monkeypatch.setattr(packwrite, "pack_header", real_header)
        for pack in packs:  # older than the collection (it never touches packs written during it)
            os.utime(pack.pack_path, (pack.pack_path.stat().st_mtime - 60,) * 2)
        stats = wb.collection.run()
        assert stats["packsWritten"] == 1 and stats["packsDeleted"] >= 1
        wb.store.objects.packs.refresh(force=True)
        after = list(wb.store.objects.packs.packs.values())
        assert {p.made_at() for p in after} == {packwrite.REPACK_LEVEL}
        known = wb.book.state.known
        for rel, data in files.items():
            assert wb.store.objects.get(known[rel]) == data
    finally:
        wb.close()
    from turnback.store.fsck import fsck

    assert fsck(root / ".turnback").ok
