"""A plan that writes into many folders makes their names durable with one syncfs of the workspace's
file system instead of a fsync per folder (travel/disk.py, `SYNCFS_FOLDERS`), and a power cut right
after the commit still finds every file the rewind wrote: the crash model (store/testing/crashfs.py) undoes
every rename no sync covered, so skipping that syncfs fails here."""

from __future__ import annotations

import os

import pytest
from sessionkit import Agent
from travelkit import tree

from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.travel import disk

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/fd") or fs.sync._load_syncfs() is None,
                                reason="the crash model needs /proc, and this path syncfs")

FOLDERS = [f"pkg{i}/sub" for i in range(disk.SYNCFS_FOLDERS + 2)]
B2 = {"kind": "beforePrompt", "turn": 2}


def build(root):
    a = Agent(root)
    a.turn("one", {f"{d}/f.txt": "one" for d in FOLDERS} | {"top.txt": "one"})
    a.turn("two", {f"{d}/f.txt": "two" for d in FOLDERS} | {"top.txt": "two", "gone/new.txt": "n"})
    return a


@linux_only
def test_a_power_cut_after_a_rewind_into_many_folders_keeps_every_file_it_wrote(tmp_path):
    a = build(tmp_path / "w")
    want = None
    with faultplan.faults(lose_unsynced=True) as plan:
        c = a.wb.rewind.prepare({"boundary": B2})
        assert len({os.path.dirname(f["path"]) for f in c["files"]}) > disk.SYNCFS_FOLDERS
        assert a.wb.rewind.commit({"boundary": B2, "planHash": c["planHash"]})["status"] == "committed"
        workspace = [line.split()[0] for line in plan.log if "/.turnback" not in line]
        want = tree(a.root)
        plan.unsynced.lose_unsynced()  # the power cut, right after the commit returned
    a.wb.close()
    assert want[f"{FOLDERS[0]}/f.txt"][0] == b"one"
    assert tree(a.root) == want  # every rename the rewind made survived the cut
    # one syncfs for the temp files' bytes, one for the names: no fsync per folder
    assert workspace.count("syncfs") == 2
    assert workspace.count("fsync_dir") == 0
    again = Agent(a.root)
    try:
        assert again.wb.state.turn_count == 1
        assert tree(again.root) == want
    finally:
        again.wb.close()


@linux_only
def test_syncfs_makes_renames_durable_in_the_crash_model(tmp_path):
    target = tmp_path / "t"
    target.write_bytes(b"old")
    os.sync()
    with faultplan.faults(lose_unsynced=True) as plan:
        fs.write_atomic(target, b"new", sync=False)
        fs.syncfs_at(tmp_path)
        fs.write_atomic(tmp_path / "later", b"after the sync", sync=False)
        plan.unsynced.lose_unsynced()
    assert target.read_bytes() == b"new"
    assert not (tmp_path / "later").exists()  # what came after the syncfs is still lost


@linux_only
def test_syncfs_leaves_another_file_systems_changes_unsynced(tmp_path):
    other = "/dev/shm"
    if not os.path.isdir(other) or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system to write on")
    here = tmp_path / "here"
    there = os.path.join(other, f"turnback-test-{os.getpid()}")
    try:
        with faultplan.faults(lose_unsynced=True) as plan:
            fs.write_atomic(here, b"x", sync=False)
            fs.write_atomic(there, b"y", sync=False)
            fs.syncfs_at(tmp_path)
            plan.unsynced.lose_unsynced()
        assert here.read_bytes() == b"x"
        assert not os.path.exists(there)
    finally:
        if os.path.exists(there):
            os.unlink(there)
