"""What an agent's tool call is to turnback: which files it writes, its step kind, and its scope.

* file tools (Write, Edit, MultiEdit, NotebookEdit, VS Code's create_file and replace_string_in_file,
  Gemini's write_file and replace, Copilot's create and edit, Codex's apply_patch): their target paths
  are captured before and after, and the step is `host` with a restore inverse;
* shell tools: the step's scope comes from the configured scope table (`unknown` when unmatched); the
  sweep at the end of the turn sees what they changed;
* web fetch and search: `network-fetch`, scope `none`; reading and searching files: `read`, `none`;
* MCP tools (`mcp__server__tool`) and everything unrecognised: `other`, `unknown`.
"""

from __future__ import annotations

import os
import re

# tool name -> the input fields that hold its target path(s)
FILE_TOOLS = {
    "Write": ("file_path",), "Edit": ("file_path",), "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "create_file": ("filePath", "file_path"), "replace_string_in_file": ("filePath", "file_path"),
    "insert_edit_into_file": ("filePath", "file_path"), "edit_notebook_file": ("filePath",),
    "write_file": ("file_path", "path"), "replace": ("file_path", "path"),
    "create": ("path", "file_path"), "edit": ("path", "file_path"), "write": ("path", "file_path"),
    "str_replace_editor": ("path",), "str_replace": ("path",),
}
MULTI_FILE_TOOLS = {"multi_replace_string_in_file": ("replacements", ("filePath", "file_path"))}
PATCH_TOOLS = {"apply_patch"}
PATCH_FIELDS = ("patch", "input", "command", "_raw")
SHELL_TOOLS = {"Bash": "command", "bash": "command", "shell": "command", "exec_command": "cmd",
               "local_shell": "command", "run_shell_command": "command",
               "run_in_terminal": "command", "powershell": "command", "BashOutput": None}
READ_TOOLS = {"Read", "Glob", "Grep", "LS", "NotebookRead", "read_file", "read_many_files",
              "list_directory", "glob", "search_file_content", "grep_search", "file_search",
              "semantic_search", "view", "list_dir", "get_errors", "TodoWrite", "TodoRead",
              "ExitPlanMode", "save_memory", "update_plan", "think", "KillShell"}
WEB_TOOLS = {"WebFetch", "WebSearch", "web_fetch", "google_web_search", "fetch_webpage", "fetch",
             "web_search"}
HELPER_TOOLS = {"Task", "Agent"}  # starts a helper agent, whose own tool calls are hooked too
_PATCH_LINE = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


class ToolUse:
    def __init__(self, group: str, kind: str, scope: str | None, paths: list[str] | None = None,
                 command: str | None = None, summary: str = ""):
        self.group = group  # file, shell, read, web, helper, mcp, other
        self.kind = kind  # the step kind
        self.scope = scope  # None: ask the scope table (shell)
        self.paths = list(paths or [])  # absolute target paths (file tools)
        self.command = command
        self.summary = summary

    @property
    def restorable(self) -> bool:
        return self.group == "file"


def classify(tool: str | None, tool_input: dict, cwd: str) -> ToolUse:
    name = tool or "?"
    if name in FILE_TOOLS or name in MULTI_FILE_TOOLS or name in PATCH_TOOLS:
        paths, kind = _file_targets(name, tool_input)
        absolute = [_absolute(p, cwd) for p in paths]
        if absolute:
            return ToolUse("file", kind, "host", absolute,
                           summary=f"{name} " + ", ".join(_short(p, cwd) for p in absolute))
        return ToolUse("other", "other", "unknown", summary=f"{name} (no target path in its input)")
    if name in SHELL_TOOLS:
        key = SHELL_TOOLS[name]
        command = tool_input.get(key) if key else None
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        command = command if isinstance(command, str) else None
        return ToolUse("shell", "shell", None, command=command,
                       summary=f"{name}: {_clip(command or '(no command)')}")
    if name in READ_TOOLS:
        return ToolUse("read", "read", "none", summary=name)
    if name in WEB_TOOLS:
        what = tool_input.get("url") or tool_input.get("query") or ""
        return ToolUse("web", "network-fetch", "none", summary=f"{name} {_clip(str(what))}".strip())
    if name in HELPER_TOOLS:
        what = tool_input.get("description") or tool_input.get("subagent_type") or ""
        return ToolUse("helper", "other", "none",
                       summary=f"{name} {_clip(str(what))} (its own tool calls are separate steps)")
    if name.startswith("mcp__") or name.startswith("mcp_"):
        return ToolUse("mcp", "other", "unknown", summary=f"MCP tool {name}")
    return ToolUse("other", "other", "unknown", summary=f"tool {name}")


def _file_targets(name: str, tool_input: dict) -> tuple[list[str], str]:
    if name in PATCH_TOOLS:
        return patch_paths(tool_input)
    if name in MULTI_FILE_TOOLS:
        list_key, keys = MULTI_FILE_TOOLS[name]
        out = []
        for item in tool_input.get(list_key) or []:
            if isinstance(item, dict):
                out += [item[k] for k in keys if isinstance(item.get(k), str)][:1]
        return list(dict.fromkeys(out)), "file-write"
    for key in FILE_TOOLS[name]:
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


def _absolute(path: str, cwd: str) -> str:
    if path.startswith("file://"):
        from urllib.parse import unquote, urlparse

        path = unquote(urlparse(path).path)
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def _short(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else rel


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
