"""The two interpreter environments a hook's start-up is timed in, shared by `live`, `agenthooks` and
`fastpath` (here, below all three, so that `agenthooks` need not import `live`, which imports it)."""

from __future__ import annotations

import os
from pathlib import Path


def bytecode_envs(work: Path) -> dict[str, dict]:
    """`uncached`: as this machine runs hooks (PYTHONDONTWRITEBYTECODE=1: turnback's own modules are
    compiled at every start unless a cache exists); `cached`: a private bytecode cache, warmed first."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",
                                                             "PYTHONPYCACHEPREFIX")}
    warm = work / "pyc-warm"
    warm.mkdir(parents=True, exist_ok=True)
    return {"uncached": {**base, "PYTHONDONTWRITEBYTECODE": "1"},
            "cached": {**base, "PYTHONPYCACHEPREFIX": str(warm)}}
