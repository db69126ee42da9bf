"""Fold one journal operation into the session state.

Every change to a session between publications is an operation: it is appended to the journal first
and then applied here. Replaying the journal after a crash applies the same operations through the
same function, so the state after a reopen equals the state before the crash. The function is pure
bookkeeping: every decision (which before-image, which gap) was made by the caller and is in the op.
"""

from __future__ import annotations

from ..errors import CorruptStore
from ..model.directives import Attempt, Directive
from ..model.gaps import Gap
from ..model.session import AgentTranscript, SessionState
from ..model.steps import Step
from ..model.turns import FileEntry, Turn


def apply(state: SessionState, op: dict) -> None:
    seq = op["seq"]
    if seq <= state.last_op:
        return  # already folded into the published state this journal was replayed onto
    handler = _HANDLERS.get(op["op"])
    if handler is None:
        raise CorruptStore(f"journal operation {op['op']!r} is not known to this version of turnback")
    handler(state, op)
    state.last_op = seq


def _begin(state: SessionState, op: dict) -> None:
    state.turns.append(Turn(
        n=op["n"], kind=op["kind"], prompt=op["prompt"], directive_id=op.get("directiveId"),
        started=op["ts"], instructions=dict(op.get("instructions", {})),
    ))


def _image(state: SessionState, op: dict) -> None:
    """A new image of one path. Inside the running turn it mints or updates the checkpoint entry;
    between turns it is a loose change that the next pre-turn checkpoint will include."""
    rel, after = op["rel"], op["after"]
    mode, before_mode = op.get("mode"), op.get("beforeMode")  # absent in older journals
    turn = state.running
    if turn is not None and op.get("turn") == turn.n:
        entry = turn.files.get(rel)
        if entry is None:
            turn.files[rel] = FileEntry(rel, turn.n, op["ts"], op["before"], after,
                                        before_mode=before_mode, after_mode=mode)
        else:
            entry.after = after
            entry.after_mode = mode
            entry.captures += 1
    else:
        bucket = state.between.setdefault(state.turn_count, {})
        modes = state.between_modes.setdefault(state.turn_count, {})
        if rel in bucket:  # replaced in place: the bucket's length does not say it moved
            state.between_edits[state.turn_count] = state.between_edits.get(state.turn_count, 0) + 1
        else:
            modes[rel] = before_mode
        first_before = bucket[rel][0] if rel in bucket else op["before"]
        bucket[rel] = (first_before, after)
        if op.get("by"):
            state.between_by[(state.turn_count, rel)] = op["by"]
    state.known[rel] = after
    state.known.set_mode(rel, mode)


def _seen(state: SessionState, op: dict) -> None:
    """Images learned without a change (a first sweep, an opened file): they only update what we know."""
    state.known.update(op["images"])
    for rel, mode in op.get("modes", {}).items():
        state.known.set_mode(rel, mode)
    if op.get("covered"):
        state.config["swept"] = True  # a full sweep has covered the workspace (kept across processes)
    if op.get("folders"):
        state.config["folders"] = True  # ... and recorded its folders (model/images.py)


def _gaps(state: SessionState, op: dict) -> None:
    """Gaps found by a capture or a sweep: recorded on the turn they belong to and in the live set."""
    turn = state.turn(op["turn"]) if op.get("turn") else None
    for g in op.get("add", []):
        gap = Gap.from_dict(g)
        if turn is not None:
            turn.add_gap(gap)
        state.live_gaps[(gap.rel, gap.reason)] = gap
    for rel, reason in op.get("clear", []):
        state.live_gaps.pop((rel, reason), None)


def _step(state: SessionState, op: dict) -> None:
    step = Step.from_dict(op["step"])
    _turn(state, step.turn).steps.append(step)


def _respond(state: SessionState, op: dict) -> None:
    turn = _turn(state, op["turn"])
    turn.response = op["text"] if op.get("replace") else turn.response + op["text"]


def _settle(state: SessionState, op: dict) -> None:
    turn = _turn(state, op["turn"])
    turn.state = op["status"]
    turn.ended = op["ts"]


def _reopen(state: SessionState, op: dict) -> None:
    """The last turn goes on after it had ended (an agent's Stop hook said "go on"); the caller
    checked that nothing changed between, so its checkpoints stay what they were."""
    turn = _turn(state, op["turn"])
    turn.state = "running"
    turn.ended = None


def _agent(state: SessionState, op: dict) -> None:
    current = state.agents.get(op["agentId"])
    text = (current.text if current else "") + op["text"]
    state.agents[op["agentId"]] = AgentTranscript(op["agentId"], op["turn"], text, bool(op.get("final")))


def _workflow(state: SessionState, op: dict) -> None:
    for name, items in op["lists"].items():
        state.workflow[name] = list(items)


def _directive(state: SessionState, op: dict) -> None:
    d = Directive.from_dict(op["directive"])
    state.directives[d.id] = d


def _attempt(state: SessionState, op: dict) -> None:
    d = state.directives[op["directiveId"]]
    attempt = next((a for a in d.attempts if a.turn == op["turn"]), None)
    if attempt is None:
        attempt = Attempt(op["turn"], d.request_rev)
        d.attempts.append(attempt)
    for key in ("answer", "feedback", "patch"):
        if op.get(key) is not None:
            setattr(attempt, key, op[key])
    for sub in op.get("consumed", []):
        if sub not in attempt.consumed:
            attempt.consumed.append(sub)
    if op.get("state"):
        d.state = op["state"]


def _directive_state(state: SessionState, op: dict) -> None:
    state.directives[op["directiveId"]].state = op["state"]


def _turn(state: SessionState, n: int) -> Turn:
    turn = state.turn(n)
    if turn is None:
        raise CorruptStore(f"journal names turn {n}, which the session does not have")
    return turn


_HANDLERS = {
    "begin": _begin,
    "image": _image,
    "seen": _seen,
    "gaps": _gaps,
    "step": _step,
    "respond": _respond,
    "settle": _settle,
    "reopen": _reopen,
    "agent": _agent,
    "workflow": _workflow,
    "directive": _directive,
    "attempt": _attempt,
    "attempt-state": _directive_state,
}
