"""The fault models of the seam behave like the failures they stand for."""

from __future__ import annotations

import errno
import os

import pytest

from turnback.store import fsio

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc/self/fd")


def test_a_full_disk_refuses_writes_but_lets_unlinks_and_renames_through(tmp_path):
    victim = tmp_path / "old"
    victim.write_bytes(b"x")
    (tmp_path / "a").write_bytes(b"a")
    with fsio.faults(disk_full_at=1) as plan:
        with pytest.raises(OSError) as exc:
            fsio.write_atomic(tmp_path / "new", b"data")
        assert exc.value.errno == errno.ENOSPC
        fsio.rename(tmp_path / "a", tmp_path / "b")
        fsio.unlink(victim)
        with pytest.raises(OSError):
            fsio.fsync_dir(tmp_path)
    assert plan.faulted == 2  # the create and the fsync of the folder
    assert not victim.exists() and (tmp_path / "b").read_bytes() == b"a"
    assert not (tmp_path / "new").exists()
    assert not [n for n in os.listdir(tmp_path) if fsio.is_temp_name(n)]


def test_sticky_faults_fail_every_operation_from_n_on(tmp_path):
    with fsio.faults(fail_at=2, sticky=True) as plan:
        fsio.mkdir(tmp_path / "d", sync=False)
        for _ in range(3):
            with pytest.raises(fsio.FaultInjected):
                fsio.unlink(tmp_path / "missing", missing_ok=True)
    assert plan.faulted == 3


@linux_only
def test_lost_unsynced_writes_undo_what_no_fsync_made_durable(tmp_path):
    durable, lazy, gone = tmp_path / "durable", tmp_path / "lazy", tmp_path / "gone"
    gone.write_bytes(b"still here after the crash")
    (tmp_path / "kept").write_bytes(b"kept")
    with fsio.faults(lose_unsynced=True) as plan:
        fsio.write_atomic(durable, b"synced")  # temp, fsync, rename, fsync of the folder
        fsio.write_atomic(lazy, b"never synced", sync=False)
        fsio.unlink(gone)  # no folder fsync after it
        fd = fsio.open_for_append(tmp_path / "kept")
        fsio.append(fd, b" and more")  # not fsynced
        os.close(fd)
        assert plan.unsynced.lose_unsynced() > 0
    assert durable.read_bytes() == b"synced"
    assert not lazy.exists()
    assert gone.read_bytes() == b"still here after the crash"
    assert (tmp_path / "kept").read_bytes() == b"kept"
    assert not [n for n in os.listdir(tmp_path) if fsio.is_temp_name(n)]


@linux_only
def test_a_rename_without_a_folder_fsync_is_lost_and_the_old_file_comes_back(tmp_path):
    target = tmp_path / "t"
    target.write_bytes(b"old")
    with fsio.faults(lose_unsynced=True) as plan:
        tmp = fsio.temp_path(target)
        fd = fsio.create(tmp)
        fsio.append(fd, b"new")
        fsio.fsync(fd)
        os.close(fd)
        fsio.rename(tmp, target)
        plan.unsynced.lose_unsynced()
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["t"]


@linux_only
def test_a_folder_made_without_a_sync_of_its_parent_is_lost_with_its_files(tmp_path):
    with fsio.faults(lose_unsynced=True) as plan:
        fsio.mkdir(tmp_path / "d", sync=False)
        fsio.write_atomic(tmp_path / "d" / "f", b"x")
        plan.unsynced.lose_unsynced()
    assert not (tmp_path / "d").exists()


def test_the_environment_installs_each_model(monkeypatch):
    plan = fsio.install_from_env({"TURNBACK_DISK_FULL_AT": "3", "TURNBACK_CRASH_AT": "9",
                                  "TURNBACK_CRASH_MODEL": "lose-unsynced"})
    try:
        assert plan.disk_full_at == 3 and plan.crash_at == 9 and plan.unsynced is not None
    finally:
        fsio.install(None)
