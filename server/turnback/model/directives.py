"""Directives: user-authored requests anchored in a file, and the attempts the agent made at them."""

from __future__ import annotations

from dataclasses import dataclass, field

DIRECTIVE_STATES = ("draft", "ready", "running", "answered", "applied", "detached")


@dataclass
class Attempt:
    turn: int
    request_rev: int  # which revision of the request this attempt answered
    answer: str | None = None
    feedback: str | None = None
    patch: str | None = None
    consumed: list[str] = field(default_factory=list)  # subdirective ids this attempt consumed

    def to_dict(self) -> dict:
        return {"turn": self.turn, "requestRev": self.request_rev, "answer": self.answer,
                "feedback": self.feedback, "patch": self.patch, "consumed": list(self.consumed)}

    @staticmethod
    def from_dict(d: dict) -> "Attempt":
        return Attempt(d["turn"], d.get("requestRev", 1), d.get("answer"), d.get("feedback"),
                       d.get("patch"), list(d.get("consumed", [])))


@dataclass
class Directive:
    id: str
    rel: str
    line: int
    character: int
    request: str
    anchor_text: str = ""  # the anchored line's text when the anchor was last attached
    attached: bool = True
    request_rev: int = 1
    parent_id: str | None = None
    state: str = "ready"
    attempts: list[Attempt] = field(default_factory=list)
    created: float = 0.0

    def to_dict(self) -> dict:
        return {"id": self.id, "rel": self.rel, "line": self.line, "character": self.character,
                "request": self.request, "anchorText": self.anchor_text, "attached": self.attached,
                "requestRev": self.request_rev, "parentId": self.parent_id, "state": self.state,
                "attempts": [a.to_dict() for a in self.attempts], "created": self.created}

    @staticmethod
    def from_dict(d: dict) -> "Directive":
        return Directive(d["id"], d["rel"], d["line"], d["character"], d["request"],
                         d.get("anchorText", ""), d.get("attached", True), d.get("requestRev", 1),
                         d.get("parentId"), d.get("state", "ready"),
                         [Attempt.from_dict(a) for a in d.get("attempts", [])], d.get("created", 0.0))
