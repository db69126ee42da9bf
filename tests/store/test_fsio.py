import errno
import os
import stat

import pytest

from sessionkit import assert_faulted, counting_reads
from turnback.store import fs
from turnback.store.testing import faultplan
from .conftest import run_py


def mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def no_temps(folder):
    return [n for n in os.listdir(folder) if fs.is_temp_name(n)] == []


def test_write_atomic_bytes_and_chunks(tmp_path):
    p = tmp_path / "f"
    fs.write_atomic(p, b"one")
    assert p.read_bytes() == b"one" and mode(p) == 0o600
    fs.write_atomic(p, iter([b"tw", b"", b"o"]), mode=0o644)
    assert p.read_bytes() == b"two" and mode(p) == 0o644
    assert no_temps(tmp_path)


def test_write_atomic_fault_at_every_op_keeps_old_or_new(tmp_path):
    p = tmp_path / "f"
    fs.write_atomic(p, b"old")
    n, faulted = 1, 0
    while True:
        with faultplan.faults(fail_at=n) as plan:
            try:
                fs.write_atomic(p, b"new")
                failed = False
            except faultplan.FaultInjected as exc:
                failed = True
                assert exc.errno == errno.EIO
        assert p.read_bytes() in (b"old", b"new")
        assert no_temps(tmp_path)
        if not failed:
            assert plan.count < n
            break
        faulted += plan.faulted > 0
        fs.write_atomic(p, b"old")
        n += 1
    assert n == 6  # create, write, fsync, rename, fsync_dir
    assert_faulted(faulted, n - 1, "write_atomic failed at every operation")


def test_faults_counts_and_logs(tmp_path):
    with faultplan.faults() as plan:
        fs.write_atomic(tmp_path / "x", b"1")
    assert plan.count == 5
    assert [e.split()[0] for e in plan.log] == ["create", "write", "fsync", "rename", "fsync_dir"]
    assert faultplan.current() is None


def test_sticky_fault_fails_everything_after(tmp_path):
    with faultplan.faults(fail_at=2, sticky=True):
        with pytest.raises(faultplan.FaultInjected):
            fs.write_atomic(tmp_path / "x", b"1")
        with pytest.raises(faultplan.FaultInjected):
            fs.mkdir(tmp_path / "d")
    assert not (tmp_path / "x").exists()


def test_create_exclusive(tmp_path):
    p = tmp_path / "h"
    assert fs.create_exclusive(p, b"first") is True
    assert fs.create_exclusive(p, b"second") is False
    assert p.read_bytes() == b"first" and mode(p) == 0o600
    assert no_temps(tmp_path)


def test_create_exclusive_fault_never_leaves_partial(tmp_path):
    p = tmp_path / "h"
    n, faulted = 1, 0
    while True:
        with faultplan.faults(fail_at=n) as plan:
            try:
                ok = fs.create_exclusive(p, b"data")
            except faultplan.FaultInjected:
                ok = None
        assert not p.exists() or p.read_bytes() == b"data"
        failed_op = plan.log[n - 1].split()[0] if len(plan.log) >= n else None
        # only a failed cleanup unlink may leave a temp file behind (swept later by the owner)
        assert no_temps(tmp_path) or failed_op == "unlink"
        for name in os.listdir(tmp_path):
            if fs.is_temp_name(name):
                os.unlink(tmp_path / name)
        if ok is not None and plan.count < n:
            break
        faulted += plan.faulted > 0
        fs.unlink(p, missing_ok=True)
        n += 1
    assert n > 3
    assert_faulted(faulted, n - 1, "create_exclusive failed at every operation")


def test_create_exclusive_refuses_through_symlink(tmp_path):
    (tmp_path / "target").write_bytes(b"t")
    os.symlink(tmp_path / "target", tmp_path / "link")
    assert fs.create_exclusive(tmp_path / "link", b"x") is False
    assert (tmp_path / "target").read_bytes() == b"t"


def test_mkdir_modes_and_parents(tmp_path):
    old = os.umask(0o077)
    try:
        fs.mkdir(tmp_path / "a" / "b", mode=0o700)
    finally:
        os.umask(old)
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700
    fs.mkdir(tmp_path / "a")  # exist_ok
    with pytest.raises(FileExistsError):
        fs.mkdir(tmp_path / "a", exist_ok=False)


def test_append_truncate_unlink_rename_chmod(tmp_path):
    p = tmp_path / "log"
    fd = fs.open_for_append(p)
    try:
        fs.append(fd, b"abc")
        fs.append(fd, b"def")
        fs.fsync(fd)
        fs.truncate(fd, 2)
    finally:
        os.close(fd)
    assert p.read_bytes() == b"ab"
    fs.chmod(p, 0o640)
    assert mode(p) == 0o640
    fs.rename(p, tmp_path / "log2")
    fs.unlink(tmp_path / "log2")
    fs.unlink(tmp_path / "log2", missing_ok=True)
    with pytest.raises(FileNotFoundError):
        fs.unlink(tmp_path / "log2")
    fs.mkdir(tmp_path / "d")
    fs.rmdir(tmp_path / "d")
    fs.fsync_dir(tmp_path)


@pytest.mark.parametrize("n", [3, 40])
def test_syncfs_or_fsync(tmp_path, n):
    paths = []
    for i in range(n):
        p = tmp_path / f"f{i}"
        p.write_bytes(b"x")
        paths.append(p)
    with faultplan.faults() as plan:
        fs.syncfs_or_fsync(paths)
    expected = 1 if n >= fs.sync._SYNCFS_MIN and fs.sync._libc_syncfs else n
    assert plan.count == expected


def test_crash_at_env_exits_with_crash_code(tmp_path):
    target = tmp_path / "f"
    r = run_py(f"""
        from turnback.store import fs
        from turnback.store.testing import faultplan
        fs.write_atomic({str(target)!r}, b"a")
        fs.write_atomic({str(target)!r}, b"b")
    """, env={"TURNBACK_CRASH_AT": "7"})
    assert r.returncode == faultplan.CRASH_EXIT, r.stderr
    assert target.read_bytes() == b"a"  # crashed before the second write's write (op 7)


def test_fail_at_env(tmp_path):
    r = run_py(f"""
        from turnback.store import fs
        from turnback.store.testing import faultplan
        try:
            fs.write_atomic({str(tmp_path / 'f')!r}, b"a")
        except faultplan.FaultInjected:
            print("injected")
    """, env={"TURNBACK_FAIL_AT": "3"})
    assert r.stdout.strip() == "injected", r.stderr


def test_install_from_env_ignores_empty():
    assert fs.install_from_env({}) is None


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 20) - 1, 1 << 20, (3 << 20) + 5])
def test_a_file_is_read_in_reads_sized_by_its_stat(tmp_path, monkeypatch, size):
    """`iter_read` asks one byte past the expected end, so a short read there is the end: the number
    of reads is the 1 MiB chunks the file needs, and a small file allocates no 1 MiB buffer."""
    p = tmp_path / "f"
    data = os.urandom(size)
    p.write_bytes(data)
    asked = counting_reads(monkeypatch, fs.read)
    assert fs.read_file(p) == data
    assert len(asked) == size // fs.READ_CHUNK + 1
    assert asked[0] == min(size + 1, fs.READ_CHUNK)


def test_a_file_longer_or_shorter_than_expected_is_read_to_its_end(tmp_path, monkeypatch):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100 + b"y" * (2 << 20))
    asked = counting_reads(monkeypatch, fs.read)
    fd = os.open(p, os.O_RDONLY)
    try:
        assert b"".join(fs.iter_read(fd, 100)) == p.read_bytes()  # grew after its stat
        assert min(asked) > 1 and len(asked) <= 5
        os.lseek(fd, 0, os.SEEK_SET)
        assert b"".join(fs.iter_read(fd, 10 << 20)) == p.read_bytes()  # shrank after it
    finally:
        os.close(fd)
