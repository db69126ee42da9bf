"""The pre-turn sweep and its stat cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnback.capture import reader, sweep as sweep_mod
from turnback.capture.statcache import RACY_MARGIN_NS, StatCache
from turnback.capture.sweep import SweepProgress, SweepResult, iter_sweep, sweep
from turnback.workspace import Workspace

OLD_NS = 1_600_000_000 * 10**9  # 2020: comfortably outside the racy window


def put(root: Path, rel: str, data: bytes, *, old: bool = True) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    if old:
        os.utime(p, ns=(OLD_NS, OLD_NS))
    return p


@pytest.fixture
def tree(ws):
    put(ws.root, "a.txt", b"alpha")
    put(ws.root, "src/b.py", b"print(1)\n")
    put(ws.root, "src/deep/c.md", b"# c\n")
    put(ws.root, "ünï cödé/d e.txt", b"unicode")
    return ws


def test_first_sweep_hashes_everything(tree, objects):
    cache = StatCache()
    res = sweep(tree, objects, cache, max_bytes=1000)
    assert set(res.images) == {"a.txt", "src/b.py", "src/deep/c.md", "ünï cödé/d e.txt"}
    assert res.hashed == 4 and res.walked == 4
    assert res.gaps == [] and res.absent == set()
    assert objects.get(res.images["src/b.py"]) == b"print(1)\n"
    assert len(cache) == 4


def test_second_sweep_hashes_nothing(tree, objects, tmp_path):
    cache = StatCache()
    first = sweep(tree, objects, cache, max_bytes=1000)
    path = tree.store_path / "cache" / "stat.cbor"
    cache.save(path)
    loaded = StatCache.load(path)
    assert loaded.entries == cache.entries
    second = sweep(tree, objects, loaded, max_bytes=1000)
    assert second.hashed == 0 and second.walked == 4
    assert second.images == first.images


def test_write_behind_the_back_same_size(tree, mem_objects):
    cache = StatCache()
    sweep(tree, mem_objects, cache, max_bytes=1000)
    p = tree.root / "a.txt"
    p.write_bytes(b"ALPHA")  # same size
    os.utime(p, ns=(OLD_NS + 10**9, OLD_NS + 10**9))
    res = sweep(tree, mem_objects, cache, max_bytes=1000)
    assert res.hashed == 1
    assert mem_objects.get(res.images["a.txt"]) == b"ALPHA"


def test_mtime_restored_still_detected_by_ctime(tree, mem_objects):
    cache = StatCache()
    sweep(tree, mem_objects, cache, max_bytes=1000)
    p = tree.root / "a.txt"
    time.sleep(0.01)
    p.write_bytes(b"ALPHA")
    os.utime(p, ns=(OLD_NS, OLD_NS))  # same size, same mtime as cached: only ctime moved
    res = sweep(tree, mem_objects, cache, max_bytes=1000)
    assert res.hashed == 1 and mem_objects.get(res.images["a.txt"]) == b"ALPHA"


def test_racy_entries_are_rehashed(ws, mem_objects):
    put(ws.root, "fresh.txt", b"v1", old=False)  # mtime is "now": racily clean
    cache = StatCache()
    assert sweep(ws, mem_objects, cache, max_bytes=100).hashed == 1
    entry = cache.get("fresh.txt")
    assert entry.mtime_ns >= entry.observed_ns - RACY_MARGIN_NS
    # Same tick, same size, same everything the stat shows: must still be looked at again.
    res = sweep(ws, mem_objects, cache, max_bytes=100)
    assert res.hashed == 1
    # Once the entry was observed long enough after its mtime, it is trusted.
    e = cache.get("fresh.txt")
    cache.entries["fresh.txt"] = e._replace(observed_ns=e.mtime_ns + RACY_MARGIN_NS + 1)
    assert sweep(ws, mem_objects, cache, max_bytes=100).hashed == 0


def test_racy_same_tick_rewrite_is_caught(ws, mem_objects):
    p = put(ws.root, "r.txt", b"one", old=False)
    st0 = os.lstat(p)
    cache = StatCache()
    sweep(ws, mem_objects, cache, max_bytes=100)
    # Rewrite with the same size and force every stat field the cache keys on back to the old
    # values except ctime, which we cannot set: simulate a coarse clock by patching the cache.
    p.write_bytes(b"two")
    os.utime(p, ns=(st0.st_atime_ns, st0.st_mtime_ns))
    st1 = os.lstat(p)
    e = cache.get("r.txt")
    cache.entries["r.txt"] = e._replace(ctime_ns=st1.st_ctime_ns)  # as if ctime did not move
    res = sweep(ws, mem_objects, cache, max_bytes=100)
    assert mem_objects.get(res.images["r.txt"]) == b"two"


def test_gitignore_root_nested_negation(ws, mem_objects):
    put(ws.root, ".gitignore", b"*.log\n!keep.log\nbuild/\n")
    put(ws.root, "a.log", b"x")
    put(ws.root, "keep.log", b"k")
    put(ws.root, "build/out.o", b"o")
    put(ws.root, "pkg/.gitignore", b"gen/\n!also.log\n")
    put(ws.root, "pkg/gen/g.py", b"g")
    put(ws.root, "pkg/also.log", b"l")
    put(ws.root, "pkg/main.py", b"m")
    put(ws.root, "pkg/skip.log", b"s")
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert set(res.images) == {".gitignore", "keep.log", "pkg/.gitignore", "pkg/also.log",
                               "pkg/main.py"}


def test_store_and_git_skipped(ws, mem_objects):
    put(ws.root, ".turnback/objects/ab/cdef", b"object")
    put(ws.root, ".turnback/FORMAT", b"format")
    put(ws.root, ".git/HEAD", b"ref: refs/heads/main\n")
    put(ws.root, "sub/.git/config", b"[core]\n")
    put(ws.root, "real.txt", b"r")
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert set(res.images) == {"real.txt"}
    assert res.walked == 1


def test_store_elsewhere_name_is_not_special(tmp_path, mem_objects):
    root = tmp_path / "p"
    root.mkdir()
    w = Workspace(root, tmp_path / "store")
    put(root, ".turnback/x", b"x")
    assert set(sweep(w, mem_objects, StatCache(), max_bytes=100).images) == {".turnback/x"}


def test_symlinks_are_gaps_and_never_read(ws, mem_objects, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"SECRET")
    (ws.root / "file-link").symlink_to(outside / "secret.txt")
    (ws.root / "dir-link").symlink_to(outside)
    (ws.root / "dangling").symlink_to(tmp_path / "nowhere")
    put(ws.root, "ok.txt", b"ok")
    opened: list[str] = []
    real_open = reader.os.open

    def spy(path, flags, *a, **kw):
        # the store's writes resolve their folders from the root (dir_fd=): not workspace reads
        if kw.get("dir_fd") is None and not flags & os.O_DIRECTORY:
            opened.append(str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(reader.os, "open", spy)
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert sorted(res.gaps) == [("dangling", "symlink"), ("dir-link", "symlink"),
                                ("file-link", "symlink")]
    assert set(res.images) == {"ok.txt"}
    assert b"SECRET" not in mem_objects.blobs.values()
    refused = {str(ws.root / n) for n in ("file-link", "dir-link", "dangling")}
    assert not any(p in refused or p.startswith(str(outside)) for p in opened)
    store = str(ws.store_path)  # the real object store opens its own files: not workspace reads
    assert [p for p in opened if not p.endswith("/.gitignore") and not p.startswith(store)] == \
        [str(ws.root / "ok.txt")]


def test_ignored_symlink_is_not_a_gap(ws, mem_objects, tmp_path):
    put(ws.root, ".gitignore", b"node_modules\n")
    (ws.root / "node_modules").symlink_to(tmp_path)
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert res.gaps == []


def test_oversized_is_a_gap_and_not_read(ws, mem_objects):
    put(ws.root, "big.bin", b"x" * 101)
    put(ws.root, "small.bin", b"x" * 100)
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert res.gaps == [("big.bin", "too-large")]
    assert set(res.images) == {"small.bin"}
    assert mem_objects.puts == 1


def test_grown_file_leaves_cache_and_becomes_gap(ws, mem_objects):
    put(ws.root, "f", b"x" * 10)
    cache = StatCache()
    sweep(ws, mem_objects, cache, max_bytes=50)
    put(ws.root, "f", b"x" * 60)
    res = sweep(ws, mem_objects, cache, max_bytes=50)
    assert res.gaps == [("f", "too-large")] and "f" not in cache and res.absent == set()


def test_unreadable_is_a_gap(ws, mem_objects, monkeypatch):
    import errno
    put(ws.root, "locked", b"x")
    put(ws.root, "fine", b"y")
    real_open = reader.os.open

    def deny(path, flags, *a, **kw):
        if str(path).endswith("/locked"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(reader.os, "open", deny)
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert res.gaps == [("locked", "unreadable")]
    assert set(res.images) == {"fine"}


def test_unreadable_folder_is_a_gap(ws, mem_objects, monkeypatch):
    put(ws.root, "closed/x.txt", b"x")
    put(ws.root, "open/y.txt", b"y")
    cache = StatCache()
    sweep(ws, mem_objects, cache, max_bytes=100)
    real_scandir = sweep_mod.os.scandir

    def deny(path):
        if str(path).endswith("/closed"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(sweep_mod.os, "scandir", deny)
    res = sweep(ws, mem_objects, cache, max_bytes=100)
    assert res.gaps == [("closed", "unreadable")]
    assert res.absent == set()  # we could not look, so we do not claim it is gone


def test_deleted_file_is_absent(tree, mem_objects):
    cache = StatCache()
    sweep(tree, mem_objects, cache, max_bytes=1000)
    (tree.root / "a.txt").unlink()
    (tree.root / "src" / "deep" / "c.md").unlink()
    (tree.root / "src" / "deep").rmdir()
    res = sweep(tree, mem_objects, cache, max_bytes=1000)
    assert res.absent == {"a.txt", "src/deep/c.md"}
    assert "a.txt" not in cache and res.hashed == 0
    # Reported once: the next sweep no longer knows about them.
    assert sweep(tree, mem_objects, cache, max_bytes=1000).absent == set()


def test_newly_ignored_or_linked_is_not_absent(tree, mem_objects, tmp_path):
    cache = StatCache()
    sweep(tree, mem_objects, cache, max_bytes=1000)
    put(tree.root, ".gitignore", b"a.txt\nsrc/\n")
    res = sweep(tree, mem_objects, cache, max_bytes=1000)
    assert res.absent == set()
    assert set(res.images) == {".gitignore", "ünï cödé/d e.txt"}


def test_missing_object_is_rehashed(tree, mem_objects):
    cache = StatCache()
    first = sweep(tree, mem_objects, cache, max_bytes=1000)
    mem_objects.remove(first.images["a.txt"])  # collected behind our back
    res = sweep(tree, mem_objects, cache, max_bytes=1000)
    assert res.hashed == 1 and mem_objects.has(res.images["a.txt"])


def test_progress_is_yielded_within_budget(ws, mem_objects):
    for i in range(50):
        put(ws.root, f"d{i % 5}/f{i}.txt", str(i).encode())
    gen = iter_sweep(ws, mem_objects, StatCache(), max_bytes=100, budget_files=8)
    progress = []
    while True:
        try:
            progress.append(next(gen))
        except StopIteration as stop:
            result = stop.value
            break
    assert isinstance(result, SweepResult) and len(result.images) == 50
    assert len(progress) >= 50 // 8
    assert all(isinstance(p, SweepProgress) for p in progress)
    walked = [p.walked for p in progress]
    assert walked == sorted(walked) and walked[-1] <= 50


def test_file_replaced_by_folder_or_fifo_is_absent(ws, mem_objects):
    put(ws.root, "f", b"f")
    put(ws.root, "g", b"g")
    cache = StatCache()
    sweep(ws, mem_objects, cache, max_bytes=100)
    (ws.root / "f").unlink()
    put(ws.root, "f/inner", b"i")
    (ws.root / "g").unlink()
    os.mkfifo(ws.root / "g")
    res = sweep(ws, mem_objects, cache, max_bytes=100)
    assert res.absent == {"f", "g"} and set(res.images) == {"f/inner"}


def test_fifo_skipped(ws, mem_objects):
    os.mkfifo(ws.root / "pipe")
    put(ws.root, "f", b"f")
    res = sweep(ws, mem_objects, StatCache(), max_bytes=100)
    assert set(res.images) == {"f"} and res.gaps == []


# ---------------------------------------------------------------- the cache file


def test_cache_missing_or_corrupt_loads_empty(tmp_path):
    assert len(StatCache.load(tmp_path / "nope")) == 0
    bad = tmp_path / "bad"
    bad.write_bytes(b"garbage")
    assert len(StatCache.load(bad)) == 0
    good = StatCache()
    from turnback.capture.reader import ImageStat
    good.record("a", ImageStat(1, 2, 3, 4), "0" * 32, 5)
    path = tmp_path / "cache" / "stat.cbor"
    good.save(path)
    assert StatCache.load(path).entries == good.entries
    assert (path.stat().st_mode & 0o777) == 0o600
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))
    assert len(StatCache.load(path)) == 0
    path.write_bytes(path.read_bytes()[:-3])
    assert len(StatCache.load(path)) == 0


# ---------------------------------------------------------------- property


_names = st.sampled_from(["a", "b", "c d", "é", "x.log", "keep.log"])
_trees = st.dictionaries(st.lists(_names, min_size=1, max_size=3).map("/".join),
                         st.binary(max_size=20), max_size=12)


def _materialise(root: Path, files: dict[str, bytes]) -> dict[str, bytes]:
    """Write the files that can coexist (a path cannot be both file and folder)."""
    written: dict[str, bytes] = {}
    for rel in sorted(files, key=lambda r: (r.count("/"), r)):
        parts = rel.split("/")
        if any("/".join(parts[:i]) in written for i in range(1, len(parts))):
            continue
        if any(w.startswith(rel + "/") for w in written):
            continue
        put(root, rel, files[rel])
        written[rel] = files[rel]
    return written


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=_trees, after=_trees)
def test_property_sweep_matches_disk(tmp_path_factory, before, after):
    from sweepkit import real_objects
    root = tmp_path_factory.mktemp("sweep", numbered=True)
    (root / ".gitignore").write_bytes(b"*.log\n!keep.log\n")
    os.utime(root / ".gitignore", ns=(OLD_NS, OLD_NS))
    w = Workspace(root, ".turnback")
    objs = real_objects()
    cache = StatCache()
    first = _materialise(root, before)

    def visible(files):
        return {r: d for r, d in files.items() if "x.log" not in r.split("/")}

    res = sweep(w, objs, cache, max_bytes=100, budget_files=3)
    assert {r: objs.get(d) for r, d in res.images.items() if r != ".gitignore"} == visible(first)
    # Replace the tree with `after`; unchanged files (same bytes, same old mtime) may keep their
    # inode and stat, changed ones get a new mtime.
    for rel in sorted(first, key=lambda r: -r.count("/")):
        if after.get(rel) != first[rel]:
            (root / rel).unlink()
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(d.iterdir()):
            d.rmdir()
    remaining = {r: b for r, b in first.items() if after.get(r) == b}
    second_files = dict(remaining)
    for rel, data in after.items():
        if rel in remaining:
            continue
        parts = rel.split("/")
        if any("/".join(parts[:i]) in second_files for i in range(1, len(parts))):
            continue
        if any(w_.startswith(rel + "/") for w_ in second_files):
            continue
        p = put(root, rel, data, old=False)
        os.utime(p, ns=(OLD_NS + 10**9, OLD_NS + 10**9))
        second_files[rel] = data
    res2 = sweep(w, objs, cache, max_bytes=100, budget_files=3)
    assert {r: objs.get(d) for r, d in res2.images.items() if r != ".gitignore"} == visible(second_files)
    assert res2.absent == set(visible(first)) - set(visible(second_files))
    assert res2.hashed == len(set(visible(second_files)) - set(visible(remaining)))


def test_emacs_lock_links_are_not_gaps(ws, objects):
    import os

    from turnback.capture.statcache import StatCache
    from turnback.capture.sweep import sweep

    os.symlink("user@host.1234:1700000000", ws.root / ".#notes.txt")  # how Emacs writes its locks
    os.symlink("/etc/passwd", ws.root / "real-link")
    result = sweep(ws, objects, StatCache(), max_bytes=1 << 20)
    assert [g for g in result.gaps] == [("real-link", "symlink")]
