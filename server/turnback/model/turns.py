"""Turns and their checkpoint entries."""

from __future__ import annotations

from dataclasses import dataclass, field

from .gaps import Gap
from .images import Image
from .steps import Step

TURN_KINDS = ("chat", "directive")
TURN_STATES = ("running", "settled", "cancelled")


@dataclass
class FileEntry:
    """The checkpoint (turn n, path): minted at the first capture of the path in turn n.

    `before` is the image the path had just before turn n touched it; later captures in the same turn
    replace only `after` and bump `captures`, so the name, version and timestamp stay stable.
    `before_mode` and `after_mode` are the permission bits with each image (None: not recorded, as
    in stores of format 1)."""

    rel: str
    turn: int
    created: float
    before: Image
    after: Image
    version: int = 1
    captures: int = 1
    before_mode: int | None = None
    after_mode: int | None = None

    @property
    def checkpoint(self) -> str:
        return f"{self.turn}:{self.rel}@v{self.version}"

    def to_dict(self) -> dict:
        doc = {"rel": self.rel, "turn": self.turn, "created": self.created, "before": self.before,
               "after": self.after, "version": self.version, "captures": self.captures}
        if self.before_mode is not None:
            doc["beforeMode"] = self.before_mode
        if self.after_mode is not None:
            doc["afterMode"] = self.after_mode
        return doc

    @staticmethod
    def from_dict(d: dict) -> "FileEntry":
        return FileEntry(d["rel"], d["turn"], d["created"], d["before"], d["after"],
                         d.get("version", 1), d.get("captures", 1), d.get("beforeMode"),
                         d.get("afterMode"))


@dataclass
class Turn:
    n: int
    kind: str
    prompt: str
    state: str = "running"
    response: str = ""
    directive_id: str | None = None
    started: float = 0.0
    ended: float | None = None
    files: dict[str, FileEntry] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    instructions: dict[str, str] = field(default_factory=dict)  # name -> object digest of the text
    # Not a field: True only on a published turn not read yet that its head's record counts as
    # finished (timeline/lazyturns.py), so counting the finished turns reads none of them.
    finished_unread = False

    def add_gap(self, gap: Gap) -> bool:
        if any(g.key() == gap.key() for g in self.gaps):
            return False
        self.gaps.append(gap)
        return True

    def to_dict(self) -> dict:
        return {
            "n": self.n, "kind": self.kind, "prompt": self.prompt, "state": self.state,
            "response": self.response, "directiveId": self.directive_id, "started": self.started,
            "ended": self.ended, "files": [e.to_dict() for e in self.files.values()],
            "steps": [s.to_dict() for s in self.steps], "gaps": [g.to_dict() for g in self.gaps],
            "instructions": dict(self.instructions),
        }

    @staticmethod
    def from_dict(d: dict) -> "Turn":
        t = Turn(d["n"], d["kind"], d["prompt"], d["state"], d.get("response", ""),
                 d.get("directiveId"), d.get("started", 0.0), d.get("ended"))
        t.files = {e["rel"]: FileEntry.from_dict(e) for e in d.get("files", [])}
        t.steps = [Step.from_dict(s) for s in d.get("steps", [])]
        t.gaps = [Gap.from_dict(g) for g in d.get("gaps", [])]
        t.instructions = dict(d.get("instructions", {}))
        return t
