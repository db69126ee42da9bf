"""Fixtures shared by every test folder; the helpers themselves live in sessionkit.py."""

from __future__ import annotations

import os

import pytest

# A background owner a test starts (and forgets to stop) exits soon after its last client.
os.environ.setdefault("TURNBACK_IDLE_EXIT", "30")
from sessionkit import Agent


def pytest_configure(config):
    """Compile turnback's modules once, beside their sources (`__pycache__`, ignored by git), as pip
    does for an installed package. This machine and CI set PYTHONDONTWRITEBYTECODE=1, so without it
    each of the thousands of processes the suite starts (hooks, commands, fault-loop children)
    compiled them again: half of a command's start-up CPU. `turnback bench` says when it finds this
    bytecode (its `uncached` figures are then not). Once, in the process that runs the workers."""
    if hasattr(config, "workerinput"):
        return
    import compileall
    from pathlib import Path

    import turnback

    compileall.compile_dir(str(Path(turnback.__file__).parent), quiet=1)


@pytest.fixture
def agent(tmp_path):
    made = []

    def make(**options) -> Agent:
        root = tmp_path / f"ws{len(made)}"
        root.mkdir()
        a = Agent(root, **options)
        made.append(a)
        return a

    yield make
    for a in made:
        try:
            a.close()
        except Exception:
            pass
