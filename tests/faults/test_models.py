"""The fault models of the seam behave like the failures they stand for."""

from __future__ import annotations

import errno
import os

import pytest

from turnback.store import fs
from turnback.store.testing import faultplan

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc/self/fd")


def test_a_full_disk_refuses_writes_but_lets_unlinks_and_renames_through(tmp_path):
    victim = tmp_path / "old"
    victim.write_bytes(b"x")
    (tmp_path / "a").write_bytes(b"a")
    with faultplan.faults(disk_full_at=1) as plan:
        with pytest.raises(OSError) as exc:
            fs.write_atomic(tmp_path / "new", b"data")
        assert exc.value.errno == errno.ENOSPC
        fs.rename(tmp_path / "a", tmp_path / "b")
        fs.unlink(victim)
        with pytest.raises(OSError):
            fs.fsync_dir(tmp_path)
    assert plan.faulted == 2  # the create and the fsync of the folder
    assert not victim.exists() and (tmp_path / "b").read_bytes() == b"a"
    assert not (tmp_path / "new").exists()
    assert not [n for n in os.listdir(tmp_path) if fs.is_temp_name(n)]


def test_sticky_faults_fail_every_operation_from_n_on(tmp_path):
    with faultplan.faults(fail_at=2, sticky=True) as plan:
        fs.mkdir(tmp_path / "d", sync=False)
        for _ in range(3):
            with pytest.raises(faultplan.FaultInjected):
                fs.unlink(tmp_path / "missing", missing_ok=True)
    assert plan.faulted == 3


@linux_only
def test_lost_unsynced_writes_undo_what_no_fsync_made_durable(tmp_path):
    durable, lazy, gone = tmp_path / "durable", tmp_path / "lazy", tmp_path / "gone"
    gone.write_bytes(b"still here after the crash")
    (tmp_path / "kept").write_bytes(b"kept")
    with faultplan.faults(lose_unsynced=True) as plan:
        fs.write_atomic(durable, b"synced")  # temp, fsync, rename, fsync of the folder
        fs.write_atomic(lazy, b"never synced", sync=False)
        fs.unlink(gone)  # no folder fsync after it
        fd = fs.open_for_append(tmp_path / "kept")
        fs.append(fd, b" and more")  # not fsynced
        os.close(fd)
        assert plan.unsynced.lose_unsynced() > 0
    assert durable.read_bytes() == b"synced"
    assert not lazy.exists()
    assert gone.read_bytes() == b"still here after the crash"
    assert (tmp_path / "kept").read_bytes() == b"kept"
    assert not [n for n in os.listdir(tmp_path) if fs.is_temp_name(n)]


@linux_only
def test_a_rename_without_a_folder_fsync_is_lost_and_the_old_file_comes_back(tmp_path):
    target = tmp_path / "t"
    target.write_bytes(b"old")
    with faultplan.faults(lose_unsynced=True) as plan:
        tmp = fs.temp_path(target)
        fd = fs.create(tmp)
        fs.append(fd, b"new")
        fs.fsync(fd)
        os.close(fd)
        fs.rename(tmp, target)
        plan.unsynced.lose_unsynced()
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["t"]


@linux_only
def test_a_file_renamed_over_or_unlinked_comes_back_with_its_durable_bytes_not_its_last_ones(tmp_path):
    replaced, removed = tmp_path / "replaced", tmp_path / "removed"
    replaced.write_bytes(b"durable")
    removed.write_bytes(b"durable too")
    os.sync()
    with faultplan.faults(lose_unsynced=True) as plan:
        for path in (replaced, removed):
            fd = fs.open_for_append(path)
            fs.append(fd, b" and never synced")
            os.close(fd)
        fs.write_atomic(tmp_path / "new", b"new")
        fd = fs.create(tmp_path / "t.tmp")
        fs.append(fd, b"new bytes")
        fs.fsync(fd)
        os.close(fd)
        fs.rename(tmp_path / "t.tmp", replaced)  # no folder fsync: the rename is lost
        fs.unlink(removed)
        plan.unsynced.lose_unsynced()
    assert replaced.read_bytes() == b"durable"
    assert removed.read_bytes() == b"durable too"


@linux_only
def test_a_replaced_file_leaves_the_journal_so_its_inode_number_can_be_given_again(tmp_path):
    """The file system gives a freed inode number to the next new file, the crash's own re-created
    ones included: what was kept for the freed inode must go with it, or it is written over a file
    that took the number (the spool's power-cut loop once lost a synced agent record so)."""
    record = tmp_path / "record"
    with faultplan.faults(lose_unsynced=True) as plan:
        fs.write_atomic(record, b"first", sync=False)  # a lock's own unsynced write
        freed = os.stat(record).st_ino
        fs.write_atomic(record, b"second")  # synced: temp, fsync, rename, folder fsync
        assert not [e for e in plan.unsynced.entries if e.ino and e.ino[1] == freed]
        plan.unsynced.lose_unsynced()
    assert record.read_bytes() == b"second"


@linux_only
def test_a_folder_made_without_a_sync_of_its_parent_is_lost_with_its_files(tmp_path):
    with faultplan.faults(lose_unsynced=True) as plan:
        fs.mkdir(tmp_path / "d", sync=False)
        fs.write_atomic(tmp_path / "d" / "f", b"x")
        plan.unsynced.lose_unsynced()
    assert not (tmp_path / "d").exists()


def test_the_environment_installs_each_model(monkeypatch):
    plan = fs.install_from_env({"TURNBACK_DISK_FULL_AT": "3", "TURNBACK_CRASH_AT": "9",
                                  "TURNBACK_CRASH_MODEL": "lose-unsynced"})
    try:
        assert plan.disk_full_at == 3 and plan.crash_at == 9 and plan.unsynced is not None
    finally:
        faultplan.install(None)
