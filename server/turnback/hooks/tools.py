"""What an agent's tool call is to turnback: which files it writes, its step kind, and its scope.

One table per agent (`TOOLS`), every tool its documentation names; docs/agents/AGENT.md shows the
same table and tests/hooks/test_tool_tables.py checks that each row maps as it says. Groups:

* `file`: the target paths are captured before and after; `host`, with a restore inverse;
* `shell`: the scope comes from the shell scope table (`config.py`, `unknown` when unmatched); what it
  changed is captured by the turn's sweeps, and at once when the agent names the files (Claude
  Code's `bashEditDiff.changedFiles`);
* `read`, `web`: read-only (`read`, `network-fetch`), scope `none`;
* `helper`: starts or talks to a helper agent, whose own tool calls are hooked as their own steps:
  `other`, `none`;
* `plan`: a todo list, a plan, a question to the person: `think`, `none`;
* `host`: changes this machine in a way no file restore takes back (a process stopped, a worktree
  made, a wake-up scheduled): `other`, `host`;
* `send`: sends something off the machine (a notification, a published page): `network-send`,
  `crossing`;
* MCP tools and anything not in the table: `other`, `unknown` (counts as crossing).
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple


class Spec(NamedTuple):
    group: str
    fields: tuple = ()  # file tools: the input fields naming the target; shell: the command's field
    kind: str | None = None  # a file tool's own step kind (default file-write)


def _file(*fields: str, kind: str = "file-write") -> Spec:
    return Spec("file", fields, kind)


def _shell(field: str | None = "command") -> Spec:
    return Spec("shell", (field,) if field else ())


READ, WEB, HELPER, PLAN, HOST, SEND, UNKNOWN = (Spec("read"), Spec("web"), Spec("helper"), Spec("plan"),
                                                 Spec("host"), Spec("send"), Spec("other"))
PATCH = Spec("patch")
MULTI = Spec("multi", ("replacements", "filePath", "file_path"))
MONITOR = Spec("monitor", ("command",))

GROUPS = {  # group -> (step kind, scope); None: from the scope table (shell)
    "file": ("file-write", "host"), "patch": ("file-write", "host"), "multi": ("file-write", "host"),
    "shell": ("shell", None), "read": ("read", "none"), "web": ("network-fetch", "none"),
    "helper": ("other", "none"), "plan": ("think", "none"), "host": ("other", "host"),
    "send": ("network-send", "crossing"), "other": ("other", "unknown"), "mcp": ("other", "unknown"),
}

# VS Code's agent mode runs Claude Code's hooks with its own tool names.
VSCODE = {
    "create_file": _file("filePath", "file_path"), "replace_string_in_file": _file("filePath", "file_path"),
    "insert_edit_into_file": _file("filePath", "file_path"), "edit_notebook_file": _file("filePath"),
    "multi_replace_string_in_file": MULTI, "run_in_terminal": _shell(),
    "get_terminal_output": READ, "read_file": READ, "list_dir": READ, "file_search": READ,
    "grep_search": READ, "semantic_search": READ, "get_errors": READ, "fetch_webpage": WEB,
    "manage_todo_list": PLAN, "runSubagent": HELPER,
}
CLAUDE = {
    "Write": _file("file_path"), "Edit": _file("file_path"), "MultiEdit": _file("file_path"),
    "NotebookEdit": _file("notebook_path"),
    "Bash": _shell(), "PowerShell": _shell(), "Monitor": MONITOR,
    "Read": READ, "Glob": READ, "Grep": READ, "LS": READ, "NotebookRead": READ, "LSP": READ,
    "ToolSearch": READ, "Skill": READ, "BashOutput": READ, "TaskOutput": READ,
    "ReadNotifications": READ,
    "WebFetch": WEB, "WebSearch": WEB,
    "Agent": HELPER, "Task": HELPER, "Workflow": HELPER, "SendMessage": HELPER, "TeamCreate": HELPER,
    "TodoWrite": PLAN, "TodoRead": PLAN, "TaskCreate": PLAN, "TaskGet": PLAN, "TaskUpdate": PLAN,
    "TaskList": PLAN, "AskUserQuestion": PLAN, "EnterPlanMode": PLAN, "ExitPlanMode": PLAN,
    "ReportFindings": PLAN, "ProposeGoal": PLAN, "ProposeSkills": PLAN, "CronList": PLAN,
    "OfferChromeSetup": PLAN, "ShowOnboardingRolePicker": PLAN,
    "TaskStop": HOST, "KillShell": HOST, "CronCreate": HOST, "CronDelete": HOST,
    "ScheduleWakeup": HOST, "EnterWorktree": HOST, "ExitWorktree": HOST,
    "PushNotification": SEND, "Artifact": SEND, "RemoteTrigger": SEND, "SendFeedback": SEND,
    "ListMcpResourcesTool": UNKNOWN, "ReadMcpResourceTool": UNKNOWN,
    **VSCODE,
}
CODEX = {
    "apply_patch": PATCH, "exec_command": _shell("cmd"), "shell": _shell(), "local_shell": _shell(),
    "unified_exec": _shell("cmd"), "Bash": _shell(), "write_stdin": _shell("chars"),
    "read_file": READ, "list_dir": READ, "grep_files": READ, "view_image": READ,
    "web_search": WEB,
    "spawn_agent": HELPER, "send_input": HELPER, "send_message": HELPER, "followup_task": HELPER,
    "wait_agent": HELPER, "close_agent": HELPER, "resume_agent": HELPER, "list_agents": HELPER,
    "update_plan": PLAN, "request_user_input": PLAN,
}
# Codex 0.169 reports its multi-agent tools under their namespace (`collaborationspawn_agent`, as
# recorded from the real binary in fixtures/agents/real/codex/).
CODEX.update({"collaboration" + name: HELPER for name in
              ("spawn_agent", "send_input", "send_message", "followup_task", "wait_agent",
               "close_agent", "resume_agent", "list_agents")})
GEMINI = {
    "write_file": _file("file_path", "path"), "replace": _file("file_path", "path"),
    "run_shell_command": _shell(),
    "read_file": READ, "read_many_files": READ, "list_directory": READ, "glob": READ,
    "search_file_content": READ, "grep_search": READ,
    "web_fetch": WEB, "google_web_search": WEB,
    "delegate_to_agent": HELPER, "codebase_investigator": HELPER,
    "write_todos": PLAN, "ask_user": PLAN,
    "save_memory": HOST,
}
COPILOT = {
    "create": _file("path", "file_path"), "edit": _file("path", "file_path"),
    "str_replace_editor": _file("path"), "write": _file("path", "file_path"),
    "bash": _shell(), "powershell": _shell(), "write_bash": _shell("input"),
    "view": READ, "grep": READ, "glob": READ, "read_bash": READ, "list_bash": READ,
    "fetch_copilot_cli_documentation": READ,
    "web_fetch": WEB,
    "task": HELPER, "read_agent": HELPER, "list_agents": HELPER,
    "report_intent": PLAN, "update_todo": PLAN, "think": PLAN,
    "stop_bash": HOST,
    **VSCODE,  # VS Code's agent mode runs Copilot-format hook files too (.github/hooks/*.json)
}
CURSOR = {
    "Write": _file("file_path", "path", "target_file"), "Edit": _file("file_path", "path", "target_file"),
    "Delete": _file("file_path", "path", "target_file", kind="file-delete"),
    "Shell": _shell(),
    "Read": READ, "Grep": READ, "Glob": READ, "LS": READ,
    "WebSearch": WEB, "WebFetch": WEB,
    "Task": HELPER,
    "TodoWrite": PLAN,
}
OPENCODE = {  # opencode-ai 1.18: its built-in tools, by the names its plugins see
    "write": _file("filePath"), "edit": _file("filePath"), "multiedit": _file("filePath"),
    "apply_patch": PATCH, "patch": PATCH,
    "bash": _shell(),
    "read": READ, "glob": READ, "grep": READ, "list": READ, "lsp": READ, "codesearch": READ,
    "webfetch": WEB, "websearch": WEB,
    "task": HELPER, "batch": HELPER,
    "todowrite": PLAN, "todoread": PLAN, "question": PLAN, "skill": PLAN, "plan_enter": PLAN,
    "plan_exit": PLAN,
}
TOOLS = {"claude-code": CLAUDE, "codex": CODEX, "gemini": GEMINI, "copilot": COPILOT,
         "cursor": CURSOR, "opencode": OPENCODE}
PATCH_FIELDS = ("patch", "input", "command", "patchText", "_raw")
_PATCH_LINE = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


class ToolUse:
    def __init__(self, group: str, kind: str, scope: str | None, paths: list[str] | None = None,
                 command: str | None = None, summary: str = ""):
        self.group = group  # file, shell, read, web, helper, plan, host, send, mcp, other
        self.kind = kind  # the step kind
        self.scope = scope  # None: ask the scope table (shell)
        self.paths = list(paths or [])  # absolute target paths (file tools)
        self.command = command
        self.summary = summary

    @property
    def restorable(self) -> bool:
        return self.group == "file"


def spec_of(tool: str | None, agent: str | None = None) -> Spec | None:
    """The tool's row in its agent's table (any agent's, when the agent is not given or has none)."""
    if not tool:
        return None
    table = TOOLS.get(agent or "")
    if table is not None:
        return table.get(tool)
    return next((t[tool] for t in TOOLS.values() if tool in t), None)


def is_mcp(name: str) -> bool:
    return name.startswith(("mcp__", "mcp_", "MCP:", "mcp:"))


def classify(tool: str | None, tool_input: dict, cwd: str, agent: str | None = None) -> ToolUse:
    name = tool or "?"
    spec = spec_of(tool, agent)
    if spec is None:
        if is_mcp(name):
            return ToolUse("mcp", "other", "unknown", summary=f"MCP tool {name}")
        return ToolUse("other", "other", "unknown", summary=f"tool {name} (not in turnback's table)")
    group = spec.group
    if group in ("file", "patch", "multi"):
        paths, kind = _file_targets(spec, tool_input)
        absolute = [_absolute(p, cwd) for p in paths]
        if absolute:
            return ToolUse("file", spec.kind or kind, "host", absolute,
                           summary=f"{name} " + ", ".join(_short(p, cwd) for p in absolute))
        return ToolUse("other", "other", "unknown", summary=f"{name} (no target path in its input)")
    if group == "monitor":  # Claude Code's Monitor: a watching shell command, or a WebSocket
        if isinstance(tool_input.get("command"), str):
            group = "shell"
        else:
            url = (tool_input.get("ws") or {}).get("url") if isinstance(tool_input.get("ws"), dict) else ""
            return ToolUse("web", "network-fetch", "none", summary=f"{name} {_clip(str(url or ''))}".strip())
    kind, scope = GROUPS[group]
    if group == "shell":
        command = _command(spec, tool_input)
        return ToolUse("shell", "shell", None, command=command,
                       summary=f"{name}: {_clip(command or '(no command)')}")
    what = ""
    for key in ("url", "query", "description", "subagent_type", "agent_type", "skill", "message",
                "pattern", "file_path", "path"):
        if isinstance(tool_input.get(key), str) and tool_input[key]:
            what = tool_input[key]
            break
    summary = f"{name} {_clip(what)}".strip()
    if group == "helper":
        summary += " (its own tool calls are separate steps)"
    return ToolUse(group, kind, scope, summary=summary)


def _command(spec: Spec, tool_input: dict) -> str | None:
    keys = spec.fields or ("command", "cmd")
    for key in keys + ("command", "cmd"):
        value = tool_input.get(key)
        if isinstance(value, list):
            value = " ".join(str(c) for c in value)
        if isinstance(value, str):
            return value
    return None


def _file_targets(spec: Spec, tool_input: dict) -> tuple[list[str], str]:
    if spec.group == "patch":
        return patch_paths(tool_input)
    if spec.group == "multi":
        list_key, keys = spec.fields[0], spec.fields[1:]
        out = []
        for item in tool_input.get(list_key) or []:
            if isinstance(item, dict):
                out += [item[k] for k in keys if isinstance(item.get(k), str)][:1]
        return list(dict.fromkeys(out)), "file-write"
    for key in spec.fields:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return [value], "file-write"
    return [], "file-write"


def patch_paths(tool_input: dict) -> tuple[list[str], str]:
    """The paths an apply_patch body names (`*** Add File:`, `*** Update File:`, `*** Delete File:`,
    `*** Move to:`) and the step kind it amounts to."""
    body = next((tool_input[k] for k in PATCH_FIELDS if isinstance(tool_input.get(k), str)), "")
    paths, actions = [], set()
    for action, path in _PATCH_LINE.findall(body):
        actions.add(action)
        if path not in paths:
            paths.append(path)
    if actions == {"Delete File"}:
        kind = "file-delete"
    elif "Move to" in actions:
        kind = "file-move"
    else:
        kind = "file-write"
    return paths, kind


def absolute(path: str, cwd: str) -> str:
    return _absolute(path, cwd)


def _absolute(path: str, cwd: str) -> str:
    if path.startswith("file://"):
        from urllib.parse import unquote, urlparse

        path = unquote(urlparse(path).path)
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def short(path: str, cwd: str) -> str:
    return _short(path, cwd)


def _short(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else rel


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
