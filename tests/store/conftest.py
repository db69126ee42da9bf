import os
import subprocess
import textwrap
from pathlib import Path

import pytest

import turnback.collect  # noqa: F401  registers fsck's deep checks: the store fault loops run them too
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
    from pychild import run_python  # here: a child that imports this module has no tests/ on its path

    return run_python(textwrap.dedent(code), env=full_env, timeout=timeout, cwd=REPO)


def tree(root: Path) -> dict:
    """Snapshot of a folder: relative path -> (mode, bytes or None for folders)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_mode, None if p.is_dir() else p.read_bytes())
    return out


def session_body(store, note: str = "") -> str:
    """A real (empty) session body written into `store`, so heads the store tests publish pass
    fsck's deep checks too; `note` makes bodies differ."""
    from turnback.timeline.book import new_session
    from turnback.timeline.codec import StateCodec

    with store.objects.batch():
        return StateCodec(store.objects).write(new_session({"note": note}))


SESSION_BODY_CODE = """
from turnback.timeline.book import new_session
from turnback.timeline.codec import StateCodec
"""


@pytest.fixture
def store_layer_fsck_only(monkeypatch):
    """For the few tests that write heads whose bodies are raw bytes, not session bodies: they check
    the store layer alone, so the deeper checks other packages register (collect's body check) stay
    out. Every other store test, fault loops included, runs fsck with all its checks."""
    from turnback.store import fsck as fsck_mod

    monkeypatch.setattr(fsck_mod, "EXTRA_CHECKS", [])
