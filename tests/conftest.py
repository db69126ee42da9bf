"""Fixtures shared by every test folder; the helpers themselves live in sessionkit.py."""

from __future__ import annotations

import pytest
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
