"""The watcher's dirty set: sweeps read only what changed, and every way to miss falls back to a
full sweep that says why. Driven through the workbench with a real inotify watcher attached."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from turnback.capture import sweep as sweep_mod
from turnback.capture.ignore import IgnoreRules
from turnback.capture.watcher import Watcher
from turnback.workbench import Workbench

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="Linux inotify")


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "ws"
    (r / "src").mkdir(parents=True)
    (r / "a.txt").write_text("one\n")
    (r / "src" / "m.py").write_text("x = 1\n")
    (r / "node_modules" / "dep").mkdir(parents=True)
    (r / "node_modules" / "dep" / "i.js").write_text("//\n")
    (r / ".gitignore").write_text("node_modules/\n")
    return r.resolve()


class Live:
    """A workbench with a watcher, counting how many files each sweep looked at."""

    def __init__(self, root, **kw):
        self.wb = Workbench.open(root)
        self.watcher = Watcher(self.wb.ws, IgnoreRules(self.wb.ws), **kw)
        assert self.watcher.start()
        self.wb.watcher = self.watcher
        assert self.watcher.wait_ready()

    def turn(self, prompt: str, change=None) -> dict:
        """Begin a turn, make the change, settle; returns the settle's sweep plan and files."""
        self.wb.renew()  # no server renews this process's lease on a timer
        n = self.wb.run(self.wb.turns.begin_job({"prompt": prompt}))["turn"]
        begin = (self.watcher.last_sweep, self.watcher.last_reason)
        if change:
            change()
        self.wb.run(self.wb.turns.settle_job({"turn": n}))
        log = self.wb.turns.log({})["turns"][-1]
        return {"begin": begin, "settle": (self.watcher.last_sweep, self.watcher.last_reason),
                "files": sorted(f["uri"].rsplit("/ws/", 1)[1] for f in log["files"])}

    def rewind_all(self) -> None:
        cand = self.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
        assert self.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 1},
                                      "planHash": cand["planHash"]})["status"] == "committed"

    def close(self):
        self.watcher.close()
        self.wb.close()


@pytest.fixture
def live(root):
    lives = []

    def make(**kw):
        lv = Live(root, **kw)
        lives.append(lv)
        return lv
    yield make
    for lv in lives:
        lv.close()


def _count_reads(monkeypatch):
    seen = []
    real = sweep_mod.read_image

    def counting(ws, rel, *a, **kw):
        seen.append(rel)
        return real(ws, rel, *a, **kw)
    monkeypatch.setattr(sweep_mod, "read_image", counting)
    return seen


def test_the_first_sweep_is_full_then_only_dirty_paths_are_read(root, live, monkeypatch):
    lv = live()
    first = lv.turn("learn the workspace")
    assert first["begin"] == ("full", "started")  # changes made before the sidecar ran
    reads = _count_reads(monkeypatch)
    walked = []
    real_walk = sweep_mod.iter_sweep
    monkeypatch.setattr(sweep_mod, "iter_sweep", lambda *a, **k: walked.append(1) or real_walk(*a, **k))

    def edit():
        (root / "a.txt").write_text("two\n")
        subprocess.run(["sh", "-c", "echo 'y = 2' >> src/m.py && echo new > src/n.py"], cwd=root)
        (root / "node_modules" / "dep" / "i.js").write_text("ignored\n")
    second = lv.turn("edit through the shell", edit)
    assert second["begin"] == ("dirty", None) and second["settle"] == ("dirty", None)
    assert second["files"] == ["a.txt", "src/m.py", "src/n.py"]
    assert walked == [] and set(reads) <= {"a.txt", "src/m.py", "src/n.py"}
    info = lv.watcher.info()
    assert info["state"] == "healthy" and info["fallbacks"] == {"started": 1}
    lv.rewind_all()
    assert (root / "a.txt").read_text() == "one\n" and not (root / "src" / "n.py").exists()


def test_atomic_saves_deletes_and_new_folders_come_out_exact(root, live):
    lv = live()
    lv.turn("learn")

    def edit():
        tmp = root / "src" / ".m.py.tmp~"
        tmp.write_text("x = 'saved atomically'\n")
        os.replace(tmp, root / "src" / "m.py")  # an editor's atomic save
        os.remove(root / "a.txt")
        (root / "pkg" / "deep").mkdir(parents=True)  # files land before the folder's watch exists
        (root / "pkg" / "deep" / "f.txt").write_text("f\n")
        (root / "pkg" / "g.txt").write_text("g\n")
    t = lv.turn("save, delete, mkdir", edit)
    assert t["settle"] == ("dirty", None)
    # the folders the turn made are part of what it changed (model/images.py), and go with it
    assert t["files"] == ["a.txt", "pkg/", "pkg/deep/", "pkg/deep/f.txt", "pkg/g.txt", "src/m.py"]
    lv.rewind_all()
    assert (root / "a.txt").read_text() == "one\n"
    assert (root / "src" / "m.py").read_text() == "x = 1\n"
    assert not (root / "pkg").exists()


def test_git_checkout_of_many_files_is_exact(root, live):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no git")
    git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a],  # noqa: E731
                                    cwd=root, check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    (root / "many").mkdir()
    for i in range(1500):
        (root / "many" / f"f{i:04}.txt").write_text(f"main {i}\n")
    git("add", "-A")
    git("commit", "-qm", "main")
    git("checkout", "-qb", "other")
    for i in range(0, 1500, 2):
        (root / "many" / f"f{i:04}.txt").write_text(f"other {i}\n")
    git("commit", "-qam", "other")
    git("checkout", "-q", "main")
    lv = live()
    lv.turn("learn")
    t = lv.turn("checkout", lambda: git("checkout", "-q", "other"))
    assert t["settle"][0] == "dirty" or t["settle"][1] == "overflow"
    assert len(t["files"]) == 750
    lv.rewind_all()
    assert all((root / "many" / f"f{i:04}.txt").read_text() == f"main {i}\n" for i in range(0, 1500, 7))


def test_overflow_falls_back_to_a_full_sweep(root, live):
    lv = live()
    lv.turn("learn")
    lv.watcher.missed("overflow")  # what IN_Q_OVERFLOW does; the burst test forces a real one
    t = lv.turn("after an overflow", lambda: (root / "a.txt").write_text("two\n"))
    assert t["begin"] == ("full", "overflow") and t["settle"] == ("dirty", None)
    assert t["files"] == ["a.txt"]
    assert lv.watcher.info()["fallbacks"]["overflow"] == 1


def test_a_real_queue_overflow_is_seen_by_the_reading_thread(root, live):
    """The kernel drops events; the reading thread (not a sweep's drain) reads IN_Q_OVERFLOW and
    owes a full sweep. The gate: the thread has said so before any sweep looks."""
    limit = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    if limit > 40000:
        pytest.skip("the event queue is too deep to overflow quickly here")
    lv = live()
    lv.turn("learn")
    _paused(lv.watcher)  # the reader stays off while the kernel queue fills up
    for i in range(limit // 2):  # create, modify, close-write: three events per file
        (root / f"b{i:05}.txt").write_text(f"{i}\n")
    lv.watcher.paused_for_test.clear()
    _until(lambda: lv.watcher.info()["reason"] == "overflow", "the thread to read the overflow")
    t = lv.turn("after a burst")
    assert t["begin"] == ("full", "overflow")
    assert lv.watcher.info()["fallbacks"]["overflow"] == 1


def test_a_folder_moved_in_is_watched_by_the_reading_thread(root, live, tmp_path):
    """The reading thread (not a sweep's drain) handles the move: it owes a full sweep and watches
    the folders that came in, so a later edit inside is in the dirty set."""
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "inner" / "x.txt").write_text("x\n")
    lv = live()
    lv.turn("learn")
    os.rename(outside, root / "moved")
    _until(lambda: {"moved", "moved/inner"} <= set(lv.watcher._wd.values()),
           "the reading thread to watch the moved-in folders")
    assert lv.watcher.info()["reason"] == "folder-moved"
    t = lv.turn("edit inside", lambda: (root / "moved" / "inner" / "x.txt").write_text("y\n"))
    assert t["begin"] == ("full", "folder-moved")  # owed by the move
    assert t["settle"] == ("dirty", None) and t["files"] == ["moved/inner/x.txt"]


def test_a_folder_moved_in_falls_back_and_is_exact(root, live, tmp_path):
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "inner" / "x.txt").write_text("x\n")
    lv = live()
    lv.turn("learn")
    t = lv.turn("move in", lambda: os.rename(outside, root / "moved"))
    assert t["settle"] == ("full", "folder-moved")
    assert t["files"] == ["moved/", "moved/inner/", "moved/inner/x.txt"]
    t = lv.turn("then edit inside", lambda: (root / "moved" / "inner" / "x.txt").write_text("y\n"))
    assert t["settle"] == ("dirty", None) and t["files"] == ["moved/inner/x.txt"]


def test_the_watch_limit_makes_every_sweep_full(root, live):
    lv = live(max_watches=1)  # stands in for fs.inotify.max_user_watches
    t = lv.turn("limited", lambda: (root / "src" / "m.py").write_text("unwatched\n"))
    assert t["settle"] == ("full", "watch-limit") and t["files"] == ["src/m.py"]
    assert lv.watcher.info()["state"] == "degraded"
    assert lv.watcher.info()["reason"] == "watch-limit"


def test_wait_ready_waits_for_a_first_walk_the_watch_limit_cut_short(root, monkeypatch):
    """The limit makes the watcher unhealthy inside its first walk, before the walk is over:
    `wait_ready` must still wait for that walk's end (it returned False at once, a CI flake)."""
    import threading

    limit_hit, gate = threading.Event(), threading.Event()
    real = Watcher._watch_tree

    def walk_then_hold(self, top, *a, **kw):
        out = real(self, top, *a, **kw)
        if threading.current_thread() is self._thread and top == "":
            limit_hit.set()
            gate.wait(30)  # the first walk is not over until the test says so
        return out
    monkeypatch.setattr(Watcher, "_watch_tree", walk_then_hold)
    wb = Workbench.open(root)
    w = Watcher(wb.ws, IgnoreRules(wb.ws), max_watches=1)
    try:
        assert w.start()
        assert limit_hit.wait(30) and not w.healthy  # unhealthy while its first walk goes on
        answer = []
        waiter = threading.Thread(target=lambda: answer.append(w.wait_ready(timeout=30)))
        waiter.start()
        waiter.join(0.5)  # bounds how long the old bug has to show; the answer does not depend on it
        gate.set()
        waiter.join(30)
        assert answer == [True]
        assert w.info()["reason"] == "watch-limit"
    finally:
        gate.set()
        w.close()
        wb.close()


def test_a_dead_watcher_thread_makes_every_sweep_full(root, live):
    lv = live()
    lv.turn("learn")
    lv.watcher.die_for_test = True
    (root / "a.txt").write_text("wake the thread\n")
    _until(lambda: not lv.watcher.healthy, "the watcher thread to die")
    t = lv.turn("after the watcher died", lambda: (root / "src" / "m.py").write_text("z\n"))
    assert t["begin"] == ("full", "watcher-died") and t["settle"] == ("full", "watcher-died")
    assert "src/m.py" in t["files"]


def test_changed_ignore_rules_fall_back(root, live):
    lv = live()
    lv.turn("learn")
    t = lv.turn("unignore", lambda: (root / ".gitignore").write_text("# nothing ignored\n"))
    assert t["settle"] == ("full", "ignore-rules-changed")
    assert ".gitignore" in t["files"]
    t = lv.turn("edit a formerly ignored file",
                lambda: (root / "node_modules" / "dep" / "i.js").write_text("now watched\n"))
    assert t["files"] == ["node_modules/dep/i.js"]


# -- a sweep's own drain runs on the event loop: it never walks a big tree there --------------------
def _paused(watcher):
    """Keep the reading thread off the queue, so the next `begin` finds the events still queued."""
    assert watcher.pause_for_test(), "the reading thread never stepped away from the queue"


def _until(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _resume_and_wait(watcher, timeout: float = 30.0):
    watcher.paused_for_test.clear()

    def emptied():
        with watcher._lock:
            return not watcher._pending
    _until(emptied, "the reading thread to take its walks", timeout)
    with watcher._reading:  # the walk that emptied the list holds it: done once we have it
        assert not watcher._pending


def _walks_on(watcher, monkeypatch):
    """Which threads walked folders to add watches, and how many folders each."""
    import threading
    from collections import Counter

    walked = Counter()
    real = watcher._watch_tree

    def counting(top, limit=None, **how):  # `how`: the watcher's own options (files_too)
        before = len(watcher._wd)
        files = real(top, limit, **how)
        walked[threading.current_thread() is threading.main_thread()] += len(watcher._wd) - before
        return files
    monkeypatch.setattr(watcher, "_watch_tree", counting)
    return walked


def test_changed_ignore_rules_queued_at_a_sweep_are_walked_off_the_loop(root, live, monkeypatch):
    lv = live()
    lv.turn("learn")
    walked = _walks_on(lv.watcher, monkeypatch)
    _paused(lv.watcher)
    (root / ".gitignore").write_text("# nothing ignored\n")
    plan = lv.watcher.begin()  # the sweep's drain, on the calling (loop) thread
    assert (plan.full, plan.reason) == (True, "ignore-rules-changed")
    assert walked[True] == 0  # the whole-tree walk was left to the reading thread
    _resume_and_wait(lv.watcher)
    assert walked[False] >= 2  # node_modules and node_modules/dep are watched now
    # What changed while those watches were missing is covered: one more full sweep is owed.
    assert lv.watcher.begin().full
    t = lv.turn("edit a formerly ignored file",
                lambda: (root / "node_modules" / "dep" / "i.js").write_text("now watched\n"))
    assert t["settle"] == ("dirty", None) and "node_modules/dep/i.js" in t["files"]


def test_a_big_new_tree_queued_at_a_sweep_is_walked_off_the_loop(root, live, monkeypatch):
    from turnback.capture.watcher import LOOP_WALK_FOLDERS

    lv = live()
    lv.turn("learn")
    walked = _walks_on(lv.watcher, monkeypatch)
    _paused(lv.watcher)
    folders = [f"gen/d{i}/e{j}" for i in range(10) for j in range(10)]
    for rel in folders:
        (root / rel).mkdir(parents=True)
        (root / rel / "f.txt").write_text(rel + "\n")
    plan = lv.watcher.begin()
    assert (plan.full, plan.reason) == (True, "big-new-folder")
    assert 0 < walked[True] <= LOOP_WALK_FOLDERS  # the loop walked a bounded part of it
    _resume_and_wait(lv.watcher)
    watched = set(lv.watcher._wd.values())
    assert set(folders) <= watched  # the reading thread walked the rest
    assert lv.watcher.begin().full  # owed: changes before those watches existed
    deep = root / "gen" / "d9" / "e9" / "f.txt"
    t = lv.turn("edit deep in the new tree", lambda: deep.write_text("changed\n"))
    assert t["settle"] == ("dirty", None) and "gen/d9/e9/f.txt" in t["files"]
