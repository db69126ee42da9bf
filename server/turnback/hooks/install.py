"""`turnback hooks install|uninstall|status`: the hook block in each agent's own settings file.

Install merges: the user's own hooks and every other setting stay as they are, a backup of the file
is written first (`FILE.turnback-backup`, the state before turnback's first change), and a second
install changes nothing. What was added is remembered in a manifest (`$XDG_STATE_HOME/turnback/
hooks-installed.json`), so uninstall removes exactly those entries and nothing else; without a
manifest it removes only hook entries whose command is a `turnback hook AGENT` command.

Project files are written through the workspace fence (no symbolic link on the way).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from ..errors import InvalidParams
from ..store import fs
from .configdir import prepare_parent

FILES = {
    "claude-code": {"project": ".claude/settings.json", "user": "settings.json"},
    "codex": {"project": ".codex/hooks.json", "user": "hooks.json"},
    "gemini": {"project": ".gemini/settings.json", "user": ".gemini/settings.json"},
    "copilot": {"project": ".github/hooks/turnback.json", "user": "hooks/turnback.json"},
    "cursor": {"project": ".cursor/hooks.json", "user": "hooks.json"},
    # not a hooks file: a plugin OpenCode loads (hooks/opencodeplugin.py)
    "opencode": {"project": ".opencode/plugin/turnback.js", "user": "plugin/turnback.js"},
}
# Where each agent keeps its own settings for every project (`--user`), and the variable that moves
# it: the agent reads the variable, so turnback must write where the agent will look.
USER_DIRS = {
    "claude-code": ("CLAUDE_CONFIG_DIR", "~/.claude"),
    "codex": ("CODEX_HOME", "~/.codex"),
    "gemini": ("GEMINI_CLI_HOME", "~"),  # the folder that holds .gemini/, in place of the home
    "copilot": ("COPILOT_HOME", "~/.copilot"),
    "cursor": (None, "~/.cursor"),  # Cursor documents no variable that moves it
    "opencode": ("XDG_CONFIG_HOME", "~/.config"),  # + opencode/: OpenCode's global config folder
}
TOOL_MATCH = {"claude-code": "*", "codex": "*", "gemini": ".*"}
EVENTS = {
    "claude-code": ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                    "PostToolUseFailure", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
                    "SessionEnd"],
    # measured with Codex 0.169: helpers' SubagentStart/SubagentStop, an Interrupt on Ctrl-C, and
    # a SessionEnd at the end of every `codex exec`
    "codex": ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
              "SubagentStart", "SubagentStop", "Interrupt", "SessionEnd"],
    "gemini": ["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"],
    "copilot": ["sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse",
                "postToolUseFailure", "agentStop", "subagentStop", "sessionEnd"],
    "cursor": ["beforeSubmitPrompt", "preToolUse", "postToolUse", "postToolUseFailure",
               "beforeShellExecution", "afterShellExecution", "beforeMCPExecution",
               "afterMCPExecution", "afterFileEdit", "afterAgentResponse", "stop", "sessionEnd"],
    # what the plugin sends, from OpenCode's chat.message, tool.execute.before/after and events
    "opencode": ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                 "StopFailure", "FileEdited", "MessageRemoved", "SessionEnd"],
}
FLAT = ("copilot", "cursor")  # a list of hook entries per event, no matcher groups
VERSIONED = ("copilot", "cursor")  # files with a top-level "version": 1
TOOL_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "BeforeTool", "AfterTool"}
TIMEOUT_S = 30
# Codex clamps the timeout of the hooks that run as it stops (an interrupt, its exit) to 3 s and
# says so as an error item in every run's output ("clamping SessionEnd hook timeout to 3s") when
# asked for more: ask for what it allows (measured with 0.169: 3 and none are quiet, 4 is not).
SHORT_TIMEOUTS = {("codex", "SessionEnd"): 3, ("codex", "Interrupt"): 3}


def user_dir(agent: str) -> Path:
    var, default = USER_DIRS[agent]
    value = os.environ.get(var) if var else None
    return Path(os.path.expanduser(value if value else default))


def settings_path(agent: str, scope: str, root: Path) -> Path:
    rel = FILES[agent][scope]
    if agent == "opencode" and scope == "user":
        return user_dir(agent) / "opencode" / rel
    return user_dir(agent) / rel if scope == "user" else root / rel


def hook_command(agent: str, exe: str | None = None) -> str:
    """The command an agent runs. By default the absolute path of the turnback running now: the
    agent's own PATH (an editor's, a login shell's) may not have it. `exe` may be a bare name
    (`--command turnback` trusts the agent's PATH) or a whole command already ending in `hook AGENT`."""
    if exe is not None:
        exe = exe.strip()
        return exe if exe.endswith(f"hook {agent}") else f"{exe} hook {agent}"
    return f"{this_turnback()} hook {agent}"


def this_turnback() -> str:
    """This turnback as a command line: the `turnback` script that was run, by absolute path (not
    resolved: a symlink someone put on PATH keeps working across reinstalls); `python -m turnback`
    is written as that interpreter's own `turnback` script when it has one, else as itself."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if Path(argv0).name == "turnback":
        found = argv0 if os.sep in argv0 else shutil.which(argv0)
        if found and os.path.isfile(found):
            return shlex.quote(os.path.abspath(found))
    script = Path(sys.executable).with_name("turnback")
    if script.is_file() and os.access(script, os.X_OK):
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m turnback"


def _entry(agent: str, event: str, command: str) -> dict:
    """The block for one event, in the agent's own shape."""
    if agent == "copilot":
        return {"type": "command", "bash": f"{command} --event {event}", "timeoutSec": TIMEOUT_S}
    if agent == "cursor":  # Cursor names the event in the payload (hook_event_name)
        return {"command": command}
    hook = {"type": "command", "command": command,
            "timeout": SHORT_TIMEOUTS.get((agent, event), TIMEOUT_S)}
    if agent == "gemini":
        hook = {"name": "turnback", "type": "command", "command": command,
                "timeout": TIMEOUT_S * 1000}
    group = {"hooks": [hook]}
    if event in TOOL_EVENTS:
        group = {"matcher": TOOL_MATCH[agent], **group}
    return group


def _ours(agent: str, hook: dict, command: str | None) -> bool:
    text = hook.get("bash") if agent == "copilot" else hook.get("command")
    if not isinstance(text, str):
        return False
    if command is not None:
        return text == command or text.startswith(command + " --event ")
    return re.search(rf"\bturnback\b.*\bhook {re.escape(agent)}\b", text) is not None


# -- the manifest -------------------------------------------------------------------------------
def manifest_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "turnback" / "hooks-installed.json"


def _load_manifest() -> dict:
    try:
        data = json.loads(manifest_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(data: dict) -> None:
    path = manifest_path()
    fs.mkdir(path.parent, 0o700)
    fs.write_atomic(path, json.dumps(data, indent=2, sort_keys=True).encode())


# -- reading and writing settings files -----------------------------------------------------------
def _read(path: Path) -> dict | None:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InvalidParams(f"{path} is not valid JSON ({exc}); fix it or move it away first, "
                            "turnback will not overwrite it", data={"path": str(path)})
    if not isinstance(data, dict):
        raise InvalidParams(f"{path} does not hold a JSON object; turnback will not change it",
                            data={"path": str(path)})
    return data


def _write(path: Path, data: dict | None, scope: str, root: Path) -> None:
    prepare_parent(path, scope, root)
    backup = path.with_name(path.name + ".turnback-backup")
    if path.exists() and not backup.exists():
        fs.write_atomic(backup, path.read_bytes(), mode=0o600)
    if data is None:
        fs.unlink(path, missing_ok=True)
        return
    mode = (os.stat(path).st_mode & 0o777) if path.exists() else 0o644
    fs.write_atomic(path, (json.dumps(data, indent=2) + "\n").encode(), mode=mode)


# -- the three commands ---------------------------------------------------------------------------
def install(agent: str, scope: str, root: Path, *, command: str | None = None) -> dict:
    _check(agent, scope)
    path = settings_path(agent, scope, root)
    command = hook_command(agent, command)
    if agent == "opencode":
        return _install_plugin(path, scope, root, command)
    data = _read(path)
    created_file = data is None
    data = {} if data is None else data
    if agent in VERSIONED:
        data.setdefault("version", 1)
    hooks = data.get("hooks")
    if hooks is None:
        hooks = data["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InvalidParams(f"{path}: 'hooks' is not an object; turnback will not change it")
    added, updated, created_events = [], [], []
    for event in EVENTS[agent]:
        groups = hooks.get(event)
        if groups is None:
            groups = hooks[event] = []
            created_events.append(event)
        if not isinstance(groups, list):
            raise InvalidParams(f"{path}: hooks.{event} is not a list; turnback will not change it")
        if any(_ours(agent, h, command) for h in _hooks_of(agent, groups)):
            if _mend_timeout(agent, event, groups):
                updated.append(event)
            continue
        if _repoint(agent, event, groups, command):
            updated.append(event)
            continue
        groups.append(_entry(agent, event, command))
        added.append(event)
    manifest = _load_manifest()
    key = str(path)
    if added or updated:
        _write(path, data, scope, root)
        old = manifest.get(key, {})
        manifest[key] = {
            "agent": agent, "scope": scope, "command": command,
            "events": sorted(set(old.get("events", [])) | set(added) | set(updated)),
            "createdFile": old.get("createdFile", created_file),
            "createdEvents": sorted(set(old.get("createdEvents", [])) | set(created_events)),
        }
        _save_manifest(manifest)
    return {"agent": agent, "scope": scope, "path": key, "command": command, "added": added,
            "updated": updated, "alreadyInstalled": not added and not updated}


def over_cap(agent: str, event: str, hook: dict) -> bool:
    """A timeout the agent clamps, and reports on every run (an earlier turnback's 30 s, a user's
    edit): `hooks install` mends it, `hooks status` names it."""
    cap = SHORT_TIMEOUTS.get((agent, event))
    value = hook.get("timeout")
    return cap is not None and value is not None and not (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value <= cap)


def _mend_timeout(agent: str, event: str, groups: list) -> bool:
    changed = False
    for hook in _hooks_of(agent, groups):
        if _ours(agent, hook, None) and over_cap(agent, event, hook):
            hook["timeout"] = SHORT_TIMEOUTS[(agent, event)]
            changed = True
    return changed


def _repoint(agent: str, event: str, groups: list, command: str) -> bool:
    """An earlier install's entries (another turnback: a bare `turnback`, a virtual environment
    since removed) now run this command: installing again mends them instead of adding a second
    entry, which the agent would run too."""
    changed = False
    for hook in _hooks_of(agent, groups):
        if _ours(agent, hook, None):
            if agent == "copilot":
                hook["bash"] = f"{command} --event {event}"
            else:
                hook["command"] = command
            if over_cap(agent, event, hook):
                hook["timeout"] = SHORT_TIMEOUTS[(agent, event)]
            changed = True
    return changed


def _install_plugin(path: Path, scope: str, root: Path, command: str) -> dict:
    """OpenCode's plugin file: written whole (never merged); someone else's file is refused, an
    edited copy of ours is kept beside it (`.turnback-backup`) and written again."""
    from . import opencodeplugin

    st = opencodeplugin.state(path, command)
    if st.get("problem"):
        raise InvalidParams(st["problem"], data={"path": str(path)})
    if st["exists"] and not st["ours"]:
        raise InvalidParams(f"{path} is not turnback's plugin; turnback will not overwrite it "
                            "(move it away first)", data={"path": str(path)})
    result = {"agent": "opencode", "scope": scope, "path": str(path), "command": command,
              "added": [], "updated": [], "alreadyInstalled": False}
    if st["exists"] and st["current"] and not st["edited"]:
        result["alreadyInstalled"] = True
        return result
    if st.get("edited"):
        fs.write_atomic(path.with_name(path.name + ".turnback-backup"), path.read_bytes(),
                          mode=0o600)
        result["editedKept"] = str(path.with_name(path.name + ".turnback-backup"))
    opencodeplugin.write(path, command, scope, root)
    (result["updated"] if st["exists"] else result["added"]).extend(EVENTS["opencode"])
    manifest = _load_manifest()
    manifest[str(path)] = {"agent": "opencode", "scope": scope, "command": command,
                           "events": EVENTS["opencode"], "createdFile": True, "createdEvents": []}
    _save_manifest(manifest)
    return result


def _uninstall_plugin(path: Path, scope: str) -> dict:
    from . import opencodeplugin

    st = opencodeplugin.state(path)
    manifest = _load_manifest()
    if manifest.pop(str(path), None) is not None:
        _save_manifest(manifest)
    removed = []
    if st.get("ours"):
        fs.unlink(path, missing_ok=True)
        removed = EVENTS["opencode"]
    return {"agent": "opencode", "scope": scope, "path": str(path), "removed": removed,
            **({"kept": "the file there is not turnback's"} if st["exists"] and not st.get("ours")
               else {})}


def uninstall(agent: str, scope: str, root: Path) -> dict:
    _check(agent, scope)
    path = settings_path(agent, scope, root)
    if agent == "opencode":
        return _uninstall_plugin(path, scope)
    manifest = _load_manifest()
    key = str(path)
    entry = manifest.get(key)
    data = _read(path)
    if data is None:
        manifest.pop(key, None)
        _save_manifest(manifest) if entry else None
        return {"agent": agent, "scope": scope, "path": key, "removed": []}
    command = entry.get("command") if entry else None
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if agent in FLAT:
                if isinstance(group, dict) and _ours(agent, group, command):
                    removed.append(event)
                    continue
                kept.append(group)
                continue
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept.append(group)
                continue
            left = [h for h in inner if not (isinstance(h, dict) and _ours(agent, h, command))]
            if len(left) != len(inner):
                removed.append(event)
                if not left:
                    continue
                group = {**group, "hooks": left}
            kept.append(group)
        hooks[event] = kept
        if not kept and entry and event in entry.get("createdEvents", []):
            del hooks[event]
    if entry and not hooks and "hooks" in data:
        del data["hooks"]
    leftover = {k: v for k, v in data.items() if not (agent in VERSIONED and k == "version")}
    if removed:
        gone = entry is not None and entry.get("createdFile") and not leftover
        _write(path, None if gone else data, scope, root)
    if entry:
        manifest.pop(key, None)
        _save_manifest(manifest)
    return {"agent": agent, "scope": scope, "path": key, "removed": sorted(set(removed))}


def _is_codex_hook(command: str) -> bool:
    return _ours("codex", {"command": command}, None)


def codex_trust(root: Path, scope: str) -> dict:
    """`hooks install codex --trust`: record through Codex what it needs to run turnback's hooks."""
    from . import codextrust

    return codextrust.trust(root, settings_path("codex", scope, root), scope, EVENTS["codex"],
                            _is_codex_hook)


def _hooks_of(agent: str, groups: list) -> list[dict]:
    if agent in FLAT:
        return [g for g in groups if isinstance(g, dict)]
    return [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"] if isinstance(h, dict)]


def _check(agent: str, scope: str) -> None:
    if agent not in FILES:
        raise InvalidParams(f"unknown agent {agent!r}; expected one of {', '.join(FILES)}")
    if scope not in ("project", "user"):
        raise InvalidParams(f"unknown scope {scope!r}; expected project or user")
