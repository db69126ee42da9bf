"""Turning observations of the disk into checkpoint operations.

Every capture source ends here: explicit captures from agent hooks (phase `before` or `after`), editor
saves and opens, watched-file changes, and the sweeps. The recorder decides the before-image of a new
checkpoint (the last known image, else the disk image read before the change, else `absent` when a
sweep has covered the path, else `unknown` with a gap) and hands the book one operation per change.

"Covered" is judged with the ignore rules of the last full sweep (capture/lastrules.py), not today's:
a path those rules hid existed unseen, so its first sight is no proof that the turn created it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ..errors import TurnbackError
from ..model.gaps import Gap
from ..model.images import ABSENT, FOLDER, UNKNOWN, Image, folder_key, folder_path, is_folder_key
from ..store import waiting
from . import lastrules
from .ignore import IgnoreRules, RulesSnapshot, is_own_temp
from .reader import read_image

FOLD_STEP = 512  # paths folded per step of a sweep's result (iter_apply_sweep): 4,096 held a loop 27 ms
FOLD_CHUNK = 2048  # about how many paths one `seen` operation records (a journal frame each)
CHANGE_CHUNK = 64  # changed paths per step: each is recorded (journal and state), about 0.1 ms

# Gap reasons a later successful read of the same path makes obsolete.
READ_GAPS = ("too-large", "unreadable", "symlink", "not-a-file")

# Why a first-seen path has an unknown before-image (the detail of its `unknown-before-image` gap).
NEVER_SEEN = "turnback never saw this file before it changed"
IGNORED_NOW = "turnback never saw this file before it changed: an ignore rule hid it"
WAS_IGNORED = ("it was ignored until the ignore rules changed, so turnback never saw it before; "
               "a rewind leaves it as it is")
RULES_LOST = ("turnback lost the ignore rules of its last sweep, so it cannot tell whether this file "
              "is new; a rewind leaves it as it is")
_UNLOADED = object()


# An editor's report of a new folder captures at most this many of its files at once (a capture
# never yields: 32 of them hold the loop a few ms); a bigger tree is left to the next sweep, which
# the owner's own watcher has marked, and which a turn's begin runs at the latest.
WATCHED_FOLDER_FILES = 32


@dataclass
class Captured:
    rel: str
    image: Image | None  # None when the path could not be read
    checkpoint: str | None  # the checkpoint name of the running turn's entry, if any
    changed: bool = False


class Recorder:
    def __init__(self, book, ws, *, max_bytes: int, rules=None, junk=None, rules_file=None):
        self.book = book
        self.rules_file = rules_file  # where the last full sweep's ignore rules are kept
        self._last = _UNLOADED  # their snapshots (list), None when lost; loaded on first use
        self._replayed: list[IgnoreRules] = []
        self.ws = ws
        self.max_bytes = max_bytes
        self.rules = rules  # IgnoreRules when sweeps are on; None means no sweep covers anything
        self._covered = False  # True once a full sweep has seen the workspace in this process
        # Names never recorded, whoever reports them: turnback's own temporaries and the default
        # editor and tool droppings (capture/ignore.py). Without it, only turnback's temporaries.
        self.junk = junk or is_own_temp

    @property
    def covered(self) -> bool:
        """A full sweep has seen the workspace: in this process, or (recorded in the session) in an
        earlier one. Each command-line command is its own process, so coverage must outlive it."""
        return self._covered or bool(self.state.config.get("swept"))

    @property
    def state(self):
        return self.book.state

    # -- one path -----------------------------------------------------------------------------
    def capture(self, rel: str, *, phase: str = "after", by: str = "hook") -> tuple[Captured, list[Gap]]:
        if not self.junk(rel):
            self.book.require_owner()  # reading stores the image: no object write without ownership
        recorded = self.state.last_op
        got = self.observe_read(rel, self._read(rel), phase=phase, by=by)
        if self.state.last_op != recorded:  # a scratch file or a folder records nothing to sync
            self.book.sync()
        return got

    def _read(self, rel: str):
        """A capture's first half: the file's bytes stored (an object write and its fsyncs), None
        for a scratch file. Touches no session state: `iter_capture` runs it on a helper thread,
        after the ownership check on the job's."""
        if self.junk(rel):
            return None  # scratch files are no one's work: not history
        return read_image(self.ws, rel, self.book.store.objects, max_bytes=self.max_bytes)

    def iter_capture(self, rels: list[str], *, phase: str = "after", by: str = "hook"):
        """`capture` of several paths as a job's steps: every file is read and stored on a helper
        thread first (cancellable: nothing is recorded yet), then all are recorded on the job's
        thread, then the journal is synced on a helper (binding: the captures are recorded)."""
        if not all(self.junk(rel) for rel in rels):
            self.book.require_owner()  # here: losing the lease changes the session (never a helper's)
        reads = yield from waiting.wait_in_slices(waiting.in_thread(
            lambda: [self._read(rel) for rel in rels]))
        recorded = self.state.last_op
        got = [self.observe_read(rel, read, phase=phase, by=by) for rel, read in zip(rels, reads)]
        if self.state.last_op != recorded:
            yield from waiting.binding_steps(self.book.iter_sync())
        return got

    def observe_read(self, rel: str, read, *, phase: str, by: str) -> tuple[Captured, list[Gap]]:
        """A capture's second half, on the job's thread: what the read found, recorded in the
        journal (not synced: the caller syncs once)."""
        if read is None:
            return Captured(rel, None, None), []
        running = self.state.running
        turn_n = running.n if running else None
        if read.status == "not-a-file" and self.state.known.get(rel) in (None, ABSENT) \
                and self.ws.abs_path(rel).is_dir():
            return Captured(rel, None, None), []  # a folder is not a file: nothing to capture
        if read.status not in ("ok", "absent"):
            detail = getattr(read, "detail", "") or ""
            if read.status == "too-large" and getattr(read, "size", None):
                detail = too_large_detail(read.size, self.max_bytes)
            gap = Gap(rel, read.status, turn_n, detail)
            self.book.record({"op": "gaps", "turn": turn_n, "add": [gap.to_dict()]})
            return Captured(rel, None, None), [gap]
        image = read.digest if read.status == "ok" else ABSENT
        gaps = self._observe(rel, image, phase=phase, by=by, mode=read.mode)
        self._clear_read_gaps([rel])
        entry = running.files.get(rel) if running else None
        return Captured(rel, image, entry.checkpoint if entry else None, bool(entry)), gaps

    def files_in_folder(self, rel: str, limit: int = WATCHED_FOLDER_FILES) -> list[str] | None:
        """The files below folder `rel` that capture would record (ignored folders and files
        skipped, links never followed), at most `limit`; None when rel is no folder. An editor's
        watcher may report a new folder and not the files made in it a moment later."""
        if rel in ("", "."):
            return None  # the workspace itself is a sweep's, never a capture's
        try:
            self.ws.check_components(rel)  # no link on the way, the folder itself included
        except (OSError, TurnbackError):
            return None  # its capture says why (a gap), as for any path through a link
        root = self.ws.abs_path(rel)
        if not root.is_dir():
            return None
        if self.rules is not None and self.rules.ignored(rel, True):
            return []
        out: list[str] = []
        pending = [(rel, root)]
        while pending and len(out) < limit:
            folder_rel, folder = pending.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue  # gone, or unreadable: the next sweep says so
            for entry in entries:
                child = f"{folder_rel}/{entry.name}"
                is_dir = entry.is_dir(follow_symlinks=False)
                skip = self.rules.ignored(child, is_dir) if self.rules is not None else (
                    entry.name == ".git" or self.ws.in_store(child))
                if skip or (not is_dir and self.junk(child)):
                    continue
                if is_dir:
                    pending.append((child, entry.path))
                elif len(out) < limit:
                    out.append(child)
        return out

    def _observe(self, rel: str, image: Image, *, phase: str, by: str,
                 mode: int | None = None) -> list[Gap]:
        state = self.state
        running = state.running
        known = state.known.get(rel)
        if running is not None and rel in running.files:
            entry = running.files[rel]
            if entry.after != image or _mode_moved(entry.after_mode, mode):
                self._image(rel, running.n, entry.before, image, mode=mode)
            return []
        if known == image and not _mode_moved(state.known.mode(rel), mode):
            if mode is not None and state.known.mode(rel) is None:
                self.book.record({"op": "seen", "images": {rel: image}, "modes": {rel: mode}})
            return []
        if known is None and phase == "before":
            # The disk image read just before a tool writes is the before-image we lacked.
            self.book.record({"op": "seen", "images": {rel: image},
                              **({"modes": {rel: mode}} if mode is not None else {})})
            return []
        gaps: list[Gap] = []
        before, why = (known, "") if known is not None else self._fallback_before(rel)
        if before == ABSENT and image == ABSENT:
            return []  # absent before and after: nothing changed, so no checkpoint
        learnt = why in (IGNORED_NOW, WAS_IGNORED, RULES_LOST) or (why == NEVER_SEEN and by in ("watch", "save"))
        if running is None and learnt and image != ABSENT:
            # Between turns, a file an ignore rule hid, or one an editor reports that no sweep saw
            # yet (`turnback hooks install` in its terminal before the first turn), is no one's
            # change: learnt as it is (as the sweep learns one, apply_sweep), not a loose change
            # with a gap that never clears (docs/capture.md, "Git's files and turnback's own"). A
            # hook's explicit capture still records the change, with its gap.
            self.book.record({"op": "seen", "images": {rel: image},
                              **({"modes": {rel: mode}} if mode is not None else {})})
            return []
        if before == UNKNOWN:
            gap = Gap(rel, "unknown-before-image", running.n if running else None, why or NEVER_SEEN)
            self.book.record({"op": "gaps", "turn": gap.turn, "add": [gap.to_dict()]})
            gaps.append(gap)
        self._image(rel, running.n if running else None, before, image, by=by, mode=mode)
        return gaps

    def _fallback_before(self, rel: str) -> tuple[Image, str]:
        """A path we never saw: absent if the last sweep covered it (it would have been seen), else
        unknown, with the reason in words."""
        if not self.covered or self.rules is None:
            return UNKNOWN, NEVER_SEEN
        path, is_dir = (folder_path(rel), True) if is_folder_key(rel) else (rel, False)
        if self.rules.ignored(path, is_dir):
            return UNKNOWN, IGNORED_NOW
        if self.rules_file is None:
            return ABSENT, ""  # no memory of earlier rules (a recorder outside a workbench)
        last = self._last_rules()
        if last is None:
            return UNKNOWN, RULES_LOST
        if any(old.ignored(path, is_dir) for old in last):
            return UNKNOWN, WAS_IGNORED
        return ABSENT, ""

    # -- the ignore rules of the last full sweep ------------------------------------------------
    def _last_rules(self) -> list[IgnoreRules] | None:
        if self._last is _UNLOADED:
            self._adopt(lastrules.load(self.rules_file) if self.rules_file is not None else None)
        return self._replayed if self._last is not None else None

    def _adopt(self, snaps: list[RulesSnapshot] | None) -> None:
        self._last = snaps
        self._replayed = [IgnoreRules.replay(self.ws, snap) for snap in snaps or ()]

    def _rules_moving_to(self, now: RulesSnapshot | None) -> bool:
        """Before a full sweep's result is folded in: if its rules differ from the kept ones, keep
        both, durably, until the result is durable too. A crash in between then leaves rules that
        hide whatever either set hid: a later sweep may call a file unknown, never new."""
        if now is None or self.rules_file is None:
            return False
        self._last_rules()
        if self._last == [now]:
            return False
        lastrules.save(self.rules_file, [*(self._last or ()), now])
        return True

    def _image(self, rel: str, turn: int | None, before: Image, after: Image, *,
               by: str | None = None, mode: int | None = None) -> None:
        """One change; with the permission bits of the new image and of the one it replaces."""
        op = {"op": "image", "rel": rel, "turn": turn, "before": before, "after": after,
              "ts": time.time()}
        if turn is None and by:
            op["by"] = by  # who made a change between turns: named when a rewind would undo it
        known = self.state.known
        before_mode = known.mode(rel) if before not in (ABSENT, UNKNOWN) and before == known.get(rel) \
            else None
        if mode is not None and after != ABSENT:
            op["mode"] = mode
        if before_mode is not None:
            op["beforeMode"] = before_mode
        self.book.record(op)

    def _clear_read_gaps(self, rels) -> None:
        clear = [[rel, reason] for rel in rels for reason in READ_GAPS
                 if (rel, reason) in self.state.live_gaps]
        if clear:
            self.book.record({"op": "gaps", "turn": None, "clear": clear})

    # -- a whole sweep ------------------------------------------------------------------------
    def apply_sweep(self, result, rules: RulesSnapshot | None = None) -> int:
        """`iter_apply_sweep` run to its end (for callers that are not jobs)."""
        steps = self.iter_apply_sweep(result, rules)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def iter_apply_sweep(self, result, rules: RulesSnapshot | None = None, *,
                         caller_syncs: bool = False):
        """Fold a finished sweep in: changes become checkpoint entries (inside a turn) or loose
        changes (between turns); gaps replace the previous sweep's. Returns how many paths changed.
        `rules`: the ignore rules a full sweep used, kept for the next one (None after a partial
        sweep, which keeps the last full sweep's). A generator that yields every `FOLD_STEP` paths,
        so a first checkpoint of 250,000 files is not one step of the loop: what it learns is
        recorded in `seen` operations of about `FOLD_CHUNK` paths each (the last says `covered`).
        `caller_syncs`: the caller records its own operation next, with no step between, and syncs
        the journal for both (a begin, a settle: `Workbench.sweep_job`), unless the rules move
        (their adoption waits for this result to be durable)."""
        moving = self._rules_moving_to(rules)
        state = self.state
        running = state.running
        turn_n = running.n if running else None
        seen: dict[str, Image] = {}
        changed = 0
        gap_rels = {rel for rel, _reason in result.gaps}
        scope = getattr(result, "scope", None)  # a watcher's sweep looked at these paths only
        # Folders are part of the tree (model/images.py): each walked folder is an observation of
        # its key. A store that never recorded folders learns them all from its first full sweep,
        # as a first sweep learns files: nobody's change.
        images = dict(result.images)
        images.update((folder_key(f), FOLDER) for f in getattr(result, "folders", ()))
        learn_folders = not state.config.get("folders")
        candidates = list(state.known.items()) if scope is None else \
            [(rel, state.known[rel]) for rel in scope if rel in state.known]
        vanished = set()
        for i, (rel, image) in enumerate(candidates):
            if image not in (ABSENT, UNKNOWN) and rel not in images \
                    and rel not in gap_rels and not self._ignored(rel):
                vanished.add(rel)
            if i % FOLD_STEP == FOLD_STEP - 1:
                yield i
        del candidates
        observations = list(images.items()) + [(rel, ABSENT) for rel in
                                               set(result.absent) | vanished]
        seen_modes: dict[str, int] = {}
        unseen: list[dict] = []  # first-seen paths of this turn whose before-image is unknown
        for i, (rel, image) in enumerate(observations):
            if i % FOLD_STEP == FOLD_STEP - 1:
                if len(seen) + len(seen_modes) >= FOLD_CHUNK:
                    self.book.record({"op": "seen", "images": seen,
                                      **({"modes": seen_modes} if seen_modes else {})})
                    seen, seen_modes = {}, {}
                yield i
            known = state.known.get(rel)
            in_turn = running is not None and rel in running.files
            mode = result.modes.get(rel) if image != ABSENT else None
            last_mode = running.files[rel].after_mode if in_turn else state.known.mode(rel)
            if (running.files[rel].after if in_turn else known) == image \
                    and not _mode_moved(last_mode, mode):
                if mode is not None and last_mode is None and not in_turn:
                    seen_modes[rel] = mode  # learnt, not changed
                continue
            if known is None and not in_turn and (not self.covered
                                                   or (learn_folders and is_folder_key(rel))):
                seen[rel] = image  # the first sweep learns the workspace; nothing changed
                if mode is not None:
                    seen_modes[rel] = mode
                continue
            before, why = (known, "") if known is not None or in_turn else self._fallback_before(rel)
            if before == UNKNOWN and running is None:
                # Between turns no one's turn made it: learnt as it is, like the first sweep's files
                # (a rewind to any earlier boundary leaves it alone).
                seen[rel] = image
                if mode is not None:
                    seen_modes[rel] = mode
                continue
            changed += 1
            if in_turn:
                self._image(rel, turn_n, running.files[rel].before, image, mode=mode)
            else:
                if before == UNKNOWN:
                    unseen.append(Gap(rel, "unknown-before-image", turn_n, why).to_dict())
                self._image(rel, turn_n, before, image, by="sweep", mode=mode)
            if changed % CHANGE_CHUNK == 0:
                yield i  # each change is an operation of its own: 4,096 of them held a loop 0.4 s
        folders_now = learn_folders and scope is None  # a full walk has seen every folder
        if seen or seen_modes or not state.config.get("swept") or folders_now:
            self.book.record({"op": "seen", "images": seen, "covered": True,
                              **({"modes": seen_modes} if seen_modes else {}),
                              **({"folders": True} if folders_now else {})})
        new = {(rel, reason) for rel, reason in result.gaps}
        old = {key for key, gap in state.live_gaps.items() if gap.reason in READ_GAPS
               and (scope is None or key[0] in scope)}
        add = [Gap(rel, reason, turn_n, self._detail(rel, reason)).to_dict()
               for rel, reason in sorted(new - old)] + unseen
        clear = [list(key) for key in sorted(old - new)]
        if add or clear:
            self.book.record({"op": "gaps", "turn": turn_n, "add": add, "clear": clear})
        self._covered = True
        if caller_syncs and not moving:
            return changed
        # Recorded: a cancel from here on lets the sync and the rules' adoption finish.
        yield from waiting.binding_steps(self.book.iter_sync())
        if moving:  # the result is durable: from now on only the new rules count
            lastrules.save(self.rules_file, [rules])
            self._adopt([rules])
        return changed

    def _detail(self, rel: str, reason: str) -> str:
        """The size and the limit of a file too large to capture, as a person reads them."""
        if reason != "too-large":
            return ""
        try:
            return too_large_detail(os.lstat(self.ws.abs_path(rel)).st_size, self.max_bytes)
        except OSError:
            return ""

    def _ignored(self, rel: str) -> bool:
        if self.rules is None:
            return False
        if is_folder_key(rel):
            return self.rules.ignored(folder_path(rel), True)
        return self.rules.ignored(rel, False)


def _mode_moved(last: int | None, now: int | None) -> bool:
    """A change of permission bits alone (chmod +x) counts as a change, once both are known."""
    return last is not None and now is not None and last != now


def size_words(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def too_large_detail(size: int, limit: int) -> str:
    """`21 MiB, over the 16 MiB limit`: what the confirmation and the mode line say."""
    return f"{size_words(size)}, over the {size_words(limit)} limit"
