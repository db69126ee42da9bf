"""A new user's first hour (issue 40): before the first turn the session view shows no gap for what
turnback wrote itself (`turnback hooks install`, run in the editor's terminal once the editor's server
runs) nor for Git's own files, which an editor's watcher reports as `git status` refreshes the index.
The rule (docs/capture.md, "Git's files and turnback's own"): `.git/` internals reported by an
editor (a watcher's event, a save) are never the session's files; a file an editor reports between
turns before any sweep saw the workspace is learnt as it is, as that sweep would learn it."""

from __future__ import annotations

import subprocess

from turnback.hooks.install import install


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "n", "GIT_AUTHOR_EMAIL": "n@x", "GIT_COMMITTER_NAME": "n",
                        "GIT_COMMITTER_EMAIL": "n@x", "PATH": "/usr/bin:/bin", "HOME": str(root)})


def test_hooks_installed_and_git_index_refreshed_before_the_first_turn_are_no_gap(agent, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    a = agent()
    (a.root / "app.py").write_text("print(1)\n")
    _git(a.root, "init", "-q")
    _git(a.root, "add", "app.py")
    _git(a.root, "commit", "-qm", "init")
    install("claude-code", "project", a.root)   # in the editor's terminal
    # what VS Code's `**/*` watcher then reports: the new settings file, Git's refreshed index
    a.wb.turns.capture_rels([".claude", ".claude/settings.json", ".git/index", ".git"], by="watch")
    assert a.wb.live_gaps() == []
    n = a.turn("first prompt", {"app.py": "print(2)\n"})
    assert a.wb.live_gaps() == [] and not a.log()["turns"][n - 1]["gaps"]
    # the settings file is the workspace as it was, not anyone's edit in the turn or after it
    assert [f["path"] for f in a.log()["turns"][n - 1]["files"]] == ["app.py"]


def test_an_editor_save_inside_git_is_no_gap_but_an_agents_capture_there_still_is(agent):
    a = agent()
    (a.root / ".git").mkdir()
    (a.root / ".git" / "COMMIT_EDITMSG").write_text("msg\n")
    a.wb.turns.capture_rels([".git/COMMIT_EDITMSG"], by="save")  # `git commit` in the editor
    assert a.wb.live_gaps() == []
    a.begin("touch git's data")
    a.write(".git/config", "[core]\n")  # an agent's tool wrote into Git's data: a rewind cannot undo it
    assert [g["reason"] for g in a.wb.live_gaps()] == ["git-internal"]
