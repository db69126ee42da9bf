"""A capture gap: something a rewind cannot put back, with the reason from the contract."""

from __future__ import annotations

from dataclasses import dataclass

# The reasons of the public contract, plus the few we add (documented in docs/capture.md).
GAP_REASONS = (
    "unknown-before-image",
    "too-large",
    "unreadable",
    "outside-workspace",
    "symlink",
    "step-scope-unknown",
    "git-head-and-index",
    "not-a-file",
    "not-in-head",
    "git-internal",
    "not-a-folder",  # a folder key's path holds a file (or something else) now
    "not-a-directory",  # a file's folder is a file (or something else) now
    "folder-not-empty",  # a folder a plan would remove holds what turnback never captured
    "submodule-uninitialised",  # a worktree fork's submodule the parent never checked out
)

# Each reason in a person's words: the server sends them with every gap (`Gap.words`), so every
# client says the same; a client's own table is only for an older server (tests/test_words.py).
GAP_WORDS = {
    "unknown-before-image": "turnback never saw this file before it changed, so it cannot put it back",
    "too-large": "the file is over the capture size limit; its images were not kept",
    "unreadable": "the file could not be read when it was captured",
    "outside-workspace": "the path is outside the workspace; turnback does not touch it",
    "symlink": "a symbolic link; turnback never follows or restores links",
    "step-scope-unknown": "a step did not say where its effect went; assume it cannot be undone",
    "git-head-and-index": "git's HEAD and index are not part of a rewind",
    "not-a-file": "not a regular file (a folder, a pipe or a device is there); it stays as it is",
    "not-in-head": "the image is missing from the saved state",
    "git-internal": "inside a .git folder: git's own files are never captured or restored",
    "not-a-folder": "a file (or a link) stands where this folder was; it stays as it is, and the "
                    "folder is not made over it",
    "not-a-directory": "one of the folders on its path is a file (or a link) now; what stands "
                       "there stays, and this file is not written",
    "folder-not-empty": "a folder that would go holds files turnback never captured; it stays, with them",
    "submodule-uninitialised": "a submodule the parent never checked out: left empty, uninitialised",
}
assert tuple(GAP_WORDS) == GAP_REASONS

# Why a path on disk cannot be planned, beyond the reason's words: a shape in the way (a folder
# where a file was, a file where a folder was) says it all in its words, so it carries no detail.
SHAPE_REASONS = ("not-a-file", "not-a-folder", "not-a-directory")


def disk_gap(rel: str, problem: str) -> "Gap":
    """The gap of a path a plan cannot read or write now (travel/disk.py's problem)."""
    return Gap(rel, problem, None, "" if problem in SHAPE_REASONS
               else "the file cannot be read or written safely now")


@dataclass(frozen=True)
class Gap:
    rel: str  # workspace-relative path, or "" for a gap that is not about one path
    reason: str
    turn: int | None = None
    detail: str = ""

    def key(self) -> tuple:
        return (self.rel, self.reason, self.turn)

    def to_wire(self, to_uri) -> dict:
        """The contract's Gap: a workspace path becomes a URI; a path outside the workspace (kept as
        the client sent it) and a session-wide gap (no path) are passed as they are."""
        outside = self.rel.startswith(("file:", "/"))
        out = {"uri": to_uri(self.rel) if self.rel and not outside else (self.rel or None),
               "turn": self.turn, "reason": self.reason}
        words = GAP_WORDS.get(self.reason)
        if words and self.rel.endswith("/"):  # a folder key (`src/empty/`): say what it is
            words = words.replace("this file", "this folder")
        if words:
            out["words"] = words
        if self.detail:
            out["detail"] = self.detail
        return out

    def to_dict(self) -> dict:
        return {"rel": self.rel, "reason": self.reason, "turn": self.turn, "detail": self.detail}

    @staticmethod
    def from_dict(d: dict) -> "Gap":
        return Gap(d["rel"], d["reason"], d.get("turn"), d.get("detail", ""))
