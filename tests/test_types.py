"""mypy over server/ with pyproject.toml's [tool.mypy]: the whole package is checked, the server's
dispatcher and services strictly, and the older modules that do not pass yet are listed there (a
list to shrink). mypy comes with the test extra."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _mypy(*paths, cache) -> subprocess.CompletedProcess:
    argv = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), *map(str, paths)]
    return subprocess.run([sys.executable, "-m", "mypy", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_the_server_passes_mypy(tmp_path):
    result = _mypy(cache=tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_strict_module_must_annotate_what_it_defines(tmp_path):
    """The strict flags reach the modules they name: an unannotated function in a new service is
    an error there, and the same function in a module not named strict passes."""
    package = tmp_path / "turnback"
    services = package / "lsp" / "services"
    services.mkdir(parents=True)
    for folder in (package, package / "lsp", services):
        (folder / "__init__.py").write_text("")
    body = "def renew(lease):\n    return lease\n"
    (services / "probe.py").write_text(body)
    (package / "loose.py").write_text(body)
    strict = _mypy(services / "probe.py", cache=tmp_path / "cache")
    assert strict.returncode == 1 and "no-untyped-def" in strict.stdout, strict.stdout
    loose = _mypy(package / "loose.py", cache=tmp_path / "cache")
    assert loose.returncode == 0, loose.stdout
