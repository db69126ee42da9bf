"""One agent hook event, the same for every agent once its adapter has read the payload.

Kinds: `session-start`, `prompt`, `pre-tool`, `post-tool`, `tool-failed`, `stop`, `stop-failed` (the
turn ended on an API error), `interrupt` (the person stopped the turn), `subagent-start`,
`subagent-stop`, `answer` (assistant text before the stop: Cursor's afterAgentResponse),
`file-edited` (a file the agent says it edited, with no tool call around it: Cursor's afterFileEdit),
`session-end`, and `other` (an event turnback has no use for: logged, nothing else).
"""

from __future__ import annotations

import json

KINDS = ("session-start", "prompt", "pre-tool", "post-tool", "tool-failed", "file-edited", "stop",
         "stop-failed", "interrupt", "subagent-start", "subagent-stop", "answer", "session-end", "other")


class BadPayload(ValueError):
    """A payload turnback cannot use; the message is the line that goes to the hook log."""


class Event:
    """A plain class, not a dataclass: a hook's fast path does not import dataclasses (inspect)."""

    agent: str
    kind: str
    name: str  # the agent's own event name, for the log
    session: str  # the agent's session id (or a stand-in, see the adapter)
    cwd: str
    _DEFAULTS = {
        "transcript": None, "prompt": None, "tool": None, "tool_id": None, "tool_response": None,
        "message": None,  # the assistant's last text (stop)
        "source": None,  # session start: startup, resume, clear, compact, fork; prompt: who sent it
        "agent_id": None, "agent_type": None, "agent_transcript": None,  # a helper agent (subagent)
        "error": None,
        # The prompt this event belongs to: Claude Code's `prompt_id`, Codex's `turn_id`, Cursor's
        # `generation_id`. Every event until the next prompt carries the same one.
        "prompt_id": None,
        "stop_active": False,  # a Stop after another Stop hook said "go on" (the same turn goes on)
        "background": None,  # Stop: the background work still in flight [{id, type, status, ...}]
        "changed": None,  # the files a shell command changed, when the agent says (bashEditDiff)
        "identity": None,  # what makes this one event (for two copies through two hook files)
        "status": None,  # how the turn ended when the agent says: completed, aborted, error
        "process": None,  # the agent's process {pid, start} (agents/agentrecord.agent_process)
        "permission_mode": None,  # Claude Code: default, plan, acceptEdits, auto, dontAsk, bypassPermissions
    }

    def __init__(self, agent: str, kind: str, name: str, session: str, cwd: str, **fields):
        self.agent, self.kind, self.name, self.session, self.cwd = agent, kind, name, session, cwd
        for key, default in self._DEFAULTS.items():
            setattr(self, key, fields.pop(key, default))
        self.tool_input: dict = fields.pop("tool_input", None) or {}
        if fields:
            raise TypeError(f"unknown Event fields: {sorted(fields)}")

    @property
    def is_tool(self) -> bool:
        return self.kind in ("pre-tool", "post-tool", "tool-failed")

    def tool_key(self) -> str:
        """The id pairing a tool's before and after events: the agent's own id, or (for agents that
        send none) a digest of the tool name and its input, which both events carry unchanged."""
        if self.tool_id:
            return str(self.tool_id)
        import hashlib

        canon = json.dumps([self.tool, self.tool_input], sort_keys=True, default=str)
        return "h:" + hashlib.sha256(canon.encode()).hexdigest()[:16]


def pick(raw: dict, *names, kind=str, default=None):
    """The first of `names` present in the payload with the right type (agents differ in spelling:
    snake_case from the CLIs, camelCase from VS Code)."""
    for name in names:
        value = raw.get(name)
        if isinstance(value, kind) and not (kind is str and value == ""):
            return value
    return default


def as_object(value) -> dict:
    """Tool input as an object: some agents send it as a JSON string."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"_raw": value}
        return parsed if isinstance(parsed, dict) else {"_raw": value}
    return {}


def require(raw, agent: str) -> dict:
    if not isinstance(raw, dict):
        raise BadPayload(f"{agent}: the payload is {type(raw).__name__}, not a JSON object")
    return raw


# Fields that tell one event from another of the same kind: with none of them in a payload, two
# identical payloads may be two real events (the same command run twice), so they are not merged.
DISTINCT_FIELDS = ("tool_use_id", "toolUseId", "tool_call_id", "toolCallId", "prompt_id", "promptId",
                   "turn_id", "generation_id", "timestamp", "ts", "eventId", "event_id")
NAME_FIELDS = ("hook_event_name", "hookEventName", "event")


def identity(raw: dict, kind: str, session: str) -> str | None:
    """What makes a payload one event, whichever hook file delivered it (VS Code runs the hooks of
    `.claude/settings.json` and of `.github/hooks/*.json` for the same event): a digest of the
    payload without its event-name spelling. None when the payload has nothing that tells two
    events apart."""
    if not any(raw.get(f) not in (None, "") for f in DISTINCT_FIELDS):
        return None
    import hashlib

    body = {k: v for k, v in raw.items() if k not in NAME_FIELDS}
    canon = json.dumps([kind, session, body], sort_keys=True, default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:24]
