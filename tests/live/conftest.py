"""Fixtures for the live sidecar: editors over stdio (the lsp harness) and socket clients."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.lsp.conftest import flavour, servers, ws  # noqa: F401 - the same harness the lsp tests use


@pytest.fixture
def short_tmp():
    """A private folder with a short path, for a socket's base folder: pytest's own under its xdist
    workers (`…/popen-gw0/test_…0/`) leaves too little of sun_path's 108 bytes for
    `turnback-<16 hex>/owner.sock`, and the owner rightly passes it by."""
    path = tempfile.mkdtemp(prefix="tb-", dir="/tmp")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)
