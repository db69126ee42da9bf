"""One adapter per agent: its payload (JSON from standard input) as an `Event`.

Shapes are the agents' documented ones (docs/agents/ has a page per agent with the fields used):

* Claude Code: `hook_event_name`, `session_id`, `transcript_path`, `cwd`; `prompt`; `tool_name`,
  `tool_input`, `tool_use_id`, `tool_response`; `last_assistant_message`; `source`; `agent_id`,
  `agent_transcript_path`. VS Code's agent mode runs the same hooks with camelCase names
  (`hookEventName`, `sessionId`, `toolName`, `toolInput`, `filePath`).
* Codex: the same names and events as Claude Code (`.codex/hooks.json`).
* Gemini CLI: `BeforeAgent`/`AfterAgent` bracket a turn (`prompt`, `prompt_response`),
  `BeforeTool`/`AfterTool` carry `tool_name`, `tool_input`, `tool_response`; `SessionStart` has
  `source` (some versions say `trigger`).
* Copilot CLI: `sessionStart`, `userPromptSubmitted`, `preToolUse`, `postToolUse`, `agentStop`,
  `subagentStop`, `sessionEnd`, with `toolName` and `toolArgs` (a JSON string) and `toolResult`.
  Its payloads carry no session id in older versions: the working folder stands in for it.
"""

from __future__ import annotations

from .event import BadPayload, Event, as_object, pick, require

CLAUDE_KINDS = {
    "SessionStart": "session-start", "UserPromptSubmit": "prompt", "PreToolUse": "pre-tool",
    "PostToolUse": "post-tool", "PostToolUseFailure": "tool-failed", "Stop": "stop",
    "SubagentStop": "subagent-stop", "SessionEnd": "session-end",
}
GEMINI_KINDS = {
    "SessionStart": "session-start", "BeforeAgent": "prompt", "BeforeTool": "pre-tool",
    "AfterTool": "post-tool", "AfterAgent": "stop", "SessionEnd": "session-end",
}
COPILOT_KINDS = {
    "sessionStart": "session-start", "userPromptSubmitted": "prompt", "preToolUse": "pre-tool",
    "postToolUse": "post-tool", "postToolUseFailure": "tool-failed", "agentStop": "stop",
    "subagentStop": "subagent-stop", "sessionEnd": "session-end",
}


def _common(raw: dict, agent: str, kinds: dict, name: str | None) -> Event:
    if name is None:
        raise BadPayload(f"{agent}: the payload names no hook event (hook_event_name)")
    cwd = pick(raw, "cwd", "workspaceFolder")
    if cwd is None:
        raise BadPayload(f"{agent}: {name} payload has no cwd")
    session = pick(raw, "session_id", "sessionId")
    if session is None:
        raise BadPayload(f"{agent}: {name} payload has no session_id")
    return Event(agent=agent, kind=kinds.get(name, "other"), name=name, session=session, cwd=cwd,
                 transcript=pick(raw, "transcript_path", "transcriptPath"))


def claude_code(raw) -> Event:
    raw = require(raw, "claude-code")
    name = pick(raw, "hook_event_name", "hookEventName")
    ev = _common(raw, "claude-code", CLAUDE_KINDS, name)
    _tool_fields(ev, raw)
    ev.prompt = pick(raw, "prompt")
    ev.message = pick(raw, "last_assistant_message", "lastAssistantMessage")
    ev.source = pick(raw, "source")
    ev.agent_id = pick(raw, "agent_id", "agentId")
    ev.agent_transcript = pick(raw, "agent_transcript_path", "agentTranscriptPath")
    ev.error = pick(raw, "error")
    ev.permission_mode = pick(raw, "permission_mode", "permissionMode")
    return ev


def codex(raw) -> Event:
    ev = claude_code(raw)
    ev.agent = "codex"
    return ev


def gemini(raw) -> Event:
    raw = require(raw, "gemini")
    name = pick(raw, "hook_event_name", "hookEventName")
    ev = _common(raw, "gemini", GEMINI_KINDS, name)
    _tool_fields(ev, raw)
    ev.prompt = pick(raw, "prompt")
    ev.message = pick(raw, "prompt_response", "promptResponse")
    ev.source = pick(raw, "source", "trigger")
    response = ev.tool_response
    if ev.kind == "post-tool" and isinstance(response, dict) and response.get("error"):
        ev.kind, ev.error = "tool-failed", str(response.get("error"))
    return ev


def copilot(raw) -> Event:
    raw = require(raw, "copilot")
    name = pick(raw, "hook_event_name", "hookEventName", "event")
    if name is None:
        raise BadPayload("copilot: the payload names no hook event (the installed hook command "
                         "passes it: `turnback hook copilot --event preToolUse`)")
    cwd = pick(raw, "cwd")
    if cwd is None:
        raise BadPayload(f"copilot: {name} payload has no cwd")
    session = pick(raw, "sessionId", "session_id") or f"cwd:{cwd}"
    ev = Event(agent="copilot", kind=COPILOT_KINDS.get(name, "other"), name=name, session=session,
               cwd=cwd, transcript=pick(raw, "transcriptPath", "transcript_path"))
    ev.tool = pick(raw, "toolName", "tool_name")
    ev.tool_input = as_object(raw.get("toolArgs", raw.get("tool_input")))
    ev.tool_id = pick(raw, "toolCallId", "tool_use_id")
    result = raw.get("toolResult")
    ev.tool_response = result
    if ev.kind == "post-tool" and isinstance(result, dict) \
            and result.get("resultType") in ("failure", "denied"):
        ev.kind = "tool-failed"
        ev.error = pick(result, "textResultForLlm", "resultType")
    ev.prompt = pick(raw, "prompt", "initialPrompt")
    ev.source = {"new": "startup"}.get(pick(raw, "source"), pick(raw, "source"))
    ev.message = pick(raw, "lastAssistantMessage", "response")
    ev.agent_id = pick(raw, "agentId", "subagentId")
    return ev


def _tool_fields(ev: Event, raw: dict) -> None:
    ev.tool = pick(raw, "tool_name", "toolName")
    ev.tool_input = as_object(raw.get("tool_input", raw.get("toolInput")))
    ev.tool_id = pick(raw, "tool_use_id", "toolUseId", "tool_call_id", "toolCallId")
    ev.tool_response = raw.get("tool_response", raw.get("toolResponse"))


ADAPTERS = {"claude-code": claude_code, "codex": codex, "gemini": gemini, "copilot": copilot}
AGENTS = tuple(ADAPTERS)
