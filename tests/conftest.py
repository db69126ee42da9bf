"""Fixtures shared by every test folder; the helpers themselves live in sessionkit.py."""

from __future__ import annotations

import os

import pytest

# A background owner a test starts (and forgets to stop) exits soon after its last client.
os.environ.setdefault("TURNBACK_IDLE_EXIT", "30")
from sessionkit import Agent


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
