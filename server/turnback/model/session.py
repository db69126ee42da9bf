"""The session state: everything a head or sidecar publishes, as plain data."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

from .directives import Directive
from .gaps import Gap
from .images import Image
from .known import KnownMap
from .turns import Turn

WORKFLOW_LISTS = ("tasks", "goals", "agents", "handoffs")


@dataclass
class AgentTranscript:
    agent_id: str
    turn: int
    text: str = ""
    final: bool = False

    def to_dict(self) -> dict:
        return {"agentId": self.agent_id, "turn": self.turn, "text": self.text, "final": self.final}

    @staticmethod
    def from_dict(d: dict) -> "AgentTranscript":
        return AgentTranscript(d["agentId"], d["turn"], d.get("text", ""), d.get("final", False))


@dataclass
class SessionState:
    session_id: str
    created: float
    config: dict = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    # Changes seen while no turn ran, keyed by how many turns existed then: between[k] happened after
    # turn k and before turn k+1. Each path keeps its first before-image and its latest after-image.
    between: dict[int, dict[str, tuple[Image, Image]]] = field(default_factory=dict)
    # The permission bits each path had just before its first change in between[k] (None: unknown).
    between_modes: dict[int, dict[str, int | None]] = field(default_factory=dict)
    # Who made each loose change, when a capture source said: (k, rel) -> "save", "watch", "sweep"
    # or "hook". A rewind names it when it lists the change as a user edit.
    between_by: dict[tuple[int, str], str] = field(default_factory=dict)
    # How many times the reducer replaced a pair of between[k] in place (its length unchanged): the
    # collector's look (`collect/roots.StateRefs`) marks a bucket with it. In this process only.
    between_edits: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    known: KnownMap = field(default_factory=KnownMap)  # the last known image of every path
    directives: dict[str, Directive] = field(default_factory=dict)
    workflow: dict[str, list] = field(default_factory=lambda: {k: [] for k in WORKFLOW_LISTS})
    agents: dict[str, AgentTranscript] = field(default_factory=dict)
    live_gaps: dict[tuple, Gap] = field(default_factory=dict)  # what a rewind right now would face
    epoch: int = 0  # how many context epochs (committed rewinds and redos) this line has seen
    fork_point: str = ""  # identity of the place where this line of history last diverged
    last_op: int = 0  # sequence of the last journal operation folded into this state
    frozen: bool = False
    # Where this session came from: {parentId, forkTurn, worktree, parentStore, meta, notPreserved};
    # empty for a session nobody forked. Part of the published state, so it commits with the session.
    lineage: dict = field(default_factory=dict)
    # File restores that kept every turn (`turnback restore`, a files-only rewind), oldest first:
    # {afterTurn, operation, mode, boundary, paths (the first few), count, created, forkPointBefore,
    # forkPoint}. Redo reads it to offer the state each one left behind (travel/redo.py).
    restores: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.known, KnownMap):
            self.known = KnownMap(self.known)

    # -- small queries every layer needs ---------------------------------------------------------
    @property
    def turn_count(self) -> int:
        return len(self.turns)

    @property
    def settled_turn_count(self) -> int:
        """How many leading turns are finished (settled or cancelled); a running turn ends the run."""
        count = 0
        for t in self.turns:
            if not t.finished_unread and t.state == "running":
                break
            count += 1
        return count

    @property
    def running(self) -> Turn | None:
        return self.turns[-1] if self.turns and self.turns[-1].state == "running" else None

    def turn(self, n: int) -> Turn | None:
        return self.turns[n - 1] if 1 <= n <= len(self.turns) else None


def clone(state: "SessionState") -> "SessionState":
    """A deep copy of a state, through pickle: a new state for a plan to change. `copy.deepcopy`
    walks every turn, entry and step in Python (30-60 ms for 100 turns of a real history, once
    in each preparation and again in each commit); pickle does the same walk in C. The known map
    comes back as a new map (`KnownMap.__reduce__`), as from deepcopy."""
    return pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
