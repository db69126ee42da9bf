"""What the agent record (agents/agentrecord.py, written by agent hooks) tells the workbench and its clients:

* the exact command that resumes the agent's own conversation at a boundary after a rewind, Redo or
  fork (resolved from the transcript now when the Stop could not find the record yet);
* the file rewind offered when the agent rewound its conversation by itself (Claude Code's /rewind);
* whether the running turn is an agent's, and whether that agent is still working on it: a rewind,
  Redo, fork or new turn settles an idle one first (`TurnsFeature.settle_idle_job`) and says so.
"""

from __future__ import annotations

import os
import time

from ..errors import TurnRunning
from ..agents import agenttranscript
from ..agents.agentrecord import (AgentRecord, describe, end_of, holder, sessions_of, turn_key,
                                 waiting_for)

RESUMABLE = ("claude-code",)  # agents with a "resume at this record" switch


def agent_resume(wb, turn_count: int, *, session_id: str | None = None,
                 late: bool = True) -> dict | None:
    """How to resume the Claude Code conversation feeding this session at the end of turn
    `turn_count`: `claude --resume SESSION --resume-session-at UUID`, the UUID being the transcript
    record that ended that turn. None when no Claude Code session feeds this one. `late`: look in the
transcript when the Stop could not find the record (a rewind's result; not `session/info`)."""
    record = AgentRecord(wb.store.path)
    data = record.read()
    state = wb.state
    for s in sessions_of(data, session_id or state.session_id):
        if s.get("agent") not in RESUMABLE or not s.get("sessionId"):
            continue
        sid = s["sessionId"]
        if turn_count == 0:
            return {"agent": "claude-code", "sessionId": sid, "turn": 0, "uuid": None,
                    "command": None, "note": "no turn survives: start a new Claude Code conversation"}
        turn = state.turn(turn_count)
        entry = end_of(s, turn_count, turn.started if turn else None) or {}
        uuid = entry.get("uuid") or (_resolve_late(record, s, turn_count, turn, entry) if late else None)
        if uuid:
            return {"agent": "claude-code", "sessionId": sid, "turn": turn_count, "uuid": uuid,
                    "command": f"claude --resume {sid} --resume-session-at {uuid}"}
        return {"agent": "claude-code", "sessionId": sid, "turn": turn_count, "uuid": None,
                "command": None,
                "note": f"the transcript record ending turn {turn_count} is not in "
                        f"{s.get('transcript') or 'the transcript'} (yet): resume with "
                        f"`claude --resume {sid}` and tell it where to go on from"}
    return None


def _resolve_late(record: AgentRecord, s: dict, n: int, turn, entry: dict) -> str | None:
    """The Stop did not find the turn's last record in the transcript (not written yet): look now in
    its last MiB (this runs on the server's loop, so the read is bounded: about 10 ms; the hooks
    look further back, off the loop, at the agent's next prompt or session start), and keep what
    was found (best effort: a hook at work right now keeps the record; the next rewind looks
    again)."""
    if turn is None or not (entry.get("promptId") or entry.get("promptUuid")):
        return None
    _prompt, end = agenttranscript.resolve(
        s.get("transcript"), prompt_id=entry.get("promptId"), prompt_uuid=entry.get("promptUuid"),
        answer=entry.get("answer"), whole=False)
    if end is None or not end.get("uuid"):
        return None
    try:
        with record.try_locked() as data:
            if data is not None:
                mine = data["sessions"].get(f"{s.get('agent')}:{s.get('sessionId')}")
                ends = (mine or {}).get("ends") or {}
                key = turn_key(n, turn.started)
                if key in ends:
                    ends[key].update(uuid=end["uuid"], pending=False)
    except OSError:
        pass
    return end["uuid"]


def agent_info(wb) -> dict | None:
    """For `turnback/session/info`: the agent sessions feeding this session, the resume command at
    its current end, a pending offer to rewind files after the agent's own /rewind, and the running
    turn (whose it is, what its agent is still doing)."""
    data = AgentRecord(wb.store.path).read()
    state = wb.state
    sessions = sessions_of(data, state.session_id)
    running = state.running
    run = None
    if running is not None:
        run = {"turn": running.n, "started": running.started, "kind": running.kind,
               "directiveId": running.directive_id, "agent": None}
        h = holder(data, state.session_id, running.n)
        if h is not None:
            s = h[1]
            run["agent"] = {"agent": s.get("agent"), "sessionId": s.get("sessionId"),
                            "waitingFor": waiting_for(s, transcript_mtime=_mtime(s.get("transcript"))),
                            "stopped": bool(s.get("stopped")), "lastEvent": s.get("active")}
    if not sessions and run is None:
        return None
    offer = next((s["offer"] for s in sessions if s.get("offer")), None)
    return {"sessions": [{"agent": s.get("agent"), "sessionId": s.get("sessionId"),
                          "turn": s.get("turn"), "noticePending": bool(s.get("notice"))}
                         for s in sessions],
            "resume": agent_resume(wb, state.settled_turn_count, late=False) if sessions else None,
            "offer": offer, "running": run}


def _mtime(path: str | None) -> float | None:
    try:
        return os.stat(path).st_mtime if path else None
    except OSError:
        return None


def idle_holder(wb, record: AgentRecord, data: dict, n: int) -> tuple[str, dict] | None:
    """The agent session whose turn `n` is, when that agent is no longer working on it; raises
    `turn-running` naming what it waits for when it is. None when no agent hook began the turn."""
    h = holder(data, wb.state.session_id, n)
    if h is None:
        return None
    key, s = h
    now = time.time()
    waiting = waiting_for(s, now, transcript_mtime=_mtime(s.get("transcript")))
    if waiting:
        raise TurnRunning(
            f"turn {n} is still running: {s.get('agent')} session {s.get('sessionId')} is still "
            f"working on it (waiting for {describe(waiting, now)}); let it finish, or settle or "
            "cancel the turn yourself (`turnback turn settle [--cancelled]`)",
            data={"turn": n, "agent": s.get("agent"), "agentSessionId": s.get("sessionId"),
                  "waitingFor": waiting})
    return key, s


def busy(wb, n: int) -> TurnRunning:
    """The refusal when an agent hook holds the record this instant."""
    return TurnRunning(f"turn {n} is still running and an agent hook is being recorded right now; "
                       "try again in a moment", data={"turn": n, "waitingFor": [{"what": "hook"}]})


def settled_words(report: dict) -> str:
    silent = report.get("silentSeconds")
    how = "settled" if report["status"] == "settled" else "closed as cancelled"
    return (f"Turn {report['turn']} was still open ({report.get('agent')} session "
            f"{report.get('agentSessionId')} sent nothing for {_ago(silent)}, {report['why']}): it was "
            f"{how} first, with its sweep.")


def _ago(seconds) -> str:
    if not isinstance(seconds, (int, float)):
        return "a while"
    seconds = int(seconds)
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min"


def annotate(result: dict, settled: dict | None, *, summary_key: str = "summary") -> dict:
    """A confirmation says when it settled an idle agent turn first: the field, and the words first in
    its summary (what the editors show)."""
    if settled and isinstance(result, dict):
        result["settledFirst"] = settled
        words = settled.get("text") or settled_words(settled)
        result[summary_key] = (words + " " + (result.get(summary_key) or "")).strip()
    return result


def follow_fork(wb, parent_id: str, branch_id: str, fork_turn: int) -> None:
    """After a fork in place, the agent sessions that fed the parent feed the branch: the agent's next
    prompt lands there (and hears of the fork). Best effort: a hook at work right now finds the
    branch by itself, from its lineage."""
    record = AgentRecord(wb.store.path)
    try:
        with record.try_locked() as data:
            if data is None:
                return
            for s in data["sessions"].values():
                if isinstance(s, dict) and s.get("turnback") == parent_id:
                    s["turnback"] = branch_id
                    s["forked"] = {"from": parent_id, "turn": fork_turn, "at": time.time()}
    except OSError:
        pass


def follow_settled(wb) -> None:
    """Agent sessions the record says are in a turn of this session that no longer runs (the settle
    went through, the record's write did not): the record follows. Best effort, never waits."""
    record = AgentRecord(wb.store.path)
    sid, running = wb.state.session_id, wb.state.running
    live = running.n if running is not None else None

    def stale(s) -> bool:
        return isinstance(s, dict) and s.get("turnback") == sid and s.get("turn") not in (None, live)

    if not any(stale(s) for s in record.read().get("sessions", {}).values()):
        return
    try:
        with record.try_locked() as data:
            for s in (data or {}).get("sessions", {}).values():
                if stale(s):
                    s.update(turn=None, stopped=None, pending={}, interrupted=False,
                             last={"n": s["turn"], "key": s.get("turnKey"),
                                   "promptId": s.get("promptId"), "how": "elsewhere",
                                   "at": time.time()})
    except OSError:
        pass

