"""A live owner killed at sampled points of a rewind that removes a folder tree (issue 43's long
run, seeds 5006, 5007 and 5026 with an owner: a killed rewind that committed, finished by the next
command's recovery, left an empty `d/`, or `d/e/` and a turn's file, that the boundary lacks).

The owner is a real `serve --background` process whose file-system seam crashes it at its N-th
operation (`TURNBACK_CRASH_AT`, counted from its start: its opening sweep, the watcher's captures,
then the rewind it serves). N is swept until the owner outlives the rewind, so the sample crosses
the rewind's commit point whatever the machine's count of operations. After each kill the next
command (`turnback gc`) recovers, and the tree is the one before the rewind or the one an
uninterrupted rewind leaves, nothing else, and `turnback fsck` finds the store sound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from travelkit import ok, tree

TB = [sys.executable, "-m", "turnback"]
STEP = 9  # operations between two kills


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def run(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*TB, "--workspace", str(root), *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, **(env or {})))


def session(root: Path, how: str) -> None:
    """Turn 1 keeps a.txt; turn 2 makes the tree d/x.txt, d/e/y.txt; the user's files after it."""
    write(root, "a.txt", "a\n")
    ok(root, "turn", "begin", "--prompt", "p1")
    ok(root, "turn", "settle")
    ok(root, "turn", "begin", "--prompt", "p2")
    write(root, "d/x.txt", "x\n")
    write(root, "d/e/y.txt", "y\n")
    ok(root, "turn", "settle")
    if how == "users-files":  # captured by the owner's opening sweep
        write(root, "d/e/y.txt", "y, the user's\n")
        write(root, "d/e/f/z.txt", "z\n")


def owner_rewind(work: Path, how: str, crash_at: int | None) -> tuple[int, bool]:
    """Start an owner (crashing at its crash_at-th operation), let it watch the user's edit, run
    the rewind through it; return the rewind's exit status and whether the owner crashed."""
    env = {"TURNBACK_CRASH_AT": str(crash_at)} if crash_at else {}
    started = run(work, "serve", "--background", env=env)
    pid = json.loads(ok(work, "--json", "info"))["owner"].get("pid") if not started.returncode else 0
    if how == "watched":  # a file the user makes while the owner watches, in the doomed tree
        write(work, "d/u.txt", "the user's\n")
        time.sleep(0.4)  # the watcher's event and capture
    proc = run(work, "rewind", "--before-prompt", "2", "--yes")
    crashed = not alive(pid)
    if not crashed:
        ok(work, "daemon", "stop")
    return proc.returncode, crashed


def alive(pid: int | None) -> bool:
    """Whether the owner still runs (a crashed one may linger as a zombie nobody reaps)."""
    try:
        return bool(pid) and Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("how", ["turns-only", "users-files", "watched"])
def test_an_owner_killed_under_a_rewind_of_a_folder_tree_leaves_old_or_new(tmp_path, how):
    base = tmp_path / "base"
    base.mkdir()
    session(base, how)
    old = tree(base)
    if how == "watched":
        old["d/u.txt"] = (b"the user's\n", 0o644)
    whole = tmp_path / "whole"
    shutil.copytree(base, whole, symlinks=True)
    rc, crashed = owner_rewind(whole, how, None)
    assert rc == 0 and not crashed
    new = tree(whole)
    assert new != old and "d/x.txt" not in new
    seen = set()
    for n in range(10, 400, STEP):
        work = tmp_path / f"kill{n}"
        shutil.copytree(base, work, symlinks=True)
        rc, crashed = owner_rewind(work, how, n)
        ok(work, "gc")  # the next process that takes the store recovers (info only looks)
        got = tree(work)
        assert got in (old, new), (how, n, rc, sorted(got), sorted(old), sorted(new))
        fsck = run(work, "fsck")
        assert fsck.returncode == 0, (how, n, fsck.stdout, fsck.stderr)
        seen.add("old" if got == old else "new")
        shutil.rmtree(work)
        if not crashed:  # the owner outlived the rewind: later kills would miss it
            break
    assert seen == {"old", "new"}, seen  # the sample crossed the commit point
    info = json.loads(ok(tmp_path / "whole", "--json", "info"))
    assert info["turnCount"] == 1
