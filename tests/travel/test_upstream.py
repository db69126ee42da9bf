"""A committed and pushed change is named in a later rewind's (or restore's) confirmation: "this change
has left the machine" (issue 23, item 5), read from the upstream of the current branch, read-only."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          env=ENV, text=True).stdout


def pushed_session(a, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True, env=ENV)
    root = a.root
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a0")
    (root / "b.txt").write_text("b0")
    git(root, "add", "a.txt", "b.txt")
    git(root, "commit", "-qm", "start")
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "-u", "origin", "main")
    a.turn("one", {"a.txt": "a1", "b.txt": "b1"})
    git(root, "commit", "-qam", "the agent's change")
    git(root, "push", "-q")
    (root / "b.txt").write_text("b1 and more, not pushed")  # the disk differs from the upstream
    a.wb.turns.capture({"uris": [a.uri("b.txt")]})
    return remote


def test_a_pushed_change_is_named_in_the_confirmation(agent, tmp_path):
    a = agent()
    pushed_session(a, tmp_path)
    index = (a.root / ".git" / "index").read_bytes()
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    files = {f["path"]: f for f in c["files"]}
    assert files["a.txt"]["pushed"] == "origin/main"
    assert "pushed" not in files["b.txt"]  # its image now is not the pushed one
    assert "This change has left the machine: a.txt is committed and pushed to origin/main" \
        in c["summary"]
    assert (a.root / ".git" / "index").read_bytes() == index  # git was only read
    # the restore's confirmation says the same; the plan hash does not depend on it
    r = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": {"kind": "beforePrompt", "turn": 1}})
    assert r["files"][0]["pushed"] == "origin/main"
    out = a.wb.restore.commit({"paths": ["a.txt"], "boundary": {"kind": "beforePrompt", "turn": 1},
                               "planHash": r["planHash"]})
    assert out["status"] == "committed" and (a.root / "a.txt").read_text() == "a0"


def test_no_upstream_says_nothing(agent):
    a = agent()
    git(a.root, "init", "-q", "-b", "main")
    (a.root / "a.txt").write_text("a0")
    git(a.root, "add", "a.txt")
    git(a.root, "commit", "-qm", "start")
    a.turn("one", {"a.txt": "a1"})
    git(a.root, "commit", "-qam", "local only")
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    assert not any("pushed" in f for f in c["files"])
    assert "left the machine" not in c["summary"] and "upstream" not in c
