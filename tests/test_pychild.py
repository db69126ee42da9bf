"""The fault loops' children (tests/pychild.py) end as `python -c` ends: the same exit statuses
(an uncaught exception, sys.exit, a crash point's os._exit, a signal), the same output, arguments,
environment and working folder, a fault plan read from their own environment, a timeout that kills."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pychild import run_python

CASES = [
    ("import sys; print('out', sys.argv[1:]); print('err', file=sys.stderr)", ("a", 2)),
    ("raise ValueError('boom')", ()),
    ("import sys; sys.exit(3)", ()),
    ("import os; os._exit(86)", ()),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", ()),
    ("import threading, time\ndef f():\n    time.sleep(0.05); print('joined')\n"
     "threading.Thread(target=f).start()", ()),
    ("import atexit; atexit.register(print, 'at exit')", ()),
    ("import os; print(os.getcwd(), os.environ.get('PYCHILD_PROBE'))", ()),
    ("from turnback.store import fs; from turnback.store.testing import faultplan; print(faultplan.current() and faultplan.current().fail_at)", ()),
]


@pytest.mark.parametrize("code,args", CASES)
def test_a_forked_child_ends_as_python_c_ends(tmp_path, code, args):
    env = {**os.environ, "PYCHILD_PROBE": "yes", "TURNBACK_FAIL_AT": "7"}
    plain = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    forked = run_python(code, *args, env=env, cwd=tmp_path)
    assert (forked.returncode, forked.stdout) == (plain.returncode, plain.stdout)
    assert forked.stderr.splitlines()[-1:] == plain.stderr.splitlines()[-1:]


def test_a_child_past_its_timeout_is_killed():
    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time; time.sleep(30)", timeout=0.5)
    assert run_python("print('next')").stdout == "next\n"  # the parent serves on


def test_a_child_is_forked_from_the_workers_turnback_parent(monkeypatch):
    """Not a `python -c` of the worker's own (the fallback): its parent is the forking process,
    which had imported turnback before the child's code ran."""
    monkeypatch.delenv("TURNBACK_TEST_FRESH_CHILDREN", raising=False)
    code = "import os, sys; print(os.getppid(), 'turnback.workbench' in sys.modules)"
    parent, imported = run_python(code).stdout.split()
    assert int(parent) != os.getpid() and imported == "True"
