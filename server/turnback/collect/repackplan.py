"""The repack's plan: which loose objects and packs to rewrite or drop, apart from writing them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..store.objects.writer import RAW_LOOSE_MAX
from ..store.objects.packwrite import LEVEL as PUT_LEVEL

REPACK_MAX = RAW_LOOSE_MAX  # loose objects up to this size (stored) move into packs
MIN_LOOSE = 64  # ...once there are this many of them
MIN_LOOSE_BYTES = 4 << 20  # ...or this many bytes
MERGE_BELOW = 64 << 20  # packs of fewer raw bytes are small: merged geometrically
MERGE_AT = 4  # this many small packs are merged even without new loose objects
DEAD_SHARE = 0.5  # a big pack is rewritten once half of its raw bytes are garbage
# A pack under CHEAP_REWRITE raw bytes once a fifth is: rewriting it is a fraction of a second on a
# helper thread, and a session's packs fill with superseded metadata (a running turn's object and
# the session's root, once per publication: 97 of the 116 turn objects of a 12-turn session's one
# pack were garbage, and never went).
CHEAP_REWRITE = 256 << 20
CHEAP_DEAD_SHARE = 0.2


@dataclass
class Plan:
    loose: list[str] = field(default_factory=list)  # kept loose objects to move
    dups: list[str] = field(default_factory=list)  # loose copies of objects a sound pack holds
    rewrite: list = field(default_factory=list)  # packs whose kept objects move, then they go
    drop: list = field(default_factory=list)  # packs holding nothing kept: deleted, nothing written
    hints: dict[str, str] = field(default_factory=dict)  # object -> the version to delta against
    names: dict[str, str] = field(default_factory=dict)  # object -> a path it had (for ordering)

    @property
    def empty(self) -> bool:
        return not (self.loose or self.dups or self.rewrite or self.drop)


def raw_bytes(pack) -> int:
    doc = pack.doc
    return sum(doc.segment(i).raw for i in range(doc.segment_count))


HINT_STEP = 2048  # checkpoint entries looked at per step (all of a 20,000-file session's: 25 ms)


def iter_version_hints(state):
    """(older image -> newer image, image -> a path it had) from a session state's checkpoints:
    O(checkpoint entries), never O(files in the workspace), in steps since it runs on the loop (a
    generator; its value is the pair). Hints only: what changes between two steps is taken or
    missed as it comes (each turn's entries are copied before they are read)."""
    hints: dict[str, str] = {}
    names: dict[str, str] = {}
    counted = 0

    def groups():  # (path, before, after) of one turn, or one bucket of loose changes, at a time
        for turn in list(state.turns):
            yield [(e.rel, e.before, e.after) for e in list(turn.files.values())]
        for changes in list(state.between.values()):
            yield [(rel, b, a) for rel, (b, a) in list(changes.items())]

    for group in groups():
        for rel, before, after in group:
            for image in (before, after):
                if isinstance(image, str) and len(image) == 32:
                    names.setdefault(image, rel)
            if isinstance(before, str) and isinstance(after, str) \
                    and len(before) == len(after) == 32 and before != after:
                hints[before] = after
            counted += 1
            if counted % HINT_STEP == 0:
                yield None
    return hints, names


def make_plan(objects, keeps, loose_kept: list[tuple[str, int]], t0: float, slack: float,
              hints, names, *, relayout: bool = True, known=None, pack_all: bool = False) -> Plan:
    """What to repack; `keeps(digest)` says whether an object is referenced. Runs on the thread.
    `known`: the live state's map of paths to images, for the names of files no turn changed.
    `pack_all` (`turnback gc`, as `git gc` repacks everything): every small pack merged into the
    new one, so each version finds its base there and becomes a delta; an owner's collections
    after each turn pack each turn's objects apart, where no delta can reach an older pack."""
    plan = Plan(hints=dict(hints), names=names)
    _name_known(names, known)
    packs = objects.packs
    packs.refresh(force=True)
    candidates = []
    for d, size in loose_kept:
        if size > REPACK_MAX:
            continue
        if packs.locate(d) is not None and _sound_in_a_pack(objects, d):
            plan.dups.append(d)  # left by an interrupted repack, or packed by a batch meanwhile
        else:
            candidates.append((d, size))
    loose_bytes = sum(size for _d, size in candidates)
    # `turnback gc` packs every one, as `git gc` leaves no loose object: the last publication's
    # few objects, each in a fan-out folder of its own, cost mypy's store 20 folders and files.
    if (pack_all and candidates) or len(candidates) >= MIN_LOOSE or loose_bytes >= MIN_LOOSE_BYTES:
        plan.loose = [d for d, _size in candidates]
    else:
        loose_bytes = 0
    small, whole = [], []
    for pack in _oldest_first(packs.packs.values()):
        try:
            if pack.pack_path.stat().st_mtime >= t0 - slack:
                continue  # written during this collection: its objects may not be recorded yet
        except FileNotFoundError:
            continue
        doc = pack.doc
        live = dead = 0
        for i in range(doc.count):
            size = doc.entry(i)[2]
            if keeps(doc.digest_at(i).hex()):
                live += size
            else:
                dead += size
        if not live:
            plan.drop.append(pack)
        elif relayout and _relayout(pack, live + dead):
            plan.rewrite.append(pack)
        elif dead >= (CHEAP_DEAD_SHARE if live + dead < CHEAP_REWRITE else DEAD_SHARE) \
                * (live + dead):
            plan.rewrite.append(pack)
        elif live + dead < MERGE_BELOW:
            small.append((live + dead, pack))
        else:
            whole.append(pack)
    # A pack whose kept objects another pack that stays holds too (what an interrupted repack
    # leaves) is dropped; the older of two such packs goes, never both.
    going = set(plan.drop) | set(plan.rewrite)
    for size, pack in list(small):
        if _held_elsewhere(pack, keeps, [p for p in packs.packs.values()
                                         if p is not pack and p not in going]):
            plan.drop.append(pack)
            going.add(pack)
            small.remove((size, pack))
    small.sort(key=lambda s: (s[0], s[1].name))
    if pack_all and (len(small) > 1 or (small and (plan.loose or plan.rewrite))):
        plan.rewrite += [pack for _size, pack in small]
        return plan
    acc, chosen = loose_bytes, []
    for size, pack in small:
        if acc and size <= 2 * acc:
            chosen.append(pack)
            acc += size
        elif not acc and len(small) >= MERGE_AT:
            chosen.append(pack)
            acc += size
        else:
            break
    if len(chosen) == 1 and not plan.loose and not plan.rewrite:
        chosen = []  # rewriting one small pack alone, with little garbage, gains nothing
    plan.rewrite += chosen
    return plan


def _name_known(names: dict[str, str], known) -> None:
    """Each image of the known map named by its path (read on the helper thread while the loop may
    change the map: names only order a pack, so a change meanwhile is taken or missed)."""
    if known is None:
        return
    try:
        for rel in list(known):
            image = known.get(rel)
            if isinstance(image, str) and len(image) == 32:
                names.setdefault(image, rel)
    except RuntimeError:  # changed size under the iteration: the names gathered so far do
        pass


def _relayout(pack, raw: int) -> bool:
    """Whether a pack is rewritten for its layout alone: one of an earlier version (its header
    records no level: 8 MiB blocks, whose every read inflated megabytes), whatever its size, and one
    an object batch wrote (fast level-3 blocks) while it is small, so the collector's level and
    deltas reach it once. Those the collector wrote stay."""
    level = pack.made_at()
    return level == 0 or (level == PUT_LEVEL and raw < MERGE_BELOW)


def _oldest_first(packs) -> list:
    def age(p):
        try:
            return (p.pack_path.stat().st_mtime_ns, p.name)
        except FileNotFoundError:
            return (0, p.name)
    return sorted(packs, key=age)


def _held_elsewhere(pack, keeps, others) -> bool:
    """Whether every kept object of `pack` is in one of `others` as well."""
    if not others:
        return False
    doc = pack.doc
    for i in range(doc.count):
        raw = doc.digest_at(i)
        if keeps(raw.hex()) and not any(o.doc.find(raw) >= 0 for o in others):
            return False
    return True


def _sound_in_a_pack(objects, digest: str) -> bool:
    for pack, i in objects.packs.locations(digest):
        try:
            objects.packs.read(pack, i)
            return True
        except Exception:  # noqa: BLE001 - damaged or gone: the loose copy is the one to keep
            continue
    return False
