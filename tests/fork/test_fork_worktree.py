"""Worktree Fork: a separate folder restored to turn k, with its own store and session, provenance
to the parent; the parent stays live and unfrozen and the workspace is untouched."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from forkkit import three_turns
from sessionkit import Agent

from turnback.errors import TurnbackError
from turnback.store.layout import Store
from turnback.travel.offline import lineage


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".turnback" not in p.parts and ".git" not in p.parts}


def test_a_plain_copy_worktree_fork(agent, tmp_path):
    a = agent()
    three_turns(a)
    parent = a.wb.state.session_id
    before = a.files()
    target = tmp_path / "branch-here"
    report = a.wb.fork.prepare({"turn": 1})
    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "worktree": str(target)})
    assert out["status"] == "forked" and out["branch"]["worktree"] == str(target.resolve())
    assert out["branch"]["mode"] == "copy"
    # The workspace and the parent are untouched and live.
    assert a.files() == before and a.wb.state.session_id == parent and not a.wb.state.frozen
    a.turn("parent goes on", {"p.txt": "p"})
    # The folder holds the captured files as they were at the end of turn 1.
    assert _files(target) == {"a.txt": b"a1"}
    # Its own store and session, with provenance pointing at the parent.
    child = Agent(target)
    try:
        lin = child.log()["lineage"]
        assert (lin["parentId"], lin["forkTurn"], lin["parentStore"]) == \
            (parent, 1, str(a.root.resolve() / ".turnback"))
        assert child.wb.state.session_id == out["branch"]["sessionId"]
        child.turn("branch work", {"a.txt": "w2"})  # before-images are known: no gap
        assert child.log()["turns"][0]["gaps"] == []
        view = lineage(Store.open(target / ".turnback", kind=None, create=False))
        assert view["edges"][0]["kind"] == "from-another-store" and view["orphans"] == []
    finally:
        child.close()
    listed = {s["sessionId"]: s for s in a.wb.sessions.list()["sessions"]}
    wt = listed[out["branch"]["sessionId"]]
    assert wt["worktree"] == str(target.resolve()) and wt["parentId"] == parent and not wt["frozen"]
    view = lineage(Store.open(a.root / ".turnback", kind=None, create=False))
    assert [e["kind"] for e in view["edges"]] == ["worktree"]


def test_the_worktree_folder_must_be_new_or_empty_and_outside(agent, tmp_path):
    a = agent()
    three_turns(a)
    report = a.wb.fork.prepare({"turn": 1})
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    for bad in (a.root, a.root / "sub", full, link, tmp_path / "no" / "parent"):
        with pytest.raises(TurnbackError) as e:
            a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "worktree": str(bad)})
        assert e.value.code == "fork-worktree-target", bad
    assert not (a.root / "sub").exists() and len(a.wb.sessions.list()["sessions"]) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    out = a.wb.fork.confirm({"turn": 2, "hash": a.wb.fork.prepare({"turn": 2})["hash"],
                             "worktree": empty.as_uri()})
    assert out["status"] == "forked"
    assert _files(empty) == {"a.txt": b"a2", "b.txt": b"b2"}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_worktree_fork(agent, tmp_path):
    a = agent()
    git = ["git", "-C", str(a.root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    (a.root / "tracked.txt").write_text("in git\n")
    (a.root / "a.txt").write_text("a0")
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "tracked.txt", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "start"], check=True)
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})
    target = tmp_path / "wt"
    report = a.wb.fork.prepare({"turn": 1})
    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "worktree": str(target),
                             "git": True})
    assert out["status"] == "forked" and out["branch"]["mode"] == "git"
    assert (target / ".git").is_file()  # a linked worktree
    got = _files(target)
    assert got["a.txt"] == b"a1" and got["tracked.txt"] == b"in git\n" and "b.txt" not in got
    assert (a.root / "a.txt").read_text() == "a2"  # the workspace stays as it was
