import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from turnback.store.layout import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path) -> Store:
    return Store.open(tmp_path / ".turnback")


@pytest.fixture
def pid_store(tmp_path) -> Store:
    return Store.open(tmp_path / ".turnback", kind="pid")


def run_py(code: str, *, env: dict | None = None, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """Run a Python snippet in a fresh interpreter (same venv), optionally with fault env vars."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=timeout, cwd=str(REPO))


def tree(root: Path) -> dict:
    """Snapshot of a folder: relative path -> (mode, bytes or None for folders)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_mode, None if p.is_dir() else p.read_bytes())
    return out


@pytest.fixture(autouse=True)
def _store_layer_fsck_only(monkeypatch):
    """These tests write heads whose bodies are raw bytes, not session bodies: they check the store
    layer alone, so deeper checks that other packages register (collect's body check) stay out."""
    from turnback.store import fsck as fsck_mod

    monkeypatch.setattr(fsck_mod, "EXTRA_CHECKS", [])
