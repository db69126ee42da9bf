"""`turnback gc` merges every small pack into one (`packAll`, as `git gc` repacks everything), so each
version of a file finds its base in the new pack and is stored as a delta. An owner collects after
every turn: each turn's objects went into a pack of their own, no delta reached an older pack, and
mypy's store stayed 1.58x git's after `turnback gc` (0.90x for the same history collected once)."""

from __future__ import annotations

from turnback.store.objects.packformat import DELTA

from .conftest import age_objects, assert_sound, open_wb, turn


def _packs(wb) -> list:
    wb.store.objects.packs.refresh(force=True)
    return list(wb.store.objects.packs.packs.values())


def _deltas(packs) -> int:
    return sum(1 for p in packs for i in range(p.doc.count) if p.doc.entry(i)[0].kind == DELTA)


def _module(k: int, n: int) -> str:
    return "".join(f"def f{k}_{i}(x):\n    return x * {i} + {k}\n" for i in range(120)) + f"# {n}\n"


def test_a_collection_with_pack_all_merges_the_small_packs_into_one_with_deltas(ws):
    wb = open_wb(ws, publish_interval=600.0)  # a publication per turn, not one per file
    try:
        turn(wb, ws, "all", [(f"src/m{k}.py", _module(k, 0)) for k in range(240)])
        for n in range(1, 4):  # as an owner does: a collection after every turn
            age_objects(wb.store)
            wb.collection.run()
            turn(wb, ws, f"edit {n}", [(f"src/m{k}.py", _module(k, n)) for k in range(70)])
        age_objects(wb.store)
        wb.collection.run()
        before = _packs(wb)
        assert len(before) >= 2, before  # each turn's versions in a pack apart from their bases
        before_deltas, before_bytes = _deltas(before), sum(p.pack_path.stat().st_size for p in before)
        age_objects(wb.store)
        stats = wb.collection.run({"packAll": True})
        after = _packs(wb)
        assert len(after) == 1 and stats["packsWritten"] == 1, (before, after)
        assert _deltas(after) >= 3 * 70 > before_deltas, (before_deltas, _deltas(after))
        assert after[0].pack_path.stat().st_size < before_bytes
        known = wb.book.state.known
        for k in range(240):
            assert wb.store.objects.get(known[f"src/m{k}.py"]).decode() == _module(k, 3 if k < 70 else 0)
    finally:
        wb.close()
    assert_sound(ws / ".turnback")


def _loose(wb) -> list[str]:
    root = wb.store.objects.root
    return [f"{fan.name}/{f.name}" for fan in root.iterdir() if fan.name != "pack" and fan.is_dir()
            for f in fan.iterdir()]


def test_pack_all_packs_every_loose_object_however_few(ws):
    """A turn's publication leaves a few loose objects (fewer than a collection's MIN_LOOSE): an
    owner's collection leaves them loose, `turnback gc` (packAll) packs them and removes their
    fan-out folders, as `git gc` leaves no loose object."""
    wb = open_wb(ws, publish_interval=600.0)
    try:
        turn(wb, ws, "all", [(f"src/m{k}.py", _module(k, 0)) for k in range(240)])
        age_objects(wb.store)
        wb.collection.run()
        turn(wb, ws, "one", [("src/m0.py", _module(0, 1))])
        age_objects(wb.store)
        wb.collection.run()
        left = _loose(wb)
        assert 0 < len(left) < 64, left  # too few for an ordinary collection to pack
        age_objects(wb.store)
        wb.collection.run({"packAll": True})
        assert _loose(wb) == []
        assert [f for f in wb.store.objects.root.iterdir() if f.name != "pack"] == []
        assert len(_packs(wb)) == 1
        assert wb.store.objects.get(wb.book.state.known["src/m0.py"]).decode() == _module(0, 1)
    finally:
        wb.close()
    assert_sound(ws / ".turnback")
