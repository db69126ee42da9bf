"""The seam's one hook: a layer every mutating operation is reported to before it runs.

Production installs none, and then an operation costs one global lookup more. A test installs a layer
(the fault and crash models of `store/testing/`) to fail, fill or cut power at the Nth operation, as
SQLite's test VFS layers its fault injectors over the real one: the layer is outside the seam, and
the seam never imports it unless the environment asks (`install_from_env`, for crash tests that
run real processes).

A layer is any object with `tick(op, path, src)`; `op` is one of OPS.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

# Each mutating system call the seam makes counts as one operation, named thus.
OPS = ("create", "write", "fsync", "fsync_dir", "rename", "link", "symlink", "unlink", "mkdir",
       "rmdir", "truncate", "chmod", "utime", "syncfs")

# The variables that ask a process to install a fault plan (store/testing/plan.py).
ENV = ("TURNBACK_CRASH_AT", "TURNBACK_FAIL_AT", "TURNBACK_DISK_FULL_AT")


class Layer(Protocol):
    def tick(self, op: str, path: object, src: object = None) -> None: ...


_layer: Layer | None = None


def tick(op: str, path: object, src: object = None) -> None:
    """Report one operation to the installed layer (which may raise, or end the process)."""
    if _layer is not None:
        _layer.tick(op, path, src)


def install_layer(layer: Layer | None) -> Layer | None:
    """Install (or with None, remove) the layer; returns the one it replaces."""
    global _layer
    previous, _layer = _layer, layer
    return previous


def current_layer() -> Layer | None:
    return _layer


def install_from_env(environ: Mapping[str, str] | None = None) -> Layer | None:
    """Honour TURNBACK_CRASH_AT / TURNBACK_FAIL_AT / TURNBACK_DISK_FULL_AT (see
    `store/testing/plan.py`): a test faults a subprocess through its environment. Without them
    nothing is imported and nothing changes."""
    env = os.environ if environ is None else environ
    if not any(env.get(name) for name in ENV):
        return None
    from ..testing.plan import plan_from_env

    plan = plan_from_env(env)
    install_layer(plan)
    return plan
