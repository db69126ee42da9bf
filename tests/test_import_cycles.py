"""Imports point down only (docs/architecture.md): no circle in server/turnback's import graph.

A module-level circle anywhere fails. A circle that closes only through an import inside a function
fails too (the last one, `hooks/{fast,fallback,runtime,drain}`, went with issue 44).
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_cycles)

# Known, and reported: each closes through a function-level import; shrink this list, never grow it.
KNOWN_FUNCTION_LEVEL: list[list[str]] = []


@pytest.fixture(scope="module")
def edges():
    """(module-level, function-level) edges of server/turnback, read once."""
    return import_cycles.graph()


def test_no_module_level_circle(edges):
    top, _ = edges
    assert len(top) > 150 and "turnback.workbench.core" in top  # the whole package was read
    assert import_cycles.circles(top) == []


def test_no_new_circle_through_a_function_level_import(edges):
    top, inner = edges
    both = {m: top[m] | inner[m] for m in top}
    assert import_cycles.circles(both) == KNOWN_FUNCTION_LEVEL


def test_the_checker_sees_a_circle_of_each_kind(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\n")
    (pkg / "c.py").write_text("import pkg.d\n")
    (pkg / "d.py").write_text("def f():\n    from . import c\n")
    top, inner = import_cycles.graph(pkg)
    assert import_cycles.circles(top) == [["pkg.a", "pkg.sub.b"]]
    both = {m: top[m] | inner[m] for m in top}
    assert import_cycles.circles(both) == [["pkg.a", "pkg.sub.b"], ["pkg.c", "pkg.d"]]


def test_an_import_only_the_type_checker_runs_is_no_edge(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "e.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from . import f\nelse:\n    from . import g\n")
    (pkg / "f.py").write_text("from . import e\n")
    (pkg / "g.py").write_text("from . import e\n")
    top, _ = import_cycles.graph(pkg)
    assert top["pkg.e"] == {"pkg.g"}  # the else branch runs
    assert import_cycles.circles(top) == [["pkg.e", "pkg.g"]]
