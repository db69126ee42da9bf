"""ruff with pyflakes' rules (the F set, chosen in pyproject.toml's [tool.ruff.lint]) over server/:
no unused import or variable, no undefined name. ruff comes with the test extra."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*paths) -> subprocess.CompletedProcess:
    argv = ["check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), *map(str, paths)]
    return subprocess.run([sys.executable, "-m", "ruff", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_the_server_passes_pyflakes_rules():
    result = _ruff("server")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rules_catch_an_unused_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    result = _ruff(probe)
    assert result.returncode == 1 and "F401" in result.stdout and "F821" in result.stdout
