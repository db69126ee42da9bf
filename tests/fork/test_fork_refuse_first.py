"""Refuse before you begin (issue 25, item 4) and a worktree fork's bad input: every check that can
refuse runs before the fork's first record, so `turnback branch` lists only forks that really began;
a worktree target that appears while the fork runs is refused, its contents untouched; `--git` alone
is refused, not ignored; submodules are initialised at the commit HEAD records, listed as a gap, or
(with local changes) refused."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from forkkit import file_turn
from sessionkit import Agent
from travelkit import as_json, turnback

from turnback.errors import TurnbackError
from turnback.store import lineage

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root, *args, check=True):
    return subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c",
                           "user.name=t", "-c", "protocol.file.allow=always", *args],
                          check=check, capture_output=True, text=True)


def two_turns(a: Agent):
    file_turn(a, "one", {"a.txt": "a1"})
    file_turn(a, "two", {"a.txt": "a2", "b.txt": "b2"})


def no_fork_began(a: Agent) -> None:
    assert lineage.forks(a.wb.store) == []
    view = as_json(a.root, "branch")
    assert view["interrupted"] == [] and len(view["sessions"]) == 1


def cli(a: Agent, *args):
    """The command line while this test's workbench lets go of the store (then it takes it back)."""
    a.wb.close()
    try:
        return turnback(a.root, *args)
    finally:
        a.wb = type(a.wb).open(a.root, a.options)


def confirm(a: Agent, turn: int = 1, **extra):
    report = a.wb.fork.prepare({"turn": turn})
    return a.wb.fork.confirm({"turn": turn, "hash": report["hash"], **extra})


@needs_git
@pytest.mark.parametrize("setup,reason", [("none", "not-a-repository"), ("init", "no-commits")])
def test_a_git_worktree_fork_that_cannot_be_made_is_refused_before_it_begins(agent, tmp_path,
                                                                              setup, reason):
    a = agent()
    if setup == "init":
        git(a.root, "init", "-q")
    two_turns(a)
    for attempt in range(2):
        with pytest.raises(TurnbackError) as e:
            confirm(a, worktree=str(tmp_path / f"wt{attempt}"), git=True)
        assert e.value.code == "fork-git" and e.value.data["reason"] == reason
        assert not (tmp_path / f"wt{attempt}").exists()
    no_fork_began(a)
    rc, _out, err = cli(a, "fork", "--turn", "1", "--worktree", str(tmp_path / "wt9"), "--git",
                        "--yes")
    assert rc == 1 and "fork-git" in err
    no_fork_began(a)


def test_git_without_a_worktree_means_nothing_and_is_refused(agent):
    a = agent()
    two_turns(a)
    with pytest.raises(TurnbackError) as e:
        confirm(a, git=True)
    assert e.value.code == "invalid-params" and e.value.data["field"] == "git"
    rc, _out, err = cli(a, "fork", "--turn", "1", "--git", "--yes")
    assert rc == 1 and "--worktree" in err
    assert a.files() == {"a.txt": b"a2", "b.txt": b"b2"} and not a.wb.state.frozen
    no_fork_began(a)


@pytest.mark.parametrize("use_git", [False, True], ids=["copy", "git"])
def test_a_worktree_target_that_appears_while_the_fork_runs(agent, tmp_path, use_git):
    if use_git and shutil.which("git") is None:
        pytest.skip("needs git")
    a = agent()
    if use_git:
        git(a.root, "init", "-q")
        (a.root / "base.txt").write_text("base")
        git(a.root, "add", "base.txt")
        git(a.root, "commit", "-qm", "base")
    two_turns(a)
    target = tmp_path / "wt"
    report = a.wb.fork.prepare({"turn": 1})
    job = a.wb.fork.confirm_job({"turn": 1, "hash": report["hash"], "worktree": str(target),
                                 "git": use_git})
    next(job)  # the target was checked (it did not exist); the fork is under way
    target.mkdir()
    (target / "theirs.txt").write_text("someone else's")
    with pytest.raises(TurnbackError) as e:
        for _ in job:
            pass
    assert e.value.code == "fork-worktree-target" and "nothing was written" in e.value.message \
        or "git worktree add" in e.value.message
    assert sorted(p.name for p in target.iterdir()) == ["theirs.txt"]
    assert (target / "theirs.txt").read_text() == "someone else's"
    no_fork_began(a)
    assert not a.wb.state.frozen and a.files()["a.txt"] == b"a2"


def _superproject(root, tmp_path):
    """A git workspace whose HEAD records a submodule `lib` (cloned from a repository elsewhere)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "lib.c").write_text("int one;\n")
    git(upstream, "add", "lib.c")
    git(upstream, "commit", "-qm", "lib one")
    git(root, "init", "-q")
    (root / "main.c").write_text("main\n")
    git(root, "add", "main.c")
    git(root, "submodule", "add", "-q", str(upstream), "lib")
    git(root, "commit", "-qm", "with lib")
    return git(upstream, "rev-parse", "HEAD").stdout.strip()


@needs_git
def test_a_git_worktree_fork_initialises_submodules_at_the_recorded_commit(agent, tmp_path):
    a = agent()
    recorded = _superproject(a.root, tmp_path)
    two_turns(a)
    target = tmp_path / "wt"
    out = confirm(a, worktree=str(target), git=True)
    assert out["status"] == "forked" and out["gaps"] == []
    assert git(target / "lib", "rev-parse", "HEAD").stdout.strip() == recorded
    assert (target / "lib" / "lib.c").read_text() == "int one;\n"
    status = git(target, "submodule", "status").stdout
    assert status.startswith(" ") and "lib" in status  # initialised, at the recorded commit
    assert git(target / "lib", "status", "--porcelain").stdout == ""
    assert (target / "a.txt").read_text() == "a1"


@needs_git
def test_an_uninitialised_submodule_is_a_gap_and_stays_empty(agent, tmp_path):
    a = agent()
    _superproject(a.root, tmp_path)
    git(a.root, "submodule", "deinit", "-q", "-f", "lib")  # the parent has no checkout of it
    two_turns(a)
    target = tmp_path / "wt"
    out = confirm(a, worktree=str(target), git=True)
    assert out["status"] == "forked"
    assert [(g["path"], g["reason"]) for g in out["gaps"]] == [("lib", "submodule-uninitialised")]
    assert list((target / "lib").iterdir()) == []  # as git leaves it: no half state, no loose file
    git(target, "submodule", "update", "--init", "-q")  # and git can still initialise it
    assert (target / "lib" / "lib.c").exists()


@needs_git
@pytest.mark.parametrize("change", ["uncommitted", "other-commit"])
def test_a_submodule_with_local_changes_is_refused(agent, tmp_path, change):
    a = agent()
    _superproject(a.root, tmp_path)
    if change == "uncommitted":
        (a.root / "lib" / "lib.c").write_text("int mine;\n")
    else:
        (a.root / "lib" / "new.c").write_text("x")
        git(a.root / "lib", "add", "new.c")
        git(a.root / "lib", "commit", "-qm", "local")
    two_turns(a)
    with pytest.raises(TurnbackError) as e:
        confirm(a, worktree=str(tmp_path / "wt"), git=True)
    assert e.value.code == "fork-git" and e.value.data == {"reason": "submodule-changed",
                                                           "paths": ["lib"]}
    assert "lib" in e.value.message and not (tmp_path / "wt").exists()
    no_fork_began(a)
