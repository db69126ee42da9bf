"""A change of mode alone is applied by a chmod through the seam: fenced, on a descriptor opened
without following a link, never by path through a link, never outside the workspace."""

import os
import stat

import pytest

from turnback.errors import SymlinkRefused
from turnback.store.layout import Store
from turnback.travel.disk import put_mode
from turnback.workspace.fence import Workspace


def mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


@pytest.fixture
def outside(tmp_path):
    (tmp_path / "out").mkdir()
    secret = tmp_path / "out" / "tool"
    secret.write_text("private")
    os.chmod(secret, 0o600)
    return secret


def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root, Workspace(root, Store.open(root / ".turnback").path)


def test_a_link_at_the_path_is_refused(tmp_path, outside):
    root, ws = workspace(tmp_path)
    os.symlink(outside, root / "tool")
    with pytest.raises(SymlinkRefused):
        put_mode(ws, "tool", 0o755)
    assert mode(outside) == 0o600


def test_a_folder_swapped_for_a_link_after_the_check_is_refused_by_the_seam(tmp_path, outside,
                                                                           monkeypatch):
    root, ws = workspace(tmp_path)
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("x")
    monkeypatch.setattr(ws, "check_components", lambda rel: None)  # the swap lands after the check
    (root / "bin" / "tool").unlink()
    (root / "bin").rmdir()
    os.symlink(outside.parent, root / "bin")
    with pytest.raises(OSError):
        put_mode(ws, "bin/tool", 0o755)
    assert mode(outside) == 0o600


def test_a_link_at_the_path_after_the_check_is_never_followed(tmp_path, outside, monkeypatch):
    root, ws = workspace(tmp_path)
    monkeypatch.setattr(ws, "check_components", lambda rel: None)
    os.symlink(outside, root / "tool")
    with pytest.raises(OSError):
        put_mode(ws, "tool", 0o755)
    assert mode(outside) == 0o600


def test_inside_git_nothing_is_chmodded(tmp_path):
    root, ws = workspace(tmp_path)
    (root / ".git").mkdir()
    (root / ".git" / "hook").write_text("x")
    os.chmod(root / ".git" / "hook", 0o644)
    with pytest.raises(SymlinkRefused):
        put_mode(ws, ".git/hook", 0o755)
    assert mode(root / ".git" / "hook") == 0o644


def test_a_rewind_whose_file_became_a_link_mid_commit_chmods_nothing_outside(agent, outside):
    """The file is swapped for a link to a file outside after the backups, before the chmod: the
    rewind is rolled back and lists the path; the outside file keeps its bits."""
    a = agent()
    tool = a.root / "tool"
    tool.write_text("x")
    os.chmod(tool, 0o600)
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.wb.turns.capture({"uris": [a.uri("tool")], "phase": "before"})
    os.chmod(tool, 0o755)
    a.wb.turns.capture({"uris": [a.uri("tool")]})
    a.write("a.txt", "a2")
    a.settle()
    boundary = {"kind": "beforePrompt", "turn": 2}
    c = a.wb.rewind.prepare({"boundary": boundary})
    job = a.wb.rewind.commit_job({"boundary": boundary, "planHash": c["planHash"]})
    result = None
    try:
        step = next(job)
        while True:
            if isinstance(step, tuple) and step[0] == "apply" and step[1] == 1:  # a.txt written; tool is next
                tool.unlink()
                os.symlink(outside, tool)
                os.chmod(outside, 0o644)  # (so a chmod through the link would show)
            step = job.send(None)
    except StopIteration as done:
        result = done.value
    assert result["status"] == "rolled-back"
    assert mode(outside) == 0o644 and outside.read_text() == "private"
    assert (a.root / "a.txt").read_text() == "a2"  # put back
