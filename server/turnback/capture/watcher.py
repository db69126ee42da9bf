"""The live owner's watcher: a dirty set fed by inotify, so sweeps look only at what may have changed.

Why inotify through `inotify_simple` (a maintained ctypes wrapper of the three system calls) rather
than watchfiles or watchdog: the fallbacks are the feature. We must *know* when the kernel dropped
events (IN_Q_OVERFLOW), when a watch could not be added (ENOSPC: fs.inotify.max_user_watches), when
a folder arrived whose contents produced no events (IN_MOVED_TO on a folder), and we must not spend
watches on ignored trees (node_modules). The higher-level libraries debounce, merge and hide exactly
these signals; here every one of them is in our hands.

Protocol with the sweep (`begin`): the sweep takes the dirty set atomically *before* it looks at the
disk; events that arrive meanwhile land in the next set. When anything may have been missed, `begin`
answers `full` with the reason, and the sweep walks the whole tree: at start-up (changes made before
the sidecar ran), after an overflow, after a folder was moved in or renamed, after ignore rules
changed, once a watch limit was hit (from then on every sweep is full), and once the reading thread
died. Every fallback is counted, logged and reported in `session/info` (`watcher`).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

log = logging.getLogger("turnback.watcher")

try:  # Linux only; elsewhere there is no watcher and every sweep walks the tree
    import inotify_simple as _ino
except Exception:  # pragma: no cover - import failure on other systems
    _ino = None

RULE_FILES = (".gitignore",)
PERMANENT = ("watch-limit", "watcher-died", "root-gone")
# A sweep's own drain runs on the event loop: it adds watches for at most this many new folders and
# leaves bigger walks (a new tree, a moved-in folder, changed ignore rules) to the reading thread.
LOOP_WALK_FOLDERS = 32
# The reading thread's own walks (the first one covers the whole tree) are Python work holding the
# interpreter lock: after each WALK_BURST seconds of it the thread sleeps WALK_REST, so the event loop
# gets the lock for long stretches. Without the rests a request waited 40 ms at start-up: each of its
# hops (read, parse, answer) queued behind the walker for a whole switch interval.
WALK_BURST = 0.002
WALK_REST = 0.001


@dataclass
class SweepPlan:
    """What the next sweep may do: `full` (with `reason`) or read just `dirty`."""

    full: bool
    reason: str | None = None
    dirty: set[str] = field(default_factory=set)


class Watcher:
    """Watches every non-ignored folder of the workspace; keeps the set of paths that may differ."""

    def __init__(self, ws, rules, *, max_watches: int | None = None):
        self.ws = ws
        self.rules = rules
        self.root = str(ws.root)
        self.max_watches = max_watches  # a test's stand-in for fs.inotify.max_user_watches
        self._lock = threading.Lock()       # guards the dirty set and the flags
        self._reading = threading.Lock()    # one reader of the inotify queue at a time
        self._dirty: set[str] = set()
        # Counts the batches of events taken in; `_seen` keeps each path's latest since the last
        # sweep took the dirty set (`changed_since`: a rewind's plan trusts what it hashed before).
        self.generation = 0
        self.swept_at = 0
        self._seen: dict[str, int] = {}
        self._missed: str | None = "started"   # a full sweep is owed, and why
        self._permanent: str | None = None      # a condition no sweep can clear
        self._ready = False
        self._first_walk_over = threading.Event()  # set once the first walk ended, however it ended
        self._wd: dict[int, str] = {}           # watch descriptor -> folder (relative, "" = root)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._inotify = None
        self.fallbacks: Counter = Counter()
        self.last_sweep: str | None = None
        self.last_reason: str | None = None    # why the last sweep was full (None: it was not)
        self.last_fallback: str | None = None
        self.die_for_test = False  # set by tests: the thread raises on its next event
        self.paused_for_test = threading.Event()  # set by tests: the thread leaves the queue alone
        self._paused_seen = threading.Event()      # ...and says when it has stepped away from it
        self._pending: dict[str, str] = {}  # folder -> why: walks left to the reading thread
        self._wake_r, self._wake_w = -1, -1  # a pipe that wakes the reading thread for them

    # -- life -----------------------------------------------------------------------------------
    def start(self) -> bool:
        if _ino is None:
            self._permanent = "unavailable"
            return False
        try:
            self._inotify = _ino.INotify()
        except OSError as exc:
            log.warning("no file watcher (%s): every sweep walks the workspace", exc)
            self._permanent = "unavailable"
            return False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(target=self._run, name="turnback-watcher", daemon=True)
        self._thread.start()
        return True

    def close(self) -> None:
        self._stop.set()
        if self._inotify is not None:
            try:
                self._inotify.close()  # wakes the reader with EBADF; it exits quietly
            except OSError:
                pass
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def pause_for_test(self, timeout: float = 30.0) -> bool:
        """Tests: keep the reading thread off the queue, and return once it is off (it wakes from
        its poll and steps away: no drain of its own is under way from then on)."""
        self._paused_seen.clear()
        self.paused_for_test.set()
        self._wake()
        return self._paused_seen.wait(timeout)

    @property
    def healthy(self) -> bool:
        return self._permanent is None and self._thread is not None and self._thread.is_alive()

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """For tests and the bench: block until the first walk is over, and say whether the initial
        watches are in place. A watch limit hit during that walk makes the watcher unhealthy before
        the walk ends: waiting on health alone returned early, before `_ready` was set."""
        if self._thread is None:
            return False
        self._first_walk_over.wait(timeout)  # set in a finally: a thread that died set it too
        return self._ready

    def info(self) -> dict:
        with self._lock:
            state = "healthy" if self.healthy and self._ready else (
                "starting" if self.healthy else "degraded")
            return {"state": state, "reason": self._permanent or self._missed,
                    "watches": len(self._wd), "dirty": len(self._dirty),
                    "lastSweep": self.last_sweep, "lastFallback": self.last_fallback,
                    "fallbacks": dict(self.fallbacks)}

    # -- what the sweep asks ----------------------------------------------------------------------
    def begin(self) -> SweepPlan:
        """Take the dirty set for one sweep; say `full` when something may have been missed."""
        if self.healthy and self._ready:
            # Events the kernel queued before this moment must be in the set we take: a write the
            # agent finished just before its hook asked for the sweep has no other way in.
            with self._reading:
                try:
                    self._drain(on_loop=True)
                except Exception:
                    log.exception("the file watcher failed while draining its queue")
                    self.missed("watcher-died")
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            self.generation += 1
            self.swept_at, self._seen = self.generation, {}
            reason = self._permanent
            if reason is None and self._thread is not None and not self._thread.is_alive():
                reason = self._permanent = "watcher-died"
            if reason is None:
                reason = self._missed
                if reason is not None and self._ready:
                    self._missed = None  # this full sweep starts after the miss: it covers it
                elif reason is None and not self._ready:
                    reason = "started"
        if reason is not None:
            self.fallbacks[reason] += 1
            self.last_sweep, self.last_reason, self.last_fallback = "full", reason, reason
            log.info("full sweep: %s", _WHY.get(reason, reason))
            return SweepPlan(True, reason)
        self.last_sweep, self.last_reason = "dirty", None
        return SweepPlan(False, None, dirty)

    def pending(self) -> set[str] | None:
        """The paths that may have changed since the last sweep, without taking them (a rewind's
        plan looks there for edits not captured yet); None when something may have been missed."""
        if not (self.healthy and self._ready):
            return None
        with self._reading:
            try:
                self._drain(on_loop=True)
            except Exception:
                return None
        with self._lock:
            if self._permanent is not None or self._missed is not None:
                return None
            return set(self._dirty)

    def changed_after(self, generation: int) -> tuple[set[str] | None, int]:
        """(the paths with an event taken in after `generation`, the generation now), the queue
        drained first; the set is None when the watcher cannot say (a sweep took the events since,
        or something may have been missed)."""
        dirty = self.pending()
        with self._lock:
            now = self.generation
            if dirty is None or generation < self.swept_at:
                return None, now
            return {rel for rel, seen in self._seen.items() if seen > generation}, now

    def missed(self, reason: str) -> None:
        """Something happened that the dirty set cannot describe: the next sweep is full."""
        with self._lock:
            if reason in PERMANENT:
                self._permanent = self._permanent or reason
            self._missed = self._missed or reason
        log.warning("the watcher may have missed changes (%s): the next sweep walks the workspace",
                    _WHY.get(reason, reason))

    # -- the reading thread ---------------------------------------------------------------------
    def _run(self) -> None:
        import select

        try:
            try:
                with self._reading:
                    self._watch_tree("")
                    self._ready = True
            finally:
                self._first_walk_over.set()
            poller = select.poll()
            poller.register(self._inotify.fileno(), select.POLLIN)
            poller.register(self._wake_r, select.POLLIN)
            while not self._stop.is_set():
                if not poller.poll(500):
                    continue
                self._stop.wait(0.005)  # let a burst gather: fewer, larger reads
                if self.paused_for_test.is_set():
                    self._paused_seen.set()
                    continue
                with self._reading:
                    self._drain()
                    self._walk_pending()
        except (OSError, ValueError) as exc:
            if self._stop.is_set():
                return
            log.error("the file watcher stopped: %s", exc)
            self.missed("watcher-died")
        except Exception:
            if self._stop.is_set():
                return
            log.exception("the file watcher stopped")
            self.missed("watcher-died")

    def _drain(self, on_loop: bool = False) -> None:
        """Read and fold in every queued event (callers hold `_reading`). `on_loop`: a sweep's drain,
        which must stay short: big walks go to the reading thread (`_defer`)."""
        events = self._inotify.read(timeout=0)
        if self.die_for_test:
            raise RuntimeError("the watcher was told to die (test)")
        if events:
            self._handle(events, on_loop)

    def _defer(self, folders, why: str) -> None:
        """Leave the walk of `folders` (one, or a list) to the reading thread. The sweep about to run is full (it
        looks at everything now); events in the folder before its watches exist are covered by one
        more full sweep, owed once the walk is done (`_walk_pending`)."""
        with self._lock:
            for folder in ([folders] if isinstance(folders, str) else folders):
                self._pending.setdefault(folder, why)
        self.missed(why)
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"w")
        except OSError:
            pass  # the pipe is full (the thread will look anyway) or closed

    def _walk_pending(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except OSError:
            pass
        with self._lock:
            pending, self._pending = self._pending, {}
        if "" in pending:  # the whole tree (ignore rules changed) covers every other folder
            pending = {"": pending[""]}
        for folder, why in pending.items():
            self._watch_tree(folder)
            self.missed(why)

    def _watch_tree(self, top: str, limit: int | None = None, *,
                    files_too: bool = False) -> list[str]:
        """Add a watch to `top` and every non-ignored folder below; with `files_too`, returns the
        files found (a new folder's, which may have been written before its watch existed; the
        first walk of 250,000 files has no use for them, and the list cost 20 MiB). With `limit`,
        at most that many folders: the rest is left to the reading thread."""
        files: list[str] = []
        stack = [top]
        walked = 0
        paced = threading.current_thread() is self._thread  # never sleep on the caller's loop
        burst = time.perf_counter()
        f = _ino.flags
        mask = (f.CREATE | f.DELETE | f.MODIFY | f.CLOSE_WRITE | f.MOVED_FROM | f.MOVED_TO
                | f.ATTRIB | f.DELETE_SELF | f.MOVE_SELF | f.DONT_FOLLOW | f.ONLYDIR | f.EXCL_UNLINK)
        while stack:
            if limit is not None and walked >= limit:
                self._defer(stack, "big-new-folder")
                return files
            walked += 1
            if paced and time.perf_counter() - burst >= WALK_BURST:
                time.sleep(WALK_REST)
                burst = time.perf_counter()
            folder = stack.pop()
            path = os.path.join(self.root, folder) if folder else self.root
            if self.max_watches is not None and len(self._wd) >= self.max_watches:
                self.missed("watch-limit")
                return files
            try:
                wd = self._inotify.add_watch(path, mask)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self.missed("watch-limit")
                    return files
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone (or became a link) before we got there: its events tell
                raise
            with self._lock:
                self._wd[wd] = folder
            try:
                with os.scandir(path) as it:
                    entries = list(it)
            except OSError:
                continue
            for entry in entries:
                rel = f"{folder}/{entry.name}" if folder else entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    if not self.ws.in_store(rel) and not self.rules.match(rel, True):
                        stack.append(rel)
                elif files_too:
                    files.append(rel)
        return files

    def _handle(self, events, on_loop: bool = False) -> None:
        f = _ino.flags
        touched: set[str] = set()
        for ev in events:
            if ev.mask & f.Q_OVERFLOW:
                self.missed("overflow")
                continue
            folder = self._wd.get(ev.wd)
            if folder is None:
                continue
            if ev.mask & f.IGNORED:
                with self._lock:
                    self._wd.pop(ev.wd, None)
                if folder == "":
                    self.missed("root-gone")
                continue
            if ev.mask & (f.DELETE_SELF | f.MOVE_SELF):
                if folder == "":
                    self.missed("root-gone")
                continue  # its entry in the parent reports the change
            rel = f"{folder}/{ev.name}" if folder and ev.name else (ev.name or folder)
            if not rel or self.ws.in_store(rel) or self.rules._always(rel):
                continue
            if ev.name in RULE_FILES:
                # Folders ignored until now may need watches; the walk runs before the miss is
                # reported, and a sweep's drain waits for it (both hold `_reading`). On the loop,
                # the whole-tree walk is the thread's (the sweep is full either way).
                self.rules.invalidate()
                if on_loop:
                    self._defer("", "ignore-rules-changed")
                else:
                    self._watch_tree("")
                    self.missed("ignore-rules-changed")
            if ev.mask & f.ISDIR:
                if ev.mask & (f.MOVED_FROM | f.MOVED_TO):
                    # A folder renamed or moved in: its contents raised no events, and the watch
                    # descriptors below it now name old paths. Walk everything again.
                    self.missed("folder-moved")
                    if ev.mask & f.MOVED_TO and not self.rules.match(rel, True):
                        if on_loop:
                            self._defer(rel, "folder-moved")
                        else:
                            self._watch_tree(rel)
                elif ev.mask & f.CREATE and not self.rules.match(rel, True):
                    # A new folder: files may land in it before its watch exists; look at them.
                    touched.update(self._watch_tree(rel, LOOP_WALK_FOLDERS if on_loop else None,
                                                    files_too=True))
                touched.add(rel)
                continue
            touched.add(rel)
        if touched:
            with self._lock:
                self._dirty |= touched
                self.generation += 1
                for rel in touched:
                    self._seen[rel] = self.generation


_WHY = {
    "started": "the sidecar started after changes may have been made",
    "overflow": "the kernel's event queue overflowed",
    "watch-limit": "the watch limit (fs.inotify.max_user_watches) was reached",
    "folder-moved": "a folder was moved in or renamed",
    "ignore-rules-changed": "ignore rules changed",
    "big-new-folder": "a new folder tree was too big to watch before the sweep",
    "watcher-died": "the watcher thread died",
    "root-gone": "the workspace folder itself was moved or removed",
    "unavailable": "no file watcher on this system",
}
