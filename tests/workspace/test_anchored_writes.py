"""Defect 12: the fence's time-of-check window is closed. Every write below the workspace root (and
the store's parent) is resolved component by component from the root with O_NOFOLLOW, so a folder
swapped for a link after the check, or a store moved away and linked back, gets no write."""

import os

import pytest

from turnback.errors import NotOwner
from turnback.store import fs
from turnback.store.layout import Store
from turnback.travel.disk import put_image
from turnback.workspace import fence
from turnback.workspace.fence import Workspace


def _tree(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def test_a_parent_swapped_for_a_link_after_the_check_gets_no_write(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    store = Store.open(root / ".turnback")
    ws = Workspace(root, store.path)
    digest = store.objects.put(b"restored")
    real_ensure = Workspace.ensure_parent_dirs

    def check_then_swap(self, rel):
        real_ensure(self, rel)  # the last check before the write ...
        os.rename(root / "src", tmp_path / "moved-src")  # ... and the race right after it
        os.symlink(outside, root / "src")

    monkeypatch.setattr(Workspace, "ensure_parent_dirs", check_then_swap)
    with pytest.raises(OSError):
        put_image(ws, store.objects, "src/a.py", digest)
    assert os.listdir(outside) == []  # was: the restore landed outside the workspace


def test_store_moved_away_and_linked_back_gets_no_write(agent, tmp_path):
    a = agent()
    a.turn("one", {"a.txt": "one"})
    elsewhere = tmp_path / "elsewhere"
    os.rename(a.root / ".turnback", elsewhere)
    os.symlink(elsewhere, a.root / ".turnback")
    before = _tree(elsewhere)
    (a.root / "b.txt").write_text("two")
    with pytest.raises((NotOwner, OSError)):
        a.wb.run(a.wb.turns.begin_job({"prompt": "two"}))
    with pytest.raises((NotOwner, OSError)):
        a.wb.turns.capture({"uris": [a.uri("b.txt")]})
    with pytest.raises((NotOwner, OSError)):
        a.wb.book.publish()
    assert _tree(elsewhere) == before  # no capture, journal frame or head written outside
    assert not a.wb.is_owner and a.wb.status()["ownership"] == "observer"
    os.unlink(a.root / ".turnback")
    os.rename(elsewhere, a.root / ".turnback")


def test_writes_outside_any_fenced_root_still_work(tmp_path):
    p = tmp_path / "plain" / "f"
    p.parent.mkdir()
    fs.write_atomic(p, b"x")
    assert p.read_bytes() == b"x"


def test_seam_refuses_a_linked_folder_below_a_root(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "target").mkdir()
    os.symlink(tmp_path / "target", root / "linked")
    Workspace(root, root / ".turnback")
    with pytest.raises(OSError):
        fs.write_atomic(root / "linked" / "f", b"x")
    assert os.listdir(tmp_path / "target") == []
    assert fence.fs is fs
