"""Logged agent steps: what the agent did, how far its effect reached, and how it could be undone."""

from __future__ import annotations

from dataclasses import dataclass, field

STEP_KINDS = (
    "file-write",
    "file-delete",
    "file-move",
    "shell",
    "network-send",
    "network-fetch",
    "read",
    "think",
    "other",
)
# host: confined to this machine; crossing: left it; unknown: nobody said (treated as crossing);
# none: had no effect at all.
SCOPES = ("host", "crossing", "unknown", "none")


@dataclass(frozen=True)
class Inverse:
    kind: str
    scope: str  # an absent scope is stored as "unknown", never guessed
    # Whether running the inverse twice is the same as once; None when the agent did not say. A fork
    # refuses a span with a non-idempotent inverse (a crash may make recovery run it again).
    idempotent: bool | None = None

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "scope": self.scope}
        if self.idempotent is not None:
            out["idempotent"] = self.idempotent
        return out

    @staticmethod
    def from_dict(d: dict | None) -> "Inverse | None":
        return None if d is None else Inverse(d["kind"], d["scope"], d.get("idempotent"))


@dataclass
class Step:
    id: str  # "s<turn>.<index>", stable and unique within a session
    turn: int
    kind: str  # one of STEP_KINDS, or any other string a newer agent sends (kept verbatim)
    scope: str  # one of SCOPES
    summary: str = ""
    rels: list[str] = field(default_factory=list)  # workspace paths the step names
    inverse: Inverse | None = None
    held: bool = False  # an outbound send still held in our queue, not yet sent
    compensates: str | None = None  # id of the step this one compensates
    result: str | None = None  # object digest of the persisted tool result
    created: float = 0.0

    def to_dict(self) -> dict:
        return {
            "id": self.id, "turn": self.turn, "kind": self.kind, "scope": self.scope,
            "summary": self.summary, "rels": list(self.rels),
            "inverse": self.inverse.to_dict() if self.inverse else None,
            "held": self.held, "compensates": self.compensates, "result": self.result,
            "created": self.created,
        }

    @staticmethod
    def from_dict(d: dict) -> "Step":
        return Step(
            id=d["id"], turn=d["turn"], kind=d["kind"], scope=d["scope"],
            summary=d.get("summary", ""), rels=list(d.get("rels", [])),
            inverse=Inverse.from_dict(d.get("inverse")), held=bool(d.get("held", False)),
            compensates=d.get("compensates"), result=d.get("result"), created=d.get("created", 0.0),
        )
