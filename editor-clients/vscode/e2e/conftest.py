"""Fixtures of the real-editor suite: the tools it needs (from run.sh), a workspace with a real
session, one code-server with the packaged extension, one headless Chromium."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def _required(name: str, what: str) -> str:
    value = os.environ.get(name)
    if not value or not Path(value).exists():
        pytest.fail(f"{name} is not set to {what} (run editor-clients/vscode/e2e/run.sh, which builds it)",
                    pytrace=False)
    return value


@pytest.fixture(scope="session")
def tools() -> dict:
    turnback = os.environ.get("TURNBACK_E2E_TURNBACK") or shutil.which("turnback")
    if not turnback:
        pytest.fail("no `turnback` command: pip install -e . in the repository", pytrace=False)
    return {
        "code_server": _required("TURNBACK_CODE_SERVER", "code-server's entry script"),
        "vsix": _required("TURNBACK_VSIX", "the packaged extension (.vsix)"),
        "turnback": str(Path(turnback).resolve()),
    }


@pytest.fixture(scope="session")
def shots() -> Path:
    """Screenshots of every step: a CI artifact under the build folder, never committed."""
    path = Path(os.environ.get("TURNBACK_E2E_ARTIFACTS") or REPO / "build" / "vscode-e2e")
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


@pytest.fixture(scope="session")
def scratch():
    path = Path(tempfile.mkdtemp(prefix="turnback-e2e-")).resolve()
    yield path
    if not os.environ.get("TURNBACK_E2E_KEEP"):
        shutil.rmtree(path, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(autouse=True)
def screenshot_on_failure(request):
    """A failed step leaves a picture of the window at that moment."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed and "vscode" in request.fixturenames:
        try:
            request.getfixturevalue("vscode").ui.shot(f"FAILED-{request.node.name}")
        except Exception:
            pass
