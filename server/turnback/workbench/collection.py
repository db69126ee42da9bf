"""Collection wiring: triggers coalesce into one pending job; the collector itself lives in `collect/`.

Triggers that call `schedule`: every committed head (settlement, debounced publication inside long
turns), every committed rewind or redo, recovery at open, and resume (at open, when the store already
holds a published state).
"""

from __future__ import annotations

from ..errors import TurnbackError
from . import params as P


def job_options(params) -> dict:
    """The collector's options a `turnback/collect/run` request asks for: `packAll` (every small
    pack merged into one, as `git gc` repacks) and `dryRun` (the plan's summary, nothing changed)."""
    options = {}
    if P.field(params or {}, "packAll", bool, default=False):
        options["pack_all"] = True
    if P.field(params or {}, "dryRun", bool, default=False):
        options["dry_run"] = True
    return options


class CollectionFeature:
    def __init__(self, wb):
        self.wb = wb
        self.reasons: set[str] = set()
        self.cache = None  # collect.HeadCache, loaded on the first run, warm afterwards
        self.last: dict | None = None  # stats of the last completed collection
        self.running = False
        if wb.book.owner is not None and self._has_published_state():
            self.schedule("resume")

    def _has_published_state(self) -> bool:
        store = self.wb.store
        if store.kind == "heads":
            return self.wb.book.head is not None
        return store.sidecar_path.exists()

    @property
    def pending(self) -> bool:
        return bool(self.reasons)

    def schedule(self, reason: str) -> None:
        """Coalesce: any number of triggers before the next run make one pending job."""
        self.reasons.add(reason)

    def job(self, **options):
        """A fresh collection job (a generator yielding after every slice; returns the stats).

        `options` go to `collect.Collector` (tests use them); by default the workbench's Options
        decide the grace window. Triggers that arrive while it runs stay pending for the next job.
        """
        from ..collect import Collector, HeadCache

        wb = self.wb
        if self.running:
            raise TurnbackError("a collection is already running", code="busy")
        taken = set(self.reasons)
        self.running = True
        wb.collecting = True
        wb.emit_status()
        try:
            if self.cache is None or self.cache.store_id != wb.store.store_id:
                self.cache = HeadCache.load(wb.store)
            stats = yield from Collector(wb, self.cache, **options).job()
            if not options.get("dry_run"):  # a dry run changed nothing: what was due stays due
                self.reasons -= taken
                self.last = stats
            return stats
        finally:
            self.running = False
            wb.collecting = False
            wb.emit_status()

    def run(self, params=None) -> dict:
        """One full collection at once (`turnback/collect/run`, `turnback gc`); returns the stats,
        or with `dryRun` the plan's summary (`job_options`)."""
        params = P.obj(params)
        if getattr(self.wb.store.objects, "_batch", None) is not None:
            raise TurnbackError("a capture is in progress; collect when it has finished", code="busy")
        return self.wb.run(self.job(**job_options(params)))
