"""Fixtures for the live sidecar: editors over stdio (the lsp harness) and socket clients."""

from __future__ import annotations

from tests.lsp.conftest import flavour, servers, ws  # noqa: F401 - the same harness the lsp tests use
