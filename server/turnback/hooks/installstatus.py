"""`turnback hooks status`: reading what is installed, apart from install.py, which writes."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from ..errors import InvalidParams
from .install import (EVENTS, FILES, _hooks_of, _is_codex_hook, _ours, _read, over_cap,
                      settings_path)


def status(root: Path) -> list[dict]:
    out = []
    for agent in FILES:
        for scope in ("project", "user"):
            path = settings_path(agent, scope, root)
            if agent == "opencode":
                out.append({**_plugin_status(path), "scope": scope})
                continue
            try:
                data = _read(path)
                problem = None
            except InvalidParams as exc:
                data, problem = None, exc.message
            events, commands, clamped = [], [], []
            if data and isinstance(data.get("hooks"), dict):
                for event, groups in data["hooks"].items():
                    ours = [h for h in _hooks_of(agent, groups) if _ours(agent, h, None)] \
                        if isinstance(groups, list) else []
                    if ours:
                        events.append(event)
                    commands += [_command_of(agent, h) for h in ours]
                    clamped += [event for h in ours if over_cap(agent, event, h)][:1]
            missing = [e for e in EVENTS[agent] if e not in events]
            row: dict[str, Any] = {"agent": agent, "scope": scope, "path": str(path),
                                   "exists": data is not None, "installed": bool(events),
                                   "complete": bool(events) and not missing, "events": events,
                                   "missing": missing if events else [],
                                   **({"problem": problem} if problem else {}),
                                   **({"timeoutClamped": clamped} if clamped else {})}
            row.update(_command_state(commands))
            if agent == "codex" and events:
                row["codex"] = codex_state(root, path, scope, events)
            if agent == "gemini" and events:
                from . import geminitrust

                row["gemini"] = geminitrust.check(root)
            out.append(row)
    return out


def missing_command(command: str) -> str | None:
    """Why an installed hook command cannot run any more (its program is gone), or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return f"cannot read the command {command!r}"
    if not words:
        return "the command is empty"
    program = words[0]
    if os.sep in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            return f"{program} no longer exists"
        return None
    if shutil.which(program) is None:
        return f"{program} is not on this PATH (the agent's own PATH may differ)"
    return None


def codex_state(root: Path, path: Path, scope: str, events: list[str]) -> dict:
    """Whether Codex will run the hooks in `path` (hooks/codextrust.py)."""
    from . import codextrust

    return codextrust.check(root, path, scope, events, _is_codex_hook)


def _command_of(agent: str, hook: dict) -> str:
    text = hook.get("bash") if agent == "copilot" else hook.get("command")
    return re.sub(r" --event \S+$", "", text) if isinstance(text, str) else ""


def _command_state(commands: list[str]) -> dict:
    """The command the installed hooks run, and why it cannot run any more (`commandMissing`)."""
    if not commands:
        return {}
    distinct = sorted(set(commands))
    gone = next((why for why in map(missing_command, distinct) if why), None)
    return {"command": distinct[0] if len(distinct) == 1 else distinct,
            **({"commandMissing": gone} if gone else {})}


def _plugin_status(path: Path) -> dict:
    from . import opencodeplugin

    st = opencodeplugin.state(path)
    ours = bool(st.get("ours"))
    row = {"agent": "opencode", "path": str(path), "exists": st["exists"], "installed": ours,
           "complete": ours and not st.get("edited"), "events": EVENTS["opencode"] if ours else [],
           "missing": []}
    if st.get("problem"):
        row["problem"] = st["problem"]
    if st["exists"] and not ours and not st.get("problem"):
        row["problem"] = "a file of that name that is not turnback's plugin"
    if st.get("edited"):
        row["edited"] = ("edited since turnback wrote it; `turnback hooks install opencode` "
                         "writes it again (keeping the edited copy beside it)")
    if ours:
        row.update(_command_state([st["command"]]))
    return row
