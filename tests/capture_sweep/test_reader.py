"""read_image: one status per kind of file, and a symlink target is never read."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from sessionkit import counting_reads
from turnback.capture import reader
from turnback.capture.reader import read_image
from turnback.errors import OutsideWorkspace


def test_ok(ws, objects):
    (ws.root / "a").mkdir()
    (ws.root / "a" / "f.txt").write_bytes(b"hello")
    r = read_image(ws, "a/f.txt", objects, max_bytes=100)
    assert r.status == "ok" and r.ok
    assert r.size == 5 and r.stat.size == 5
    st = os.lstat(ws.root / "a" / "f.txt")
    assert (r.stat.mtime_ns, r.stat.ctime_ns, r.stat.ino) == (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert objects.get(r.digest) == b"hello"


def test_empty_file(ws, objects):
    (ws.root / "e").write_bytes(b"")
    r = read_image(ws, "e", objects, max_bytes=0)
    assert r.status == "ok" and objects.get(r.digest) == b""


def test_absent(ws, objects):
    assert read_image(ws, "nope.txt", objects, max_bytes=10).status == "absent"
    assert read_image(ws, "no/dir/x", objects, max_bytes=10).status == "absent"
    (ws.root / "file").write_text("x")
    assert read_image(ws, "file/child", objects, max_bytes=10).status == "absent"


def test_too_large_is_not_read(ws, mem_objects):
    (ws.root / "big").write_bytes(b"x" * 101)
    r = read_image(ws, "big", mem_objects, max_bytes=100)
    assert r.status == "too-large" and r.size == 101 and r.digest is None
    assert mem_objects.puts == 0
    assert read_image(ws, "big", mem_objects, max_bytes=101).status == "ok"


def test_symlink_target_never_read(ws, mem_objects, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOP SECRET")
    (ws.root / "link").symlink_to(secret)
    (ws.root / "inner.txt").write_bytes(b"inner")
    (ws.root / "link2").symlink_to("inner.txt")
    for rel in ("link", "link2"):
        r = read_image(ws, rel, mem_objects, max_bytes=100)
        assert r.status == "symlink"
    # Without the parent check the open itself refuses (O_NOFOLLOW).
    assert read_image(ws, "link", mem_objects, max_bytes=100, check_parents=False).status == "symlink"
    assert mem_objects.puts == 0


def test_symlinked_parent(ws, mem_objects, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "f.txt").write_bytes(b"outside")
    (ws.root / "d").symlink_to(out)
    assert read_image(ws, "d/f.txt", mem_objects, max_bytes=100).status == "symlink"
    assert mem_objects.puts == 0


def test_a_symlink_gap_says_it_is_a_link_once(ws, mem_objects, tmp_path: Path):
    """The reason's words (model/gaps.py) already say "a symbolic link; turnback never follows or
    restores links": the detail adds only which folder is the link, never the same sentence again
    (both clients showed "… a symbolic link …: 'x' is a symbolic link …")."""
    (ws.root / "inner.txt").write_bytes(b"inner")
    (ws.root / "link").symlink_to("inner.txt")
    (ws.root / "d").symlink_to(tmp_path)
    for rel, detail in (("link", ""), ("d/f.txt", "its folder 'd' is the link")):
        for check_parents in (True, False):
            got = read_image(ws, rel, mem_objects, max_bytes=100, check_parents=check_parents)
            if rel == "d/f.txt" and not check_parents:
                continue  # only the parent check sees the folder (the sweep never walks into a link)
            assert (got.status, got.detail or "") == ("symlink", detail)


def test_not_a_file(ws, mem_objects):
    (ws.root / "dir").mkdir()
    assert read_image(ws, "dir", mem_objects, max_bytes=100).status == "not-a-file"
    os.mkfifo(ws.root / "fifo")
    r = read_image(ws, "fifo", mem_objects, max_bytes=100)  # must not block
    assert r.status == "not-a-file"


def test_unreadable_real_permissions(ws, mem_objects):
    p = ws.root / "locked"
    p.write_bytes(b"x")
    p.chmod(0)
    try:
        r = read_image(ws, "locked", mem_objects, max_bytes=100)
    finally:
        p.chmod(0o644)
    if os.geteuid() == 0:
        assert r.status == "ok"  # root reads anything; the monkeypatched test covers the status
    else:
        assert r.status == "unreadable" and r.errno == errno.EACCES


def test_unreadable_simulated(ws, mem_objects, monkeypatch):
    (ws.root / "f").write_bytes(b"x")
    real_open = os.open

    def fake_open(path, flags, *a, **kw):
        if str(path).endswith("/f"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(reader.os, "open", fake_open)
    r = read_image(ws, "f", mem_objects, max_bytes=100)
    assert r.status == "unreadable" and r.errno == errno.EACCES
    assert "EACCES" in r.detail


def test_unreadable_on_read_error(ws, mem_objects, monkeypatch):
    (ws.root / "f").write_bytes(b"x")

    def bad_read(fd, n):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(reader.os, "read", bad_read)
    r = read_image(ws, "f", mem_objects, max_bytes=100)
    assert r.status == "unreadable" and r.errno == errno.EIO


def test_changing_file_is_retried_then_refused(ws, mem_objects, monkeypatch):
    p = ws.root / "f"
    p.write_bytes(b"abc")
    real_read = os.read
    calls = {"n": 0}

    def read_and_touch(fd, n):
        calls["n"] += 1
        data = real_read(fd, n)
        if data:
            os.utime(p, ns=(calls["n"] * 10**9, calls["n"] * 10**9))
        return data

    monkeypatch.setattr(reader.os, "read", read_and_touch)
    r = read_image(ws, "f", mem_objects, max_bytes=100)
    assert r.status == "unreadable" and "changing" in r.detail
    assert mem_objects.puts == 0


def test_store_streaming_path(ws, objects, monkeypatch):
    monkeypatch.setattr(reader, "IN_MEMORY_LIMIT", 4)
    (ws.root / "f").write_bytes(b"0123456789")
    r = read_image(ws, "f", objects, max_bytes=100)
    assert r.status == "ok" and objects.get(r.digest) == b"0123456789"
    r = read_image(ws, "f", objects, max_bytes=9)
    assert r.status == "too-large"


def test_fence_errors_raise(ws, mem_objects):
    with pytest.raises(OutsideWorkspace):
        read_image(ws, "../x", mem_objects, max_bytes=10)
    with pytest.raises(OutsideWorkspace):
        read_image(ws, ".turnback/FORMAT", mem_objects, max_bytes=10)


def test_a_file_is_read_in_one_call_into_a_buffer_of_its_size(ws, objects, monkeypatch):
    """One read asking for the file's size plus one byte: a 1 MiB buffer per file was an mmap and a
    munmap each (their TLB shootdowns stalled every other thread; a 20,000-file first checkpoint
    spent half its time in the kernel), and the read that only saw the end of the file was another
    system call."""
    (ws.root / "f").write_bytes(b"x" * 5000)
    (ws.root / "e").write_bytes(b"")
    asked = counting_reads(monkeypatch, reader)
    assert read_image(ws, "f", objects, max_bytes=1 << 20).size == 5000
    assert asked == [5001]
    asked.clear()
    assert read_image(ws, "e", objects, max_bytes=1 << 20).size == 0
    assert asked == [1]


def test_a_file_that_grew_after_its_stat_is_read_whole_in_big_reads(ws, objects, monkeypatch):
    """The first read asks for the stat's size; bytes past it are read on in chunks (never a byte
    at a time), and the retry then stores what the file holds."""
    p = ws.root / "f"
    p.write_bytes(b"a" * 10)
    grown = b"a" * 10 + b"b" * (3 << 20)

    def grow_first(asked):
        if not asked:
            p.write_bytes(grown)  # after open and fstat, before the first read

    asked = counting_reads(monkeypatch, reader, before=grow_first)
    r = read_image(ws, "f", objects, max_bytes=8 << 20)
    assert r.status == "ok" and objects.get(r.digest) == grown
    assert len(asked) < 20 and min(asked[1:]) > 1  # never a byte at a time
