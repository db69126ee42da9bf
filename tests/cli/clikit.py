"""Helpers of the command line's process tests: a `turnback` process, and JSON values for the
property tests of its small JSON writers and readers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import strategies as st

TB = [sys.executable, "-m", "turnback"]


def tb(root: Path, *args, check=True):
    proc = subprocess.run([*TB, "--workspace", str(root), *args], capture_output=True, text=True,
                          cwd=root, timeout=120)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def json_values(floats: bool = False):
    """Nested lists and objects of JSON scalars (floats only when asked: not every writer has them)."""
    scalars = st.none() | st.booleans() | st.integers(-10 ** 12, 10 ** 12) | st.text(max_size=40)
    if floats:
        scalars = scalars | st.floats()
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                     max_size=5),
        max_leaves=20)
