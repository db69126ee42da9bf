"""A serving owner imports what its jobs use before its loop runs: compiling a module inside a job
held the loop (the collector's first run compiled `collect` and `store.fsck` there, 70 ms without
cached bytecode). Checked in a fresh interpreter: after `create_server`, a session's turns, a
rewind and a collection import no further turnback module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, tempfile, pathlib
sys.path.insert(0, sys.argv[1])
from turnback.lsp.server import create_server
create_server()
before = set(sys.modules)
from sessionkit import Agent
root = pathlib.Path(tempfile.mkdtemp()) / "ws"
root.mkdir()
(root / "turnback.toml").write_text("")
(root / "a.txt").write_text("one\n")
a = Agent(root)
a.begin("first"); a.write("a.txt", "two\n"); a.write("b.txt", "new\n"); a.settle()
a.begin("second"); a.write("a.txt", "three\n"); a.settle()
wb = a.wb
boundary = {"kind": "beforePrompt", "turn": 2}
candidate = wb.rewind.prepare({"boundary": boundary})
assert wb.rewind.commit({"boundary": boundary, "planHash": candidate["planHash"]})["status"] == \
    "committed"
wb.run(wb.collection.job())
a.wb.close()
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("turnback."))))
"""


def _imported_during_jobs(preload: bool) -> list[str]:
    code = CHILD if preload else CHILD.replace(
        "create_server()", "import turnback.lsp.preload as p; p.JOB_MODULES = (); create_server()")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    proc = subprocess.run([sys.executable, "-c", code, str(TESTS)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_servers_jobs_import_nothing_on_its_loop():
    assert _imported_during_jobs(preload=True) == []


def test_without_the_preload_the_same_jobs_would_compile_modules_on_the_loop():
    """The check above can fail: the same session imports the collector lazily."""
    late = _imported_during_jobs(preload=False)
    assert "turnback.collect" in late, late
