"""Turning observations of the disk into checkpoint operations.

Every capture source ends here: explicit captures from agent hooks (phase `before` or `after`), editor
saves and opens, watched-file changes, and the sweeps. The recorder decides the before-image of a new
checkpoint (the last known image, else the disk image read before the change, else `absent` when a
sweep has covered the path, else `unknown` with a gap) and hands the book one operation per change.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ..model.gaps import Gap
from ..model.images import ABSENT, UNKNOWN, Image
from .ignore import is_own_temp
from .reader import read_image

# Gap reasons a later successful read of the same path makes obsolete.
READ_GAPS = ("too-large", "unreadable", "symlink", "not-a-file")


@dataclass
class Captured:
    rel: str
    image: Image | None  # None when the path could not be read
    checkpoint: str | None  # the checkpoint name of the running turn's entry, if any
    changed: bool = False


class Recorder:
    def __init__(self, book, ws, *, max_bytes: int, rules=None, junk=None):
        self.book = book
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
        if self.junk(rel):
            return Captured(rel, None, None), []  # scratch files are no one's work: not history
        read = read_image(self.ws, rel, self.book.store.objects, max_bytes=self.max_bytes)
        running = self.state.running
        turn_n = running.n if running else None
        if read.status not in ("ok", "absent"):
            detail = getattr(read, "detail", "") or ""
            if read.status == "too-large" and getattr(read, "size", None):
                detail = too_large_detail(read.size, self.max_bytes)
            gap = Gap(rel, read.status, turn_n, detail)
            self.book.record({"op": "gaps", "turn": turn_n, "add": [gap.to_dict()]}, sync=True)
            return Captured(rel, None, None), [gap]
        image = read.digest if read.status == "ok" else ABSENT
        gaps = self._observe(rel, image, phase=phase, by=by)
        self._clear_read_gaps([rel])
        self.book.sync()
        entry = running.files.get(rel) if running else None
        return Captured(rel, image, entry.checkpoint if entry else None, bool(entry)), gaps

    def _observe(self, rel: str, image: Image, *, phase: str, by: str) -> list[Gap]:
        state = self.state
        running = state.running
        known = state.known.get(rel)
        if running is not None and rel in running.files:
            if running.files[rel].after != image:
                self._image(rel, running.n, running.files[rel].before, image)
            return []
        if known == image:
            return []
        if known is None and phase == "before":
            # The disk image read just before a tool writes is the before-image we lacked.
            self.book.record({"op": "seen", "images": {rel: image}})
            return []
        gaps: list[Gap] = []
        before = known if known is not None else self._fallback_before(rel)
        if before == ABSENT and image == ABSENT:
            return []  # absent before and after: nothing changed, so no checkpoint
        if before == UNKNOWN:
            gap = Gap(rel, "unknown-before-image", running.n if running else None,
                      "turnback never saw this file before it changed")
            self.book.record({"op": "gaps", "turn": gap.turn, "add": [gap.to_dict()]})
            gaps.append(gap)
        self._image(rel, running.n if running else None, before, image, by=by)
        return gaps

    def _fallback_before(self, rel: str) -> Image:
        """A path we never saw: absent if a sweep covered it (it would have been seen), else unknown."""
        if self.covered and self.rules is not None and not self.rules.ignored(rel, False):
            return ABSENT
        return UNKNOWN

    def _image(self, rel: str, turn: int | None, before: Image, after: Image, *,
               by: str | None = None) -> None:
        op = {"op": "image", "rel": rel, "turn": turn, "before": before, "after": after,
              "ts": time.time()}
        if turn is None and by:
            op["by"] = by  # who made a change between turns: named when a rewind would undo it
        self.book.record(op)

    def _clear_read_gaps(self, rels) -> None:
        clear = [[rel, reason] for rel in rels for reason in READ_GAPS
                 if (rel, reason) in self.state.live_gaps]
        if clear:
            self.book.record({"op": "gaps", "turn": None, "clear": clear})

    # -- a whole sweep ------------------------------------------------------------------------
    def apply_sweep(self, result) -> int:
        """Fold a finished sweep in: changes become checkpoint entries (inside a turn) or loose
        changes (between turns); gaps replace the previous sweep's. Returns how many paths changed."""
        state = self.state
        running = state.running
        turn_n = running.n if running else None
        seen: dict[str, Image] = {}
        changed = 0
        gap_rels = {rel for rel, _reason in result.gaps}
        scope = getattr(result, "scope", None)  # a watcher's sweep looked at these paths only
        candidates = state.known.items() if scope is None else \
            ((rel, state.known[rel]) for rel in scope if rel in state.known)
        vanished = {rel for rel, image in candidates
                    if image not in (ABSENT, UNKNOWN) and rel not in result.images
                    and rel not in gap_rels and not self._ignored(rel)}
        observations = list(result.images.items()) + [(rel, ABSENT) for rel in
                                                       set(result.absent) | vanished]
        for rel, image in observations:
            known = state.known.get(rel)
            in_turn = running is not None and rel in running.files
            if (running.files[rel].after if in_turn else known) == image:
                continue
            if known is None and not self.covered and not in_turn:
                seen[rel] = image  # the first sweep learns the workspace; nothing changed
                continue
            changed += 1
            if in_turn:
                self._image(rel, turn_n, running.files[rel].before, image)
            else:
                self._image(rel, turn_n, known if known is not None else self._fallback_before(rel),
                            image, by="sweep")
        if seen or not state.config.get("swept"):
            self.book.record({"op": "seen", "images": seen, "covered": True})
        new = {(rel, reason) for rel, reason in result.gaps}
        old = {key for key, gap in state.live_gaps.items() if gap.reason in READ_GAPS
               and (scope is None or key[0] in scope)}
        add = [Gap(rel, reason, turn_n, self._detail(rel, reason)).to_dict()
               for rel, reason in sorted(new - old)]
        clear = [list(key) for key in sorted(old - new)]
        if add or clear:
            self.book.record({"op": "gaps", "turn": turn_n, "add": add, "clear": clear})
        self._covered = True
        self.book.sync()
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
        return self.rules is not None and self.rules.ignored(rel, False)


def size_words(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def too_large_detail(size: int, limit: int) -> str:
    """`21 MiB, over the 16 MiB limit`: what the confirmation and the mode line say."""
    return f"{size_words(size)}, over the {size_words(limit)} limit"
