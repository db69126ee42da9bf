"""The collector's repack: small loose objects move into a pack, versions of a file become deltas, a
pack with garbage is rewritten and then deleted, and no interruption (a failed operation, a device
that stays broken, a full disk, a crash, a power cut) loses a referenced object or leaves a delta
whose base is gone."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from sessionkit import assert_faulted

from turnback.collect import repack, repackplan
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.layout import Store
from turnback.store.objects.packformat import DELTA, NONE

from .conftest import (assert_sound, expected_live, expire_lease, open_wb, rewind, run_py, turn)

BASE = "".join(f"line {i} of a long module that changes a little every turn\n" for i in range(300))


def age(store_path, seconds=3600.0):
    """Every object (loose or packed) looks old: the collector leaves newer ones alone."""
    t = time.time() - seconds
    for folder, _dirs, files in os.walk(store_path / "objects"):
        for f in files:
            os.utime(os.path.join(folder, f), (t, t))


def edits(tag, t, files=6):
    return [(f"m{k}.py", BASE + f"# {tag} {t} file {k}\n" * (t + 1)) for k in range(files)]


def save_between_turns(wb, root, tag, files=6):
    """The user saves every file while no turn runs: the current head names these versions until
    the next save replaces them (then only retired heads name them: garbage)."""
    for rel, text in edits(tag, 0, files):
        (root / rel).write_text(text)
        wb.turns.capture({"uris": [(root / rel).as_uri()]})


def kinds(store):
    """(objects packed whole, objects packed as deltas) over every pack."""
    whole = deltas = 0
    for pack in store.objects.packs.packs.values():
        for i in range(pack.doc.count):
            if pack.doc.entry(i)[0].kind == DELTA:
                deltas += 1
            else:
                whole += 1
    return whole, deltas


def test_a_collection_packs_loose_objects_and_stores_versions_as_deltas(ws):
    wb = open_wb(ws)
    for t in range(5):
        turn(wb, ws, f"t{t}", edits("turn", t))
    loose_before = len(list(wb.store.objects.list_loose()))
    age(wb.store.path)
    stats = wb.collection.run()
    assert stats["packsWritten"] == 1 and stats["deltas"] >= 10, stats
    live = expected_live(wb.store, wb.state)
    assert all(wb.store.objects.verify(d) for d in live)
    assert len(list(wb.store.objects.list_loose())) < loose_before / 4
    whole, deltas = kinds(wb.store)
    assert deltas >= 10
    # Each older version costs a frame of a few hundred bytes against its successor.
    image = wb.state.turn(2).files["m0.py"].before
    assert wb.store.objects.stored_size(image) < 600
    r = rewind(wb, 2)
    assert r["status"] == "committed" and (ws / "m0.py").read_text() == BASE + "# turn 0 file 0\n"
    wb.close()
    assert_sound(ws / ".turnback")


def _pack_then_garbage(ws, monkeypatch, before: int, after: int):
    """Turns, saves between turns, a collection that packs them; then new saves (the first ones
    become garbage in that pack) and more turns. Returns the workbench and the first pack."""
    monkeypatch.setattr(repackplan, "DEAD_SHARE", 0.01)
    wb = open_wb(ws)
    for t in range(before):
        turn(wb, ws, f"t{t}", edits("turn", t))
    save_between_turns(wb, ws, "saved once")
    age(wb.store.path)
    wb.collection.run()
    (first,) = wb.store.objects.packs.packs.values()
    save_between_turns(wb, ws, "saved again")  # the first saves become garbage
    for t in range(after):
        turn(wb, ws, f"u{t}", edits("again", t))
    age(wb.store.path)
    return wb, first


def test_a_pack_whose_objects_became_garbage_is_rewritten_then_deleted_and_no_delta_loses_its_base(
        ws, monkeypatch):
    wb, first = _pack_then_garbage(ws, monkeypatch, 4, 4)
    assert kinds(wb.store)[1] > 0
    stats = wb.collection.run()
    assert stats["packsDeleted"] >= 1 and not first.pack_path.exists(), stats
    live = expected_live(wb.store, wb.state)
    assert all(wb.store.objects.verify(d) for d in live)
    # Every delta of every pack reads, so its base is there (fsck reads every packed object too).
    for pack in wb.store.objects.packs.packs.values():
        for i in range(pack.doc.count):
            wb.store.objects.packs.read(pack, i)
    wb.close()
    assert_sound(ws / ".turnback")


def test_an_object_referenced_again_before_its_pack_goes_keeps_its_pack(ws, monkeypatch):
    """Between the plan and the deletion, a capture brings back the bytes of a garbage object: the
    look again before the deletion sees its journal frame, and the old pack stays."""
    wb, first = _pack_then_garbage(ws, monkeypatch, 3, 2)
    lost = edits("saved once", 0)[0][1]  # in the first pack, garbage since the second save
    job = wb.collection.job()
    real = repack._covered

    def covered_then_capture(*args):
        out = real(*args)
        gate.append(True)
        return out
    gate: list = []
    monkeypatch.setattr(repack, "_covered", covered_then_capture)
    n = wb.run(wb.turns.begin_job({"prompt": "bring it back"}))["turn"]
    try:
        while True:
            next(job)
            if gate == [True]:
                gate.append("captured")
                (ws / "m0.py").write_text(lost)
                wb.turns.capture({"uris": [(ws / "m0.py").as_uri()]})
    except StopIteration as done:
        stats = done.value
    assert "captured" in gate
    digest = wb.store.hasher.digest(lost.encode())
    assert wb.store.objects.get(digest) == lost.encode()
    assert first.pack_path.exists() or os.path.exists(wb.store.objects.path(digest)), stats
    wb.run(wb.turns.settle_job({"turn": n}))
    wb.close()
    assert_sound(ws / ".turnback")


# ---------------------------------------------------------------- fault loops

@pytest.fixture
def template(fast_tmp, monkeypatch):
    """A store with a pack holding deltas, later turns that made much of it garbage, and new loose
    objects: the next collection repacks, rewrites the pack, deletes it, and drops loose copies.
    Small on purpose (the loops run it a hundred times): the thresholds are lowered to match."""
    monkeypatch.setattr(repackplan, "MIN_LOOSE", 16)
    monkeypatch.setattr(repackplan, "DEAD_SHARE", 0.01)
    ws = fast_tmp / "template"
    ws.mkdir()
    wb = open_wb(ws)
    for t in range(3):
        turn(wb, ws, f"t{t}", edits("turn", t, files=4))
    save_between_turns(wb, ws, "saved once", files=4)
    age(wb.store.path)
    wb.collection.run()
    save_between_turns(wb, ws, "saved again", files=4)
    rewind(wb, 2)
    for t in range(3):
        turn(wb, ws, f"u{t}", edits("again", t, files=4))
    wb.close()
    age(ws / ".turnback")
    return ws, fast_tmp


def _reference(template, monkeypatch):
    ws0, scratch = template
    ref = scratch / "reference"
    shutil.copytree(ws0, ref, symlinks=True)
    wb = open_wb(ref)
    with faultplan.faults() as plan:
        stats = wb.collection.run()
    live = expected_live(wb.store, wb.state)
    wb.close()
    assert stats["packsWritten"] == 1 and stats["packsDeleted"] >= 1 and stats["deltas"] > 0, stats
    return live, _points(plan.log)


def _points(log: list[str]) -> list[int]:
    """The operations to fault: every one of the repack's own (the new pack and its index written,
    synced and renamed; the old pack's index removed and synced, then the pack), and every 6th of
    the rest (retirements, loose deletions, the loose copies removed one by one: the same
    operation again and again, which tests/collect/test_faults.py faults one by one)."""
    own = {n for n, line in enumerate(log, 1) if "/objects/pack" in line or line.startswith("syncfs")}
    own |= {n + 1 for n in own} | {n - 1 for n in own}
    return sorted({n for n in own if 1 <= n <= len(log)} | set(range(1, len(log) + 1, 6)))


def _after(ws, live):
    """Sound, every referenced object reads exactly, and the next collection finishes the work."""
    assert_sound(ws / ".turnback")
    store = Store.open(ws / ".turnback", create=False)
    assert all(store.objects.verify(d) for d in live)
    wb = open_wb(ws)
    wb.collection.run()
    again = expected_live(wb.store, wb.state)
    wb.close()
    assert_sound(ws / ".turnback")
    store = Store.open(ws / ".turnback", create=False)
    assert live <= again and all(store.objects.verify(d) for d in again)
    temps = [p for p in (ws / ".turnback").rglob("*") if fs.is_temp_name(p.name)]
    assert temps == []


@pytest.mark.parametrize("model", ["fail", "sticky", "disk-full"])
def test_every_operation_of_a_repacking_collection_fails(template, monkeypatch, model):
    live, chosen = _reference(template, monkeypatch)
    ws0, scratch = template
    points = faulted = 0
    for n in chosen:
        ws = scratch / f"{model}{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        wb = open_wb(ws)
        kw = {"fail_at": n} if model == "fail" else (
            {"fail_at": n, "sticky": True} if model == "sticky" else {"disk_full_at": n})
        with faultplan.faults(**kw) as plan:
            try:
                wb.collection.run()
            except OSError:
                pass
        points += 1
        faulted += plan.faulted > 0
        try:
            wb.close()
        except OSError:
            pass
        expire_lease(ws / ".turnback")
        _after(ws, live)
        shutil.rmtree(ws)
    assert points >= 20, points
    assert_faulted(faulted, points, f"a repacking collection ({model})")


CRASH = """
import sys
from turnback.collect import repackplan
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.workbench import Options, Workbench
repackplan.DEAD_SHARE, repackplan.MIN_LOOSE = 0.01, 16
wb = Workbench.open({ws!r}, Options(grace_heads=0, grace_seconds=0.0, publish_interval=0.0))
faultplan.install(faultplan.FaultPlan(crash_at={n}, lose_unsynced={lose}))
wb.collection.run()
print("finished")
"""


@pytest.mark.slow
@pytest.mark.parametrize("lose", [False, True], ids=["process-death", "power-cut"])
def test_a_crash_at_every_operation_of_a_repacking_collection(template, monkeypatch, lose):
    live, chosen = _reference(template, monkeypatch)
    ws0, scratch = template
    points = crashed = 0
    finished = False
    n = 0
    for n in chosen + list(range(chosen[-1] + 1, chosen[-1] + 40)):
        if finished:
            break
        ws = scratch / f"crash{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        r = run_py(CRASH.format(ws=str(ws), n=n, lose=lose))
        assert r.returncode in (0, faultplan.CRASH_EXIT), (n, r.stderr)
        points += 1
        crashed += r.returncode == faultplan.CRASH_EXIT
        finished = r.returncode == 0 and n > chosen[-1]  # past the end: it runs to completion
        expire_lease(ws / ".turnback")
        _after(ws, live)
        shutil.rmtree(ws)
    print(f"{points} crash points, {crashed} crashed")
    assert points >= 20 and crashed >= 0.8 * points and finished, (crashed, points, n)


def _one_pack(ws):
    wb = open_wb(ws)
    for t in range(4):
        turn(wb, ws, f"t{t}", edits("turn", t))
    age(wb.store.path)
    wb.collection.run()
    (pack,) = wb.store.objects.packs.packs.values()
    return wb, pack


def _keeping(pack, low: float, high: float):
    """A `keeps` that calls some of the pack's objects garbage: between `low` and `high` of its raw
    bytes."""
    doc = pack.doc
    sizes = sorted(((doc.entry(i)[2], doc.digest_at(i).hex()) for i in range(doc.count)),
                   reverse=True)
    total, dead, doomed = sum(s for s, _ in sizes), 0, set()
    for size, digest in sizes:
        if dead + size < high * total:
            dead += size
            doomed.add(digest)
    assert low * total <= dead < high * total, (dead, total)
    return lambda digest: digest not in doomed


@pytest.mark.parametrize("share", [(0.2, 0.3), (0.4, 0.5)])
def test_a_small_pack_with_a_fifth_of_it_garbage_is_rewritten_even_alone(ws, share):
    """A session's packs are small and collect superseded metadata (a running turn's object and the
    session's root are written again at every publication): a small pack alone with 20 to 50 % of
    it garbage stayed as it was for ever ("rewriting one small pack alone gains nothing"), and so
    did one past MERGE_BELOW (64 MiB raw) below half."""
    wb, pack = _one_pack(ws)
    try:
        plan = repackplan.make_plan(wb.store.objects, _keeping(pack, *share), [], time.time() + 60,
                                    0.0, {}, {})
        assert plan.rewrite == [pack]
        plan = repackplan.make_plan(wb.store.objects, _keeping(pack, 0.05, 0.2), [], time.time() + 60,
                                    0.0, {}, {})
        assert plan.empty  # a tenth: not worth a rewrite
    finally:
        wb.close()


def test_a_big_pack_waits_for_half_of_it_to_be_garbage(ws, monkeypatch):
    wb, pack = _one_pack(ws)
    monkeypatch.setattr(repackplan, "CHEAP_REWRITE", 1)  # every pack is big
    try:
        plan = repackplan.make_plan(wb.store.objects, _keeping(pack, 0.2, 0.5), [], time.time() + 60,
                                    0.0, {}, {})
        assert plan.empty
        plan = repackplan.make_plan(wb.store.objects, _keeping(pack, 0.5, 0.8), [], time.time() + 60,
                                    0.0, {}, {})
        assert plan.rewrite == [pack]
    finally:
        wb.close()


def test_a_pack_past_the_merge_size_is_still_cheap_to_rewrite(ws, monkeypatch):
    """Past MERGE_BELOW a pack is no longer merged, but under CHEAP_REWRITE a fifth of garbage
    still rewrites it: with the cheap rule bounded by MERGE_BELOW, `long-session-edits` at 300
    turns kept all its superseded metadata (its packs had grown past 64 MiB raw)."""
    wb, pack = _one_pack(ws)
    monkeypatch.setattr(repackplan, "MERGE_BELOW", 1)
    try:
        plan = repackplan.make_plan(wb.store.objects, _keeping(pack, 0.2, 0.3), [], time.time() + 60,
                                    0.0, {}, {})
        assert plan.rewrite == [pack]
    finally:
        wb.close()


def _deltas_of(doc) -> dict[str, str]:
    """object -> its base, for every delta of a pack."""
    out = {}
    for i in range(doc.count):
        seg, _start, _size, base = doc.entry(i)
        if seg.kind == DELTA and base != NONE:
            out[doc.digest_at(i).hex()] = doc.digest_at(base).hex()
    return out


def test_a_rewritten_pack_keeps_its_deltas(ws):
    """A rewrite copies a pack in its order, bases before their deltas; the chain of a delta
    stopped at a base already copied, and every delta of a rewritten pack came out whole."""
    wb, pack = _one_pack(ws)
    try:
        before = _deltas_of(pack.doc)
        assert len(before) >= 10
        plan = repackplan.Plan(rewrite=[pack])
        built = repack.build(wb.store.objects, plan, lambda d: True)
        try:
            after = {d: base for d, (_seg, _start, _n, base) in built.writer.objects.items()
                     if base is not None}
            assert after == before  # every delta stays a delta, of the same base
            assert built.deltas == len(before)
        finally:
            built.writer.discard()
    finally:
        wb.close()


def test_a_delta_whose_base_is_garbage_becomes_a_delta_of_the_next_version_that_stays(ws):
    wb, pack = _one_pack(ws)
    try:
        bases = _deltas_of(pack.doc)
        # v0 -> v1 -> v2: v1 (a delta itself) is garbage; v0 is written against v2
        v0, v1 = next((d, b) for d, b in sorted(bases.items()) if b in bases)
        v2 = bases[v1]
        plan = repackplan.Plan(rewrite=[pack])
        built = repack.build(wb.store.objects, plan, lambda d: d != v1)
        try:
            assert v1 not in built.writer
            assert built.writer.objects[v0][3] == v2
            assert built.writer.read(v0) == wb.store.objects.get(v0)
        finally:
            built.writer.discard()
    finally:
        wb.close()
