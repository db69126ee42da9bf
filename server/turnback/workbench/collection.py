"""Collection wiring (the collector itself lives in `collect/`)."""

from __future__ import annotations


class CollectionFeature:
    def __init__(self, wb):
        self.wb = wb
        self.reasons: set[str] = set()

    @property
    def pending(self) -> bool:
        return bool(self.reasons)

    def schedule(self, reason: str) -> None:
        """Coalesce: any number of triggers before the next run make one pending job."""
        self.reasons.add(reason)
