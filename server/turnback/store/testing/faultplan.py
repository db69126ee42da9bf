"""Fault plans over the file-system seam, for tests: install one for a block (`faults`), for a
process (`install`), or read the one installed (`current`). The models themselves are in `plan.py`
(which the seam's hook loads from a crash test's environment); this module is what a test imports.
"""

from __future__ import annotations

import contextlib
import errno as _errno
from collections.abc import Iterator

from ..fs import layer
from .plan import CRASH_EXIT, SPACE_OPS, FaultInjected, FaultPlan

__all__ = ["CRASH_EXIT", "SPACE_OPS", "FaultInjected", "FaultPlan", "current", "faults", "install"]


def current() -> FaultPlan | None:
    """The plan installed now, if any (None when another kind of layer is)."""
    plan = layer.current_layer()
    return plan if isinstance(plan, FaultPlan) else None


@contextlib.contextmanager
def faults(fail_at: int | None = None, crash_at: int | None = None, *,
           errno: int = _errno.EIO, sticky: bool = False, disk_full_at: int | None = None,
           lose_unsynced: bool = False) -> Iterator[FaultPlan]:
    """Install a fault plan for the duration of the block; yields it (`.count`, `.faulted`, `.log`)."""
    plan = FaultPlan(fail_at, crash_at, errno, sticky=sticky, disk_full_at=disk_full_at,
                     lose_unsynced=lose_unsynced)
    previous = layer.install_layer(plan)
    try:
        yield plan
    finally:
        layer.install_layer(previous)


def install(plan: FaultPlan | None) -> None:
    """Install (or with None, remove) a plan without a block; for long-lived processes under test."""
    layer.install_layer(plan)

