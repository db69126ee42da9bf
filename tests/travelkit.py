"""Test support for rewind, Redo, fork and recovery (issue 25): the command line in this process, the
whole tree (bytes, modes and empty folders), and crash points found by what they do.

A uniquely named module at the top of tests/, so every test folder can import it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from pychild import run_python

from turnback.cli.main import main


def turnback(root, *args, stdin: str = "") -> tuple[int, str, str]:
    """`turnback --workspace ROOT ARGS…` run through the real command line, in this process."""
    out, err = io.StringIO(), io.StringIO()
    old_in = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(["--workspace", str(root), *args])
            except SystemExit as exc:  # argparse usage errors
                rc = exc.code
    finally:
        sys.stdin = old_in
    return rc, out.getvalue(), err.getvalue()


def ok(root, *args) -> str:
    rc, out, err = turnback(root, *args)
    assert rc == 0, f"turnback {' '.join(map(str, args))} -> {rc}\n{out}\n{err}"
    return out


def as_json(root, *args):
    rc, out, err = turnback(root, "--json", *args)
    assert rc == 0, f"turnback --json {' '.join(map(str, args))} -> {rc}\n{out}\n{err}"
    return json.loads(out)


def tree(root) -> dict:
    """The whole workspace outside the store and .git: every file as (bytes, permission bits) and
    every empty folder as "folder" (a folder's presence is part of the tree, not only its files)."""
    out = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in (".turnback", ".git"))
        rel = Path(dirpath).relative_to(root).as_posix()
        if rel != "." and not dirnames and not filenames:
            out[rel + "/"] = "folder"
        for name in filenames:
            p = Path(dirpath) / name
            key = p.relative_to(root).as_posix()
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(p))
            else:
                out[key] = (p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def temp_files(root) -> list[str]:
    """turnback's own temp files left in the workspace (never the store)."""
    from turnback.store import fs

    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".turnback"]
        found += [os.path.join(dirpath, n) for n in filenames if fs.TEMP_MARK in n]
    return found


# A child program: open the workspace, prepare and confirm a fork at turn 1, with a fault plan
# installed just before the confirm (argv: workspace, store kind, crash point or 0, model).
FORK_CHILD = """
import sys, json
from turnback.workbench import Workbench, Options
from turnback.store import fs
from turnback.store.testing import faultplan
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
r = wb.fork.prepare({"turn": 1})


class AfterNth(faultplan.FaultPlan):
    # crash at the operation right after the Nth one naming SUBSTRING (argv[3] "after:N:SUBSTRING"):
    # found by what it does, not by a number counted in another run
    def tick(self, op, path, src=None):
        super().tick(op, path, src)
        n, _, what = sys.argv[3][len("after:"):].partition(":")
        if self.log[-1].startswith(("link", "rename")) and what in self.log[-1]:
            self.seen = getattr(self, "seen", 0) + 1
            if self.seen == int(n):
                self.crash_at = self.count + 1


spec = sys.argv[3]
plan = (AfterNth(lose_unsynced=sys.argv[4] == "lose-unsynced") if spec.startswith("after:") else
        faultplan.FaultPlan(crash_at=int(spec) or None, lose_unsynced=sys.argv[4] == "lose-unsynced"))
faultplan.install(plan)
out = wb.fork.confirm({"turn": 1, "hash": r["hash"]})
faultplan.install(None)
assert out["status"] == "forked", out
wb.close()
print(json.dumps(plan.log))
"""


def child(code: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    return run_python(code, *args, env=env, timeout=timeout)


def operations(code: str, work, *args) -> list[str]:
    """The file-system operations `code` makes after it installs its plan (it prints plan.log)."""
    proc = child(code, work, *args, 0, "kill")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_op(log: list[str], predicate) -> int:
    """The 1-based number of the first operation `predicate(op)` holds for."""
    return next(i for i, op in enumerate(log, 1) if predicate(op))


def last_op(log: list[str], predicate) -> int:
    """The 1-based number of the last operation `predicate(op)` holds for."""
    return max(i for i, op in enumerate(log, 1) if predicate(op))


def fork(a, turn: int, **extra) -> dict:
    """Prepare and confirm a fork at `turn` through the workbench of a sessionkit Agent."""
    report = a.wb.fork.prepare({"turn": turn})
    return a.wb.fork.confirm({"turn": turn, "hash": report["hash"], **extra})
