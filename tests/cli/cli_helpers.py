"""Helpers and fixtures for command-line tests: run `turnback` in-process (or as a real process).

A uniquely named module rather than a conftest.py, so that `from conftest import …` elsewhere in the
suite never meets this folder's module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnback.cli.main import main

VENV_BIN = Path(sys.executable).parent


class Cli:
    def __init__(self, root: Path, capsys):
        self.root = root
        self.capsys = capsys

    def __call__(self, *args: str, cwd: Path | None = None):
        """Run `turnback --workspace ROOT ARGS…` in this process from `cwd` (default the workspace);
        returns (exit status, stdout, stderr)."""
        self.capsys.readouterr()
        old = os.getcwd()
        os.chdir(cwd or self.root)
        try:
            try:
                rc = main(["--workspace", str(self.root), *args])
            except SystemExit as exc:  # argparse usage errors
                rc = exc.code
        finally:
            os.chdir(old)
        out, err = self.capsys.readouterr()
        return rc, out, err

    def json(self, *args: str, cwd: Path | None = None):
        rc, out, err = self("--json", *args, cwd=cwd)
        assert rc == 0, err
        return json.loads(out)

    def ok(self, *args: str) -> str:
        rc, out, err = self(*args)
        assert rc == 0, f"turnback {' '.join(args)} -> {rc}\n{out}\n{err}"
        return out

    def files(self) -> dict[str, bytes]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".turnback"]
            for name in filenames:
                p = Path(dirpath) / name
                if not p.is_symlink():
                    out[p.relative_to(self.root).as_posix()] = p.read_bytes()
        return out


# a process that opens the store, owns it, says "ready" and holds it until a line on its stdin
HOLDER = """
import sys
from turnback.workbench import Workbench
wb = Workbench.open(sys.argv[1])
assert wb.is_owner
print("ready", flush=True)
sys.stdin.readline()
wb.close()
"""


def turnback_exe() -> list[str]:
    exe = VENV_BIN / "turnback"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "turnback"]


def run_turnback(*args: str, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*turnback_exe(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def cli(ws, capsys):
    return Cli(ws, capsys)
