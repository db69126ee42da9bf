"""What the agent record (store/agentrecord.py, written by agent hooks) tells clients about a session:
the exact command that resumes the agent's own conversation at the session's boundary after a rewind,
and the file rewind offered when the agent rewound its conversation by itself (Claude Code's /rewind).
"""

from __future__ import annotations

from ..store.agentrecord import AgentRecord, sessions_of


def agent_resume(wb, turn_count: int) -> dict | None:
    """How to resume the Claude Code conversation feeding this session at the end of turn
    `turn_count`: `claude --resume SESSION --resume-session-at UUID`, the UUID being the transcript
    record that ended that turn. None when no Claude Code session feeds this one."""
    data = AgentRecord(wb.store.path).read()
    for s in sessions_of(data, wb.state.session_id):
        if s.get("agent") != "claude-code" or not s.get("sessionId"):
            continue
        sid = s["sessionId"]
        if turn_count == 0:
            return {"agent": "claude-code", "sessionId": sid, "turn": 0, "uuid": None,
                    "command": None, "note": "no turn survives: start a new Claude Code conversation"}
        uuid = (s.get("turns") or {}).get(str(turn_count), {}).get("uuid")
        if uuid:
            return {"agent": "claude-code", "sessionId": sid, "turn": turn_count, "uuid": uuid,
                    "command": f"claude --resume {sid} --resume-session-at {uuid}"}
        return {"agent": "claude-code", "sessionId": sid, "turn": turn_count, "uuid": None,
                "command": None, "note": f"the transcript point ending turn {turn_count} is not known"}
    return None


def agent_info(wb) -> dict | None:
    """For `turnback/session/info`: the agent sessions feeding this session, the resume command at
    its current end, and a pending offer to rewind files after the agent's own /rewind."""
    data = AgentRecord(wb.store.path).read()
    sessions = sessions_of(data, wb.state.session_id)
    if not sessions:
        return None
    offer = next((s["offer"] for s in sessions if s.get("offer")), None)
    return {"sessions": [{"agent": s.get("agent"), "sessionId": s.get("sessionId"),
                          "turn": s.get("turn")} for s in sessions],
            "resume": agent_resume(wb, wb.state.settled_turn_count),
            "offer": offer}
