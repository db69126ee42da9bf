"""Repacking: the collector's last phase. Small loose objects move into a pack, packs whose objects
are mostly garbage are rewritten, small packs are merged, and versions of one file become deltas.

What is decided where:
- the plan (`repackplan.make_plan`, part of the collection's plan) and the new pack are made on a
  helper thread (`SlicedJob._off_loop`): reading objects, inflating blocks, computing deltas and
  compressing are seconds of work on a big store, and the thread rests a millisecond after every
  two, so the loop keeps the interpreter most of the time;
- the new pack is made durable and visible before anything is removed (one sync pass, the renames,
  the folders), so every object it holds is readable throughout;
- the loose copies of the objects it now holds are then removed: they exist in the pack;
- an old pack is deleted only when nothing it holds is referenced that is not now in the new pack:
  just before, the collector looks again at everything that could have changed (ownership, new
  heads, journals, intents, records, an open object batch), and a pack one of whose dropped objects
  became referenced meanwhile is kept. Its index goes first and is made durable, then the pack, so a
  power cut never leaves an index naming a missing pack.

Deltas stay inside one pack (a delta's base is written to the same pack, before it), so deleting a
pack can never leave a delta whose base it deleted. Which objects are versions of one another comes
from the live session: a checkpoint entry's before-image and after-image are two versions of one
path, and the older is stored as a delta against the newer (the newest version is whole, so the
images a rewind restores most often read without a chain). A delta inside a rewritten pack keeps
its base when the base survives; otherwise it becomes a delta of the next newer version that does
(written whole only when none does).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store import fs
from ..store.objects.digest import Digest
from ..store.objects.interfaces import ObjectRemover
from ..store.objects.packformat import DELTA, NONE
from ..store.objects.packwrite import PackWriter
from .repackplan import Plan
from .slices import Slices

if TYPE_CHECKING:
    from .collector import Collector

BURST, REST = 0.002, 0.001  # the helper thread's pace (seconds of work, then of rest)


@dataclass
class Built:
    writer: PackWriter | None
    moved: set[str]  # objects the new pack holds
    uncopied: dict[str, list[Digest]]  # old pack name -> its objects the new pack does not hold
    deltas: int = 0


def _covered(objects, old, uncopied: dict[str, list[Digest]]) -> dict[str, set[Digest]]:
    """For each old pack, its objects with a sound copy outside every old pack. Runs on the thread."""
    names = {p.name for p in old}
    staying = [p for p in objects.packs.packs.values() if p.name not in names]
    out: dict[str, set[Digest]] = {}
    for pack in old:
        out[pack.name] = got = set()
        for d in uncopied[pack.name]:
            raw = bytes.fromhex(d)
            for other in staying:
                i = other.doc.find(raw)
                if i >= 0 and _reads(objects, other, i):
                    got.add(d)
                    break
            else:
                path = objects.path(d)
                if os.path.lexists(path) and objects._loose_sound(path, d):
                    got.add(d)
    return out


def _reads(objects, pack, i) -> bool:
    try:
        objects.packs.read(pack, i)
        return True
    except Exception:  # noqa: BLE001 - damaged or gone: not a copy to rely on
        return False


def build(objects, plan: Plan, keeps, *, quick: bool = False) -> Built:
    """Write the new pack (temp files, not synced) on the helper thread."""
    wanted: dict[str, None] = {}
    for pack in plan.rewrite:
        doc = pack.doc
        for i in _pack_order(doc):
            d = doc.digest_at(i).hex()
            seg, _start, _size, base = doc.entry(i)
            if seg.kind == DELTA and base != NONE:  # garbage's too: a chain steps over it
                plan.hints.setdefault(d, doc.digest_at(base).hex())
            if keeps(d):
                wanted.setdefault(d)
    for d in plan.loose:
        wanted.setdefault(d)
    wanted = dict.fromkeys(_block_order(objects, wanted, plan.names))
    uncopied = {}
    for pack in plan.rewrite + plan.drop:
        doc = pack.doc
        uncopied[pack.name] = [doc.digest_at(i).hex() for i in range(doc.count)
                               if doc.digest_at(i).hex() not in wanted]
    if not wanted:
        return Built(None, set(), uncopied)
    writer = PackWriter(objects.packs.folder, repack=not quick)
    deltas = 0
    pace = time.perf_counter()
    try:
        for d in wanted:
            base, chain = _chain(d, plan.hints, wanted, writer)
            last = None if base is None else (base, writer.read(base))
            for x in chain:  # newest first: each older version against the one before it
                data = objects.get(x)
                if last is not None and writer.add_delta(x, data, last[0], last[1]):
                    deltas += 1
                else:
                    writer.add(x, data)
                last = (x, data)
                if time.perf_counter() - pace >= BURST:
                    time.sleep(REST)
                    pace = time.perf_counter()
    except BaseException:
        writer.discard()
        raise
    return Built(writer, set(wanted), uncopied, deltas)


PREFIX = 48  # bytes of an object without a name that order it among its kind


def _block_order(objects, wanted, names: dict[str, str]) -> list[str]:
    """The order objects go into the new pack's blocks, which see only themselves (512 KiB): files
    by path, so a folder's files share a block; then what has no name (the session's metadata,
    files only older states had) by its first bytes, so the versions of one known-map shard or of
    one turn sit side by side (in the order they came, they cost 1 MB of mypy's 4.4: 0.3 as one
    frame). Reading those first bytes is what they cost anyway: each is read into the pack next."""
    position = {d: i for i, d in enumerate(wanted)}

    def key(d: str):
        name = names.get(d)
        if name is not None:
            return (0, name.encode(), position[d])
        try:
            head = objects.get(d)[:PREFIX]
        except Exception:  # noqa: BLE001 - unreadable here: the copy below names the damage
            head = b""
        return (1, head, position[d])

    return sorted(wanted, key=key)


def _pack_order(doc) -> list[int]:
    """A pack's entries as the pack has them, down to the order inside a block (its index lists
    them by digest: copied in that order, the files of one folder were scattered over small blocks,
    and mypy's store came out 15 % bigger than from its 8 MiB blocks)."""
    return sorted(range(doc.count), key=lambda i: (doc.segment_of(i), doc.entry(i)[1]))


def _chain(d: str, hints: dict[str, str], wanted, writer) -> tuple[str | None, list[str]]:
    """(the base already in the new pack, or None; the versions to add for `d`, newest first,
    ending with `d`): its newer versions first, as far as they are wanted and not in the pack yet.
    A newer version that is garbage is stepped over (the older one becomes a delta of the next that
    stays), and one already in the pack is the chain's base: a rewrite copies a pack in its order,
    bases before their deltas, and stopped there, so every delta of a rewritten pack came out
    whole."""
    if d in writer:
        return None, []
    chain, seen = [d], {d}
    x, base = hints.get(d), None
    while x is not None and x not in seen:
        seen.add(x)
        if x in writer:
            base = x
            break
        if x in wanted:
            chain.append(x)
        x = hints.get(x)
    chain.reverse()
    return base, chain


def _empty_fanouts(col, fans: set[str]):
    """Fan-out folders the repack emptied go too: each still costs a block on disk (256 of them
    were a fifth of a long session's store). Never while an object batch is open: a job between
    its slices may be about to write into one."""
    objects: ObjectRemover = col.store.objects
    for fan in sorted(fans):
        if objects.batch_open:
            return
        folder = objects.root / fan
        try:
            if os.listdir(folder):
                continue
            fs.rmdir(folder)
        except OSError:
            continue  # refilled meanwhile, or gone: nothing to do
        if col._tick():
            yield from col._pause()


def phase(col: Collector, plan: Plan) -> Slices[None]:
    """The collector's repack phase, carrying out `plan` (a generator of slices); adds its figures
    to `col.stats`."""
    col.phase = "pack"
    objects = col.store.objects
    if plan.empty:
        return
    built = yield from col._off_loop(lambda: build(objects, plan, col._keeps, quick=col.quick))
    col.wb.book.require_owner()  # ownership before every mutation
    s = col.stats
    if built.writer is not None:
        try:
            yield from col._off_loop(objects.publish_pack, built.writer)
        except BaseException:
            built.writer.discard()
            raise
        s["packsWritten"] += 1
        s["objectsPacked"] += len(built.moved)
        s["deltas"] += built.deltas
        s["packBytes"] += built.writer.pack_path.stat().st_size
    # Loose copies of packed objects: every one of them is durable in a pack now.
    removed = (plan.loose if built.writer is not None else []) + plan.dups
    for d in removed:
        objects.remove(d)
        s["looseRemoved"] += 1
        if col._tick():
            yield from col._pause()
    yield from _empty_fanouts(col, {d[:2] for d in removed})
    old = plan.rewrite + plan.drop
    if not old:
        return
    # The copies that make an old pack's objects safe to drop, verified now (slow, on the thread):
    # in a pack that stays or a sound loose file. Nothing below yields until the packs are gone
    # from this process's view, so no capture can take a new reference to one of them unseen.
    covered = yield from col._off_loop(_covered, objects, old, built.uncopied)
    yield from col._recheck()  # anything referenced since the plan keeps its pack
    if col.blocked:
        return
    going = [p for p in old
             if all(not col._keeps(d) or d in covered[p.name] for d in built.uncopied[p.name])]
    if not going:
        return
    col.wb.book.require_owner()
    for pack in going:
        fs.unlink(pack.index_path, missing_ok=True)
    objects.packs.refresh(force=True)  # from here on no lookup in this process finds them
    # The indexes' removal durable first: a power cut may then bring back a pack without its index
    # (which the next owner removes), never an index naming a missing pack.
    yield from col._off_loop(fs.fsync_dir, objects.packs.folder)
    dropped = []
    for pack in going:
        fs.unlink(pack.pack_path, missing_ok=True)
        dropped += built.uncopied[pack.name]
        s["packsDeleted"] += 1
    objects.packs.refresh(force=True)
    objects.removals += 1  # a cached digest may name an object that is gone now
    col.wb.book.codec.forget(dropped)
    s["objectsDeleted"] += len(dropped)
    col._tick()
    yield from col._pause()
