"""One adapter per agent: its payload (JSON from standard input) as an `Event`, and what it prints back.

Shapes are the agents' documented ones (docs/agents/ has a page per agent with the fields used):

* Claude Code: `hook_event_name`, `session_id`, `transcript_path`, `cwd`, `prompt_id`; `prompt`;
  `tool_name`, `tool_input`, `tool_use_id`, `tool_response` (Bash's `bashEditDiff.changedFiles`);
  `error`, `is_interrupt`; `stop_hook_active`, `last_assistant_message`, `background_tasks`;
  `source`; `agent_id`, `agent_type`, `agent_transcript_path`. VS Code's agent mode runs the same
  hooks with camelCase names (`hookEventName`, `sessionId`, `toolName`, `toolInput`, `filePath`).
* Codex: the same names and events as Claude Code, with `turn_id` for the prompt, `Interrupt`, and a
  `tool_response` that is often a string.
* Gemini CLI: `BeforeAgent`/`AfterAgent` bracket a turn (`prompt`, `prompt_response`),
  `BeforeTool`/`AfterTool` carry `tool_name`, `tool_input`, `tool_response`; `SessionStart` has
  `source` (some versions say `trigger`).
* Copilot CLI: `sessionStart`, `userPromptSubmitted`, `preToolUse`, `postToolUse`,
  `postToolUseFailure` (`error`), `agentStop`, `subagentStop`, `sessionEnd`, with `toolName` and
  `toolArgs` (a JSON string; an object in 1.0.102) and `toolResult`; `sessionId` in newer versions,
  else the working folder stands in for it.
* Cursor (`.cursor/hooks.json` version 1): `conversation_id`, `generation_id`, `workspace_roots`;
  `beforeSubmitPrompt`, `preToolUse`/`postToolUse`/`postToolUseFailure`,
  `beforeShellExecution`/`afterShellExecution`, `beforeMCPExecution`/`afterMCPExecution`,
  `afterFileEdit`, `afterAgentResponse`, `stop` (`status`), `sessionStart`/`sessionEnd`.
"""

from __future__ import annotations

from .event import BadPayload, Event, as_object, identity, pick, require

CLAUDE_KINDS = {
    "SessionStart": "session-start", "UserPromptSubmit": "prompt", "PreToolUse": "pre-tool",
    "PostToolUse": "post-tool", "PostToolUseFailure": "tool-failed", "Stop": "stop",
    "StopFailure": "stop-failed", "SubagentStart": "subagent-start", "SubagentStop": "subagent-stop",
    "SessionEnd": "session-end", "Interrupt": "interrupt",
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
CURSOR_KINDS = {
    "sessionStart": "session-start", "beforeSubmitPrompt": "prompt", "preToolUse": "pre-tool",
    "postToolUse": "post-tool", "postToolUseFailure": "tool-failed",
    "beforeShellExecution": "pre-tool", "afterShellExecution": "post-tool",
    "beforeMCPExecution": "pre-tool", "afterMCPExecution": "post-tool",
    "afterFileEdit": "file-edited", "afterAgentResponse": "answer", "stop": "stop",
    "subagentStart": "subagent-start", "subagentStop": "subagent-stop", "sessionEnd": "session-end",
}
FINISHED = ("completed", "done", "failed", "error", "killed", "stopped", "cancelled", "canceled")


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


def _finish(ev: Event, raw: dict) -> Event:
    ev.identity = identity(raw, ev.kind, ev.session)
    return ev


def claude_code(raw) -> Event:
    raw = require(raw, "claude-code")
    name = pick(raw, "hook_event_name", "hookEventName")
    ev = _common(raw, "claude-code", CLAUDE_KINDS, name)
    _tool_fields(ev, raw)
    ev.prompt = pick(raw, "prompt")
    ev.prompt_id = pick(raw, "prompt_id", "promptId")
    ev.message = pick(raw, "last_assistant_message", "lastAssistantMessage")
    ev.source = pick(raw, "source")
    ev.agent_id = pick(raw, "agent_id", "agentId")
    ev.agent_type = pick(raw, "agent_type", "agentType")
    ev.agent_transcript = pick(raw, "agent_transcript_path", "agentTranscriptPath")
    ev.stop_active = raw.get("stop_hook_active", raw.get("stopHookActive")) is True
    ev.background = _background(raw.get("background_tasks", raw.get("backgroundTasks")))
    error = raw.get("error")
    if ev.kind == "stop-failed":
        detail = pick(raw, "error_details", "error_message")
        ev.error = f"{error or 'unknown'}" + (f": {detail}" if detail else "")
    else:
        ev.error = error if isinstance(error, str) else (str(error) if error else None)
    if ev.kind == "tool-failed" and raw.get("is_interrupt") is True:
        ev.status = "interrupted"
    ev.changed = _changed_files(ev.tool_response)
    ev.permission_mode = pick(raw, "permission_mode", "permissionMode")  # hooks/guard.py
    return _finish(ev, raw)


def codex(raw) -> Event:
    ev = claude_code(raw)
    ev.agent = "codex"
    ev.prompt_id = ev.prompt_id or pick(raw, "turn_id", "turnId")
    return _finish(ev, raw)


OPENCODE_KINDS = {**CLAUDE_KINDS, "FileEdited": "file-edited", "MessageRemoved": "other"}


def opencode(raw) -> Event:
    """The payloads turnback's own OpenCode plugin sends (hooks/opencodeplugin.py): Claude Code's
    field names, plus `FileEdited` (OpenCode's file.edited, on the session that ran last) and `MessageRemoved`
    (OpenCode reverted or deleted a message)."""
    raw = require(raw, "opencode")
    name = pick(raw, "hook_event_name")
    ev = _common(raw, "opencode", OPENCODE_KINDS, name)
    _tool_fields(ev, raw)
    if ev.kind == "file-edited":
        ev.tool, ev.tool_input = "file.edited", {"file_path": pick(raw, "file_path", default="")}
    ev.prompt = pick(raw, "prompt")
    ev.prompt_id = pick(raw, "prompt_id")
    ev.message = pick(raw, "last_assistant_message")
    ev.source = pick(raw, "source")
    if ev.kind == "stop-failed":
        detail = pick(raw, "error_details")
        ev.error = f"{pick(raw, 'error', default='error')}" + (f": {detail}" if detail else "")
    return _finish(ev, raw)


def gemini(raw) -> Event:
    raw = require(raw, "gemini")
    name = pick(raw, "hook_event_name", "hookEventName")
    ev = _common(raw, "gemini", GEMINI_KINDS, name)
    _tool_fields(ev, raw)
    ev.prompt = _without_hook_context(pick(raw, "prompt"))
    message = pick(raw, "prompt_response", "promptResponse")
    # the texts of each model reply of the turn joined by newlines: a reply that only called tools
    # leaves an empty line in front (measured with Gemini CLI 0.61)
    ev.message = message.strip() if isinstance(message, str) else message
    ev.source = pick(raw, "source", "trigger")
    response = ev.tool_response
    if ev.kind == "post-tool" and isinstance(response, dict) and response.get("error"):
        ev.kind, ev.error = "tool-failed", str(response.get("error"))
    return _finish(ev, raw)


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
    # VS Code runs Copilot-format hook files with its own (Claude Code's) event names
    kind = COPILOT_KINDS.get(name) or CLAUDE_KINDS.get(name) or "other"
    ev = Event(agent="copilot", kind=kind, name=name, session=session,
               cwd=cwd, transcript=pick(raw, "transcriptPath", "transcript_path"))
    ev.tool = pick(raw, "toolName", "tool_name")
    ev.tool_input = as_object(raw.get("toolArgs", raw.get("toolInput", raw.get("tool_input"))))
    ev.tool_id = pick(raw, "toolCallId", "toolUseId", "tool_use_id")
    result = raw.get("toolResult", raw.get("tool_response"))
    ev.tool_response = result
    if ev.kind == "post-tool" and isinstance(result, dict) \
            and result.get("resultType") in ("failure", "denied"):
        ev.kind = "tool-failed"
        ev.error = pick(result, "textResultForLlm", "resultType")
    if ev.kind == "tool-failed" and ev.error is None:
        ev.error = _error_text(raw.get("error"))
    ev.prompt = pick(raw, "prompt", "initialPrompt")
    ev.source = {"new": "startup"}.get(pick(raw, "source"), pick(raw, "source"))
    ev.message = pick(raw, "lastAssistantMessage", "response")
    ev.agent_id = pick(raw, "agentId", "subagentId")
    return _finish(ev, raw)


def cursor(raw) -> Event:
    raw = require(raw, "cursor")
    name = pick(raw, "hook_event_name", "hookEventName")
    if name is None:
        raise BadPayload("cursor: the payload names no hook event (hook_event_name)")
    roots = raw.get("workspace_roots")
    root = next((r for r in roots if isinstance(r, str) and r), None) if isinstance(roots, list) else None
    cwd = pick(raw, "cwd") or root
    if cwd is None:
        raise BadPayload(f"cursor: {name} payload has neither workspace_roots nor cwd")
    session = pick(raw, "conversation_id", "session_id")
    if session is None:
        raise BadPayload(f"cursor: {name} payload has no conversation_id")
    ev = Event(agent="cursor", kind=CURSOR_KINDS.get(name, "other"), name=name, session=session,
               cwd=cwd, transcript=pick(raw, "transcript_path"))
    ev.prompt_id = pick(raw, "generation_id")
    ev.prompt = pick(raw, "prompt")
    if name in ("beforeShellExecution", "afterShellExecution"):
        ev.tool, ev.tool_input = "Shell", {"command": pick(raw, "command", default="")}
        ev.tool_response = raw.get("output")
    elif name in ("beforeMCPExecution", "afterMCPExecution"):
        ev.tool = f"MCP:{pick(raw, 'tool_name', default='?')}"
        ev.tool_input = as_object(raw.get("tool_input"))
        ev.tool_response = raw.get("result_json")
    elif name == "afterFileEdit":
        ev.tool, ev.tool_input = "afterFileEdit", {"file_path": pick(raw, "file_path", default="")}
    else:
        ev.tool = pick(raw, "tool_name")
        ev.tool_input = as_object(raw.get("tool_input"))
        ev.tool_id = pick(raw, "tool_use_id")
        ev.tool_response = raw.get("tool_output", raw.get("result_json"))
    if ev.tool == "Shell":
        # preToolUse(Shell) and beforeShellExecution are one command, both sent: one key pairs them
        ev.tool_id = None
        ev.tool_input = {"command": ev.tool_input.get("command") or ""}
    if ev.kind == "tool-failed":
        ev.error = pick(raw, "error_message", "failure_type") or "failed"
        if raw.get("is_interrupt") is True:
            ev.status = "interrupted"
    if name == "afterAgentResponse":
        ev.message = pick(raw, "text")
    if ev.kind == "stop":
        ev.status = pick(raw, "status", default="completed")
        if ev.status == "aborted":
            ev.kind = "interrupt"
        elif ev.status == "error":
            ev.kind, ev.error = "stop-failed", pick(raw, "error_message", default="error")
    ev.agent_id = pick(raw, "subagent_id", "agent_id")
    ev.agent_type = pick(raw, "subagent_type")
    ev.source = pick(raw, "source")
    return _finish(ev, raw)


def _without_hook_context(prompt):
    """The prompt the person typed. Headless Gemini CLI puts a SessionStart hook's context in
    front of the prompt itself (`<hook_context>…</hook_context>` and a blank line), and its
    BeforeAgent hook then sees that as the prompt: turnback's own notice is not part of the turn."""
    if not isinstance(prompt, str):
        return prompt
    rest = prompt
    while rest.startswith("<hook_context>") and "</hook_context>" in rest:
        rest = rest.split("</hook_context>", 1)[1].lstrip("\n")
    return rest if rest != prompt and rest else prompt


def _tool_fields(ev: Event, raw: dict) -> None:
    ev.tool = pick(raw, "tool_name", "toolName")
    ev.tool_input = as_object(raw.get("tool_input", raw.get("toolInput")))
    ev.tool_id = pick(raw, "tool_use_id", "toolUseId", "tool_call_id", "toolCallId")
    ev.tool_response = raw.get("tool_response", raw.get("toolResponse"))


def _error_text(error) -> str | None:
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        return pick(error, "message", "name") or None
    return None


def _background(value) -> list[dict] | None:
    """The background work a Stop says is still in flight (finished entries dropped)."""
    if not isinstance(value, list):
        return None
    out = []
    for task in value:
        if isinstance(task, dict) and str(task.get("status", "")).lower() not in FINISHED:
            out.append({k: task.get(k) for k in ("id", "type", "status", "description", "command",
                                                 "agent_type") if task.get(k) is not None})
    return out


def _changed_files(response) -> list[str] | None:
    """Claude Code's Bash result names the files the command changed (`bashEditDiff`)."""
    if not isinstance(response, dict):
        return None
    diff = response.get("bashEditDiff")
    if not isinstance(diff, dict):
        return None
    files = diff.get("changedFiles")
    if not isinstance(files, list):
        files = [f.get("filePath") for f in diff.get("files") or [] if isinstance(f, dict)]
    return [f for f in files if isinstance(f, str) and f] or None


ADAPTERS = {"claude-code": claude_code, "codex": codex, "gemini": gemini, "copilot": copilot,
            "cursor": cursor, "opencode": opencode}
AGENTS = tuple(ADAPTERS)

# Where the model reads what a hook prints as additional context. A notice printed on one of
# `DELIVERS` counts as told; one printed on another context event only may be (Claude Code drops
# SessionStart context on `--resume-session-at`), so it is said again with the next prompt.
CONTEXT = {"claude-code": ("prompt", "session-start"), "codex": ("prompt", "session-start"),
           "gemini": ("prompt", "session-start"), "copilot": ("prompt",), "cursor": (),
           "opencode": ("prompt",)}  # the plugin adds it to the prompt's message
DELIVERS = {"claude-code": ("prompt",), "codex": ("prompt", "session-start"),
            "gemini": ("prompt", "session-start"), "copilot": ("prompt",), "cursor": (),
            "opencode": ("prompt",)}
MESSAGES = ("claude-code", "codex", "gemini")  # agents that show a hook's systemMessage


def output(ev: Event, context: str | None, message: str | None) -> dict | None:
    """What the hook prints for the agent, in its own shape; None when there is nothing to say."""
    out: dict = {}
    if context and ev.kind in CONTEXT.get(ev.agent, ()):
        out["hookSpecificOutput"] = {"hookEventName": ev.name, "additionalContext": context}
        if ev.agent == "copilot":  # Copilot CLI reads only the top-level field (1.0.102, measured)
            out["additionalContext"] = context
    if message and ev.agent in MESSAGES:
        out["systemMessage"] = message
    return out or None
