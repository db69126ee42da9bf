"""Collection without an owner: what git's `gc.auto` is to `git commit`, for the command line.

An owner (an editor's server, a background owner) collects after every publication. A workspace
driven only by the command line never had one, so nothing was ever collected: requests after 200
command-line turns held 18.5 MiB, 5.2x git (2,756 loose objects, 400 head files at 4 KiB each).

So after a command-line command that ended something (a turn's settle, a rewind, a restore, a Redo,
a fork) and ran without an owner, `due` looks at the store the way git does, cheaply: the loose
objects of 16 of the 256 fan-out folders, scaled (git samples one), and the head files. Past either
threshold the command runs one *quick* collection (`run_bounded`): the collector as ever (every
step transactional, the fault loops of tests/collect prove it), but its new pack at the put-time
level (fast; the next full collection, `turnback gc` or an owner's, makes it at the collector's
level), and stopped at its first pause past `BUDGET_SECONDS`. Stopping at a pause is what the
collector allows anywhere: a crash there leaves a sound store, and a stop is gentler (never inside
work handed to its helper thread). The hooks' fast path (`turnback hook`) never comes here.

`TURNBACK_GC_AUTO=0` turns it off; any other number replaces the loose-object threshold.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..store.heads import LOOSE_NEWEST
from ..store.objects.writer import RAW_LOOSE_MAX

AUTO_LOOSE = 512  # estimated loose objects (a command-line turn writes about 10-20)
AUTO_HEADS = LOOSE_NEWEST + 96  # loose head files (a collection packs all but the newest 64)
SAMPLE = 16  # fan-out folders counted (00 to 0f), scaled to 256
BUDGET_SECONDS = 3.0
ENV = "TURNBACK_GC_AUTO"

_HEAD = re.compile(r"^\d{12}\.cbor$")


def threshold() -> int:
    """The loose-object threshold; 0 means never."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return AUTO_LOOSE
    try:
        return max(0, int(value))
    except ValueError:
        return AUTO_LOOSE


def loose_estimate(store: Path) -> int:
    """Loose objects a collection would pack, estimated from SAMPLE fan-out folders. Those over
    RAW_LOOSE_MAX stay loose whatever runs (collect/repackplan.REPACK_MAX): counted, a store with many
    big files would run a collection after every command and never get below the threshold."""
    objects = Path(store) / "objects"
    count = 0
    for i in range(SAMPLE):
        try:
            with os.scandir(objects / f"{i:02x}") as it:
                count += sum(1 for e in it if ".tbtmp." not in e.name and _packable(e))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return count * 256 // SAMPLE


def _packable(entry) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_size <= RAW_LOOSE_MAX
    except OSError:
        return False


def loose_heads(store: Path) -> int:
    try:
        with os.scandir(Path(store) / "heads") as it:
            return sum(1 for e in it if _HEAD.match(e.name))
    except (FileNotFoundError, NotADirectoryError):
        return 0


def due(store: Path) -> str | None:
    """Why a quick collection is due (for the log), or None."""
    limit = threshold()
    if limit <= 0:
        return None
    loose = loose_estimate(store)
    if loose >= limit:
        return f"about {loose} loose objects (threshold {limit})"
    heads = loose_heads(store)
    if heads >= AUTO_HEADS:
        return f"{heads} head files (threshold {AUTO_HEADS})"
    return None


def run_bounded(wb, budget: float | None = None) -> dict:
    """One quick collection of `wb` (an owner's workbench, in this process), stopped at its first
    pause past `budget` seconds. Its stats, with `stopped: true` when it was stopped."""
    from .slices import CollectionStopped

    deadline = time.monotonic() + (BUDGET_SECONDS if budget is None else budget)
    job = wb.collection.job(quick=True, deadline=deadline)
    try:
        while True:
            next(job)
            wb.renew()  # a bounded run is short, but the lease is what fences it: keep it ours
    except StopIteration as done:
        return dict(done.value or {}, stopped=False)
    except CollectionStopped:
        return {"stopped": True}
