"""Defect 5: a restore sets the mode on the file descriptor before the rename, never by path after
it, so a path swapped for a link right after the rename cannot redirect a chmod out of the
workspace."""

import os
import stat

from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.layout import Store
from turnback.travel.disk import put_image
from turnback.workspace.fence import Workspace


def test_mode_of_a_file_outside_the_workspace_is_never_changed(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "secret"
    outside.write_text("private")
    os.chmod(outside, 0o600)
    store = Store.open(root / ".turnback")
    ws = Workspace(root, store.path)
    digest = store.objects.put(b"restored bytes")
    real_rename = fs.ops.os.replace

    def rename_then_swap(src, dst, **dir_fds):
        real_rename(src, dst, **dir_fds)
        if os.fspath(dst) in ("f.txt", str(root / "f.txt")):
            target = root / "f.txt"
            os.unlink(target)  # a racing process swaps the restored file for a link
            os.symlink(outside, target)

    monkeypatch.setattr(fs.ops.os, "replace", rename_then_swap)
    put_image(ws, store.objects, "f.txt", digest, mode=0o644)
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o600
    assert outside.read_text() == "private"


def test_restored_file_gets_the_mode_on_creation(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    store = Store.open(root / ".turnback")
    ws = Workspace(root, store.path)
    digest = store.objects.put(b"#!/bin/sh\n")
    with faultplan.faults() as plan:
        put_image(ws, store.objects, "run.sh", digest, mode=0o755)
    assert stat.S_IMODE(os.lstat(root / "run.sh").st_mode) == 0o755
    assert not any(entry.startswith("chmod") for entry in plan.log)
