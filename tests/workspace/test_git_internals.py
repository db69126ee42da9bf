"""Defect 13: nothing under a `.git` folder (or a worktree's or submodule's `.git` file) is ever
captured or restored, whichever way it is asked for."""

import pytest

from turnback.errors import SymlinkRefused
from turnback.travel.disk import put_image
from turnback.workspace.fence import Workspace


@pytest.mark.parametrize("rel", [".git", ".git/config", ".git/refs/heads/main", "sub/.git",
                                 "sub/.git/HEAD", "vendor/lib/.git/index"])
def test_git_internal_paths(rel):
    assert Workspace.git_internal(rel)


@pytest.mark.parametrize("rel", [".gitignore", "a/.gitattributes", ".github/x.yml", "git/x", "a.git"])
def test_not_git_internal(rel):
    assert not Workspace.git_internal(rel)


def test_capture_of_git_internals_is_a_gap_and_stores_nothing(agent):
    a = agent()
    (a.root / ".git").mkdir()
    (a.root / ".git" / "config").write_text("[core]\n")
    a.begin("touches git")
    objects_before = sorted(p.name for p in (a.root / ".turnback" / "objects").rglob("*"))
    out = a.wb.turns.capture({"uris": [a.uri(".git/config")]})
    assert any(g["reason"] == "git-internal" for g in out.get("gaps", [])), out
    assert sorted(p.name for p in (a.root / ".turnback" / "objects").rglob("*")) == objects_before
    assert ".git/config" not in a.wb.state.running.files


def test_rewind_never_restores_git_internals_even_if_recorded(agent):
    """A session recorded by an older turnback may hold `.git` images: the plan leaves them alone."""
    a = agent()
    (a.root / "sub").mkdir()
    (a.root / "sub" / ".git").write_text("gitdir: ../.git/worktrees/sub\n")  # a worktree's .git file
    a.begin("one")
    a.wb.book.record({"op": "image", "rel": "sub/.git", "turn": 1, "before": "absent",
                      "after": a.wb.store.objects.put(b"gitdir: ../.git/worktrees/sub\n"), "ts": 1.0})
    a.write("a.txt", "new")
    a.settle()
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    plan = {f["path"]: f for f in c["files"]}
    assert plan["sub/.git"]["action"] == "unchanged"
    assert any(g["reason"] == "git-internal" for g in c["gaps"])
    out = a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 1},
                              "planHash": c["planHash"]})
    assert out["status"] == "committed"
    assert (a.root / "sub" / ".git").read_text() == "gitdir: ../.git/worktrees/sub\n"
    assert not (a.root / "a.txt").exists()


def test_put_image_refuses_git_internals(tmp_path):
    from turnback.store.layout import Store

    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    store = Store.open(root / ".turnback")
    ws = Workspace(root, store.path)
    digest = store.objects.put(b"ref: refs/heads/evil\n")
    with pytest.raises(SymlinkRefused):
        put_image(ws, store.objects, ".git/HEAD", digest)
    assert not (root / ".git" / "HEAD").exists()
