"""The changes of a turn, or of every turn from K on, read from a session state: pure, no I/O.

A turn's change to a path is its checkpoint entry (before image -> after image). The user's own
changes between turns (`SessionState.between`) are changes of their own, listed where they happened
(after turn k, before turn k+1) and named for who made them, never folded into a turn. A path a turn
could not capture (too large, unreadable, a link) is listed with its gap instead of images.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.images import ABSENT, UNKNOWN, is_folder_key

# Who made a change between turns (the capture source), in a person's words.
BY_WORDS = {"save": "saved in the editor", "watch": "changed on disk", "sweep": "changed on disk",
            "hook": "captured between turns", "restore": "put back by a restore",
            "kept": "kept by a conversation-only rewind"}
# Gaps that stand for a path's images in a diff (the rest are not about one file's bytes).
FILE_GAPS = ("too-large", "unreadable", "symlink", "not-a-file", "unknown-before-image",
             "outside-workspace", "git-internal")


@dataclass
class Change:
    source: str  # "turn" (the agent's turn made it) or "user" (between turns: nobody's turn)
    rel: str
    before: str | None  # an image (digest, ABSENT, UNKNOWN), or None when a gap stands for it
    after: str | None
    turn: int | None = None  # the turn that made it; for "user", the turn it came after (0: before turn 1)
    checkpoint: str | None = None
    by: str | None = None  # for "user": save, watch, sweep, hook (None: not recorded)
    before_mode: int | None = None
    after_mode: int | None = None
    gap: dict = field(default_factory=dict)  # {reason, detail} when the images are not known

    @property
    def status(self) -> str:
        if self.gap and (self.after is None or self.before is None):
            return "gap"
        if self.before == UNKNOWN:
            return "unknown-before"
        if self.before == ABSENT and self.after == ABSENT:
            return "transient"
        if self.before == ABSENT:
            return "created"
        if self.after == ABSENT:
            return "deleted"
        if self.before == self.after:
            return "mode"
        return "modified"

    def labels(self, prompt: str | None = None) -> tuple[str, str]:
        """The two sides in words: what a person sees as the diff's file names."""
        if self.source == "turn":
            return f"before turn {self.turn}", f"after turn {self.turn}"
        when = f"after turn {self.turn}" if self.turn else "before turn 1"
        by = BY_WORDS.get(self.by or "", "made by no turn")
        return (f"as turn {self.turn} left it" if self.turn else "before turn 1",
                f"your edit {when}, {by}")


def turn_changes(state, n: int, *, under: str | None = None) -> list[Change]:
    """The changes turn n made (its checkpoint entries and its file gaps), path order."""
    turn = state.turn(n)
    if turn is None:
        return []
    out = [Change("turn", rel, e.before, e.after, n, e.checkpoint, before_mode=e.before_mode,
                  after_mode=e.after_mode)
           for rel, e in sorted(turn.files.items()) if _under(rel, under)]
    seen = {c.rel for c in out}
    for g in turn.gaps:
        if g.rel and g.reason in FILE_GAPS and _under(g.rel, under):
            gap = {"reason": g.reason, "detail": g.detail}
            if g.rel in seen:
                for c in out:
                    if c.rel == g.rel and not c.gap:
                        c.gap = gap
            else:
                seen.add(g.rel)
                out.append(Change("turn", g.rel, None, None, n, gap=gap))
    return sorted(out, key=lambda c: c.rel)


def user_changes(state, after_turn: int, *, under: str | None = None) -> list[Change]:
    """The user's own changes between turn `after_turn` and the next, path order."""
    bucket = state.between.get(after_turn, {})
    modes = state.between_modes.get(after_turn, {})
    return [Change("user", rel, before, after, after_turn, by=state.between_by.get((after_turn, rel)),
                   before_mode=modes.get(rel))
            for rel, (before, after) in sorted(bucket.items()) if _under(rel, under)]


def changes_since(state, n: int, *, under: str | None = None) -> list[Change]:
    """Every change from the start of turn n on, in the order it happened: each turn's, then the
    user's own edits after it."""
    out: list[Change] = []
    for k in range(n, state.turn_count + 1):
        out.extend(turn_changes(state, k, under=under))
        out.extend(user_changes(state, k, under=under))
    return out


def _under(rel: str, prefix: str | None) -> bool:
    """rel is a file's path (a folder key has no text to diff: made or removed, the files in it
    say what changed), and the path asked for or inside the folder asked for (None or "": all)."""
    if is_folder_key(rel):
        return False
    if not prefix:
        return True
    prefix = prefix.rstrip("/")
    return rel == prefix or rel.startswith(prefix + "/")
