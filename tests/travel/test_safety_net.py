"""One safety net for every transaction (issue 25, item 1): whatever rewind, Redo, a fork in place, a
worktree fork or the recovery of an interrupted fork overwrites that turnback never captured is
kept, Redo offers it, and it comes back through the real command line. The collector keeps it."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from sessionkit import Agent
from travelkit import FORK_CHILD, as_json, child, ok, operations, turnback

from turnback.store.fsck import fsck
from turnback.store.testing.faultplan import CRASH_EXIT


def _two_turns(root, kind="heads"):
    a = Agent(root, store_kind=kind)
    a.turn("one", {"a.txt": "a1", "b.txt": "b1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})
    a.close()


def _workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    _two_turns(root)
    return root


def _redo_to(root, predicate) -> dict:
    """Pick the Redo group the predicate wants (from `turnback redo --json`), and redo it."""
    groups = as_json(root, "redo")["groups"]
    group = next(g for g in groups if predicate(g))
    ok(root, "redo", "--head", str(group["headSeq"]), "--yes")
    return group


def _gc(root):
    ok(root, "gc")  # what the collector keeps is what Redo can still bring back
    assert fsck(root / ".turnback").ok


def test_rewind_over_an_uncaptured_edit_then_redo_brings_it_back(tmp_path):
    root = _workspace(tmp_path)
    (root / "a.txt").write_text("mine, never captured")
    ok(root, "rewind", "--before-prompt", "2", "--yes")
    assert (root / "a.txt").read_text() == "a1"
    _gc(root)
    _redo_to(root, lambda g: g["turnCount"] == 2)
    assert (root / "a.txt").read_text() == "mine, never captured"


def test_redo_over_an_uncaptured_edit_then_redo_brings_it_back(tmp_path):
    root = _workspace(tmp_path)
    ok(root, "rewind", "--before-prompt", "2", "--yes")
    (root / "b.txt").write_text("my edit after the rewind")
    _redo_to(root, lambda g: g["turnCount"] == 2)
    assert (root / "b.txt").read_text() == "b2"
    _gc(root)
    _redo_to(root, lambda g: g["turnCount"] == 1)
    assert (root / "b.txt").read_text() == "my edit after the rewind"


def test_a_fork_in_place_over_an_uncaptured_edit_then_redo_brings_it_back(tmp_path):
    root = _workspace(tmp_path)
    (root / "a.txt").write_text("mine, never captured")
    out = ok(root, "fork", "--turn", "1", "--yes")
    assert "a.txt" in out and "Redo" in out  # the report names the edit it overwrites, and the way back
    assert (root / "a.txt").read_text() == "a1"
    _gc(root)
    listed = ok(root, "redo")
    assert "frozen" in listed  # the state offered belongs to the frozen parent, and says so
    _redo_to(root, lambda g: g["turnCount"] == 2)
    assert (root / "a.txt").read_text() == "mine, never captured"
    assert (root / "b.txt").read_text() == "b2"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_worktree_fork_over_a_checked_out_file_then_redo_there_brings_it_back(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    git = ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    (root / "a.txt").write_text("a0")
    _two_turns(root)
    (root / "a.txt").write_text("committed, never captured")
    subprocess.run(git + ["add", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "mine"], check=True)
    target = tmp_path / "wt"
    ok(root, "fork", "--turn", "1", "--worktree", str(target), "--git", "--yes")
    assert (target / "a.txt").read_text() == "a1"  # the turn-1 image, over git's checkout
    _gc(target)
    _redo_to(target, lambda g: True)  # the checkout as git made it, offered in the worktree
    assert (target / "a.txt").read_text() == "committed, never captured"
    assert (root / "a.txt").read_text() == "committed, never captured"  # the parent: untouched


def test_recovery_that_finishes_a_fork_keeps_what_it_overwrites(tmp_path):
    """A fork killed after its commit point, over an uncaptured edit: the next command that takes
    the store finishes it (and says so), and Redo still brings the edit back."""
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _two_turns(pristine)
    (pristine / "b.txt").write_text("mine, never captured")
    log = operations(FORK_CHILD, shutil.copytree(pristine, tmp_path / "count"), "heads")
    heads = [op for op in log if "/heads/" in op and op.startswith(("link", "rename"))]
    assert len(heads) == 2  # the before head (the edit kept), then the branch: the commit point
    root = shutil.copytree(pristine, tmp_path / "ws")
    proc = child(FORK_CHILD, root, "heads", "after:2:/heads/", "kill")
    assert proc.returncode == CRASH_EXIT, proc.stderr
    rc, out, err = turnback(root, "redo")
    assert rc == 0, err
    assert "finished" in err and "fork" in err  # the recovering command says what it did
    assert (root / "b.txt").read_text() == "b1"
    _gc(root)
    _redo_to(root, lambda g: g["turnCount"] == 2)
    assert (root / "b.txt").read_text() == "mine, never captured"
