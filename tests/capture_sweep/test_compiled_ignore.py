"""The compiled ignore patterns kept between commands (capture/compiled.py): a line is compiled by
pathspec once, read back as the same rule, and a cache of another pathspec, torn or corrupt is
ignored (compiled again), never read as a wrong rule."""

from __future__ import annotations

import subprocess
import sys

from turnback.capture import compiled
from turnback.capture.ignore import DEFAULT_IGNORE, IgnoreRules
from turnback.workspace.fence import Workspace

PROBES = [("node_modules", True), ("src/node_modules", True), ("a.pyc", False), ("x/__pycache__", True),
          ("keep.txt", False), ("build/out.o", False), ("logs/a.log", False), ("logs/keep.log", False)]
LINES = ["*.log", "!keep.log", "build/", "/top-only", "bad[", "**/deep/**"]


def _verdicts(root, lines):
    (root / ".gitignore").write_text("\n".join(lines) + "\n")
    rules = IgnoreRules(Workspace(root, root / ".turnback"), DEFAULT_IGNORE)
    probes = PROBES + [("top-only", False), ("a/top-only", False), ("a/deep/b", False)]
    return [rules.ignored(rel, is_dir) for rel, is_dir in probes]


def _fresh_process_verdicts(root, cache_file) -> tuple[list, bool]:
    code = ("import json, sys, pathlib\n"
            "from turnback.capture import compiled\n"
            "from turnback.capture.ignore import DEFAULT_IGNORE, IgnoreRules\n"
            "from turnback.workspace.fence import Workspace\n"
            "root = pathlib.Path(sys.argv[1])\n"
            "compiled.load(sys.argv[2])\n"
            "rules = IgnoreRules(Workspace(root, root / '.turnback'), DEFAULT_IGNORE)\n"
            f"probes = {PROBES!r} + [('top-only', False), ('a/top-only', False), ('a/deep/b', False)]\n"
            "print(json.dumps([[rules.ignored(r, d) for r, d in probes], 'pathspec' in sys.modules]))\n")
    import json

    out = subprocess.run([sys.executable, "-c", code, str(root), str(cache_file)], capture_output=True,
                         text=True, check=True).stdout
    verdicts, imported = json.loads(out)
    return verdicts, imported


def _kept(tmp_path):
    """A workspace with LINES, its verdicts in this process, and the cache this process keeps."""
    root = tmp_path / "ws"
    root.mkdir()
    expected = _verdicts(root, LINES)
    cache = tmp_path / "cache" / compiled.FILE_NAME
    compiled._dirty = True
    compiled.save(cache)
    return root, expected, cache


def test_a_kept_line_reads_back_as_the_same_rule_without_pathspec(tmp_path):
    root, expected, cache = _kept(tmp_path)
    got, imported = _fresh_process_verdicts(root, cache)
    assert got == expected
    assert not imported  # every line, the defaults and the .gitignore's, came from the cache


def test_a_cache_of_another_pathspec_or_damaged_is_compiled_again(tmp_path):
    root, expected, cache = _kept(tmp_path)
    data = cache.read_bytes()
    cache.write_bytes(data[:-7])  # torn
    got, imported = _fresh_process_verdicts(root, cache)
    assert got == expected and imported
    real = compiled._mark_cache
    try:
        compiled._mark_cache = ["elsewhere", 1, 2]  # as if written by another pathspec
        compiled._dirty = True
        compiled.save(cache)
    finally:
        compiled._mark_cache = real
    got, imported = _fresh_process_verdicts(root, cache)
    assert got == expected and imported
