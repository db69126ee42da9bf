"""A confirmed rewind, Redo or restore (prepare, then commit, as `--yes` runs them) reads each disk
image once: the commit's derivation and the transaction's backups reuse what the preparation hashed
(travel/diskmemo.py) while the file's stat identity is unchanged. Nothing is lost: a file changed
between the two, same size and its mtime put back, is read again and the commit is refused as stale."""

from __future__ import annotations

import os
import time
from collections import Counter
from types import SimpleNamespace

import pytest
from sessionkit import Agent

from turnback.travel import diskmemo
from turnback.travel.diskmemo import DiskMemo

B2 = {"kind": "beforePrompt", "turn": 2}
FILES = ["a.txt", "src/b.py", "src/deep/c.py"]


def build(root):
    a = Agent(root)
    a.turn("one", {rel: f"{rel} one\n" for rel in FILES})
    a.turn("two", {rel: f"{rel} two\n" for rel in FILES} | {"new.txt": "new\n"})
    time.sleep(0.3)  # past the racy margin: the files' stat can vouch for them (not a timing assert)
    return a


@pytest.fixture
def opened(monkeypatch):
    """Counts the opens of workspace files for reading (a disk image read), per path."""
    counts: Counter = Counter()
    real = os.open
    roots: list[str] = []

    def counting(path, flags, *args, **kw):
        fd = real(path, flags, *args, **kw)  # (an absent file is no read)
        p = os.fspath(path)
        if (roots and isinstance(p, str) and p.startswith(roots[0]) and "/.turnback" not in p
                and not flags & (os.O_WRONLY | os.O_RDWR) and "dir_fd" not in kw):
            counts[p[len(roots[0]):]] += 1
        return fd

    monkeypatch.setattr(os, "open", counting)
    return counts, roots


def test_a_confirmed_rewind_redo_and_restore_read_each_disk_image_once(tmp_path, opened):
    counts, roots = opened
    a = build(tmp_path / "w")
    roots.append(str(a.root) + "/")
    c = a.wb.rewind.prepare({"boundary": B2})
    assert a.wb.rewind.commit({"boundary": B2, "planHash": c["planHash"]})["status"] == "committed"
    assert counts and max(counts.values()) == 1, counts
    assert counts["a.txt"] == 1  # hashed by the preparation, reused by the commit and its backup

    time.sleep(0.3)
    counts.clear()
    head = max(g["headSeq"] for g in a.wb.redo.list()["groups"])
    p = a.wb.redo.prepare({"headSeq": head})
    assert a.wb.redo.commit({"headSeq": head, "planHash": p["planHash"]})["status"] == "committed"
    assert counts and max(counts.values()) == 1, counts

    time.sleep(0.3)
    counts.clear()
    params = {"paths": ["src"], "boundary": {"kind": "afterResponse", "turn": 1}}
    c = a.wb.restore.prepare(params)
    assert a.wb.restore.commit({**params, "planHash": c["planHash"]})["status"] == "committed"
    assert counts and max(counts.values()) == 1, counts
    assert (a.root / "src/b.py").read_text() == "src/b.py one\n"
    a.wb.close()


def test_a_file_changed_between_prepare_and_commit_is_still_caught(tmp_path):
    a = build(tmp_path / "w")
    c = a.wb.rewind.prepare({"boundary": B2})
    path = a.root / "a.txt"
    assert "a.txt" in a.wb._disk_memo.entries  # the memo would vouch for it: the test can fail
    before = os.stat(path)
    path.write_text("a.txt TWO\n")  # the same size ...
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # ... and its mtime put back
    assert os.stat(path).st_size == before.st_size
    result = a.wb.rewind.commit({"boundary": B2, "planHash": c["planHash"]})
    assert result["status"] == "stale"  # the plan now overwrites an edit: asked again
    entry = next(f for f in result["candidate"]["files"] if f["path"] == "a.txt")
    assert entry["externalChange"] is True
    assert path.read_text() == "a.txt TWO\n"  # nothing written
    a.wb.close()


def _st(ino=1, size=3, mtime=0, ctime=0):
    return SimpleNamespace(st_dev=1, st_ino=ino, st_size=size, st_mode=0o100644, st_mtime_ns=mtime,
                           st_ctime_ns=ctime)


def test_racy_entries_are_never_trusted():
    now = 1_700_000_000_123_456_789
    memo = DiskMemo()
    memo.record("fresh", _st(mtime=now - 10**9 + 7, ctime=now - 10**9 + 7), "d1", now)
    memo.record("racy", _st(mtime=now - 10**9 + 7, ctime=now - 10**6 + 7), "d2", now)  # a chmod just now
    # whole-second stamps (a coarse file system): the 2 s margin applies
    memo.record("coarse", _st(mtime=now // 10**9 * 10**9 - 10**9, ctime=now // 10**9 * 10**9 - 10**9),
                "d3", now)
    assert memo.lookup("fresh", _st(mtime=now - 10**9 + 7, ctime=now - 10**9 + 7)) == "d1"
    assert memo.lookup("racy", _st(mtime=now - 10**9 + 7, ctime=now - 10**6 + 7)) is None
    assert memo.lookup("coarse", _st(mtime=now // 10**9 * 10**9 - 10**9,
                                     ctime=now // 10**9 * 10**9 - 10**9)) is None
    assert memo.lookup("fresh", _st(mtime=now - 10**9 + 7, ctime=now - 10**9 + 8)) is None  # ctime moved
    assert memo.lookup("fresh", _st(ino=2, mtime=now - 10**9 + 7, ctime=now - 10**9 + 7)) is None
    assert diskmemo.racy(_st(mtime=now, ctime=now), now)


def test_a_watcher_event_since_drops_the_entry():
    st = _st(mtime=5, ctime=5)
    answers = iter([({"a"}, 7), (None, 9)])
    watcher = SimpleNamespace(changed_after=lambda g: next(answers))
    memo = DiskMemo(watcher=lambda: watcher)
    memo.record("a", st, "da", 10**12)
    memo.record("b", st, "db", 10**12)
    memo.refresh()  # an event for a since
    assert memo.lookup("a", st) is None and memo.lookup("b", st) == "db"
    assert memo.generation == 7
    memo.refresh()  # the watcher cannot say (it missed something, or a sweep took the events)
    assert memo.lookup("b", st) is None
