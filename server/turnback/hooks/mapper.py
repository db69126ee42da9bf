"""The shared mapper: one agent event, whatever the agent, as the contract's calls on the session.

* prompt -> `turn/begin` with the prompt (the pre-turn checkpoint); the turn before it, if still open,
  is closed first (lifecycle.py says how every turn ends);
* before a tool -> file tools: `turn/capture` phase `before` of each target; every tool: noted as
  begun (in the agent record), so its step is logged in the order the tools were started;
* after a tool, or after a failed one -> file tools (and the files a shell command says it changed):
  `turn/capture` phase `after`; then `turn/step` with an honest scope (tools.py) and the tool's
  result persisted;
* stop -> `turn/respond` with the assistant's text, the resume point, then `turn/settle` (once the
  turn's helper agents are done); a tool begun and never finished becomes a step of unknown scope;
* session start -> attach the agent session to the turnback session (attach.py).

An event that belongs to no turn (after the last Stop, with no prompt) opens none: it is logged, and
the files a file tool names are captured between turns, so nothing is lost. One event delivered twice
(VS Code runs the hooks of two settings files) is recorded once. Nothing raises out of a handler
except a failed call.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from . import guard
from .attach import AttachMixin
from .conversation import ConversationMixin
from .event import Event
from .lifecycle import LifecycleMixin
from .tools import ToolUse, absolute, classify, short

RESULT_LIMIT = 256 * 1024
FORGET_SECONDS = 90 * 24 * 3600  # an agent session idle this long is not resumed any more
DEDUP_SECONDS = 600  # a second copy of one event comes within this
DEDUP_KEEP = 256  # event identities remembered
FINISHED_KEEP = 64  # tool calls remembered as done, so a late second copy is not a new step


class Reply:
    def __init__(self):
        self.context: str | None = None  # additional context for the model (SessionStart, prompt)
        self.message: str | None = None  # a message shown to the person (systemMessage)


class Mapper(AttachMixin, LifecycleMixin, ConversationMixin):
    def __init__(self, ev: Event, port, data: dict, config, log):
        self.ev = ev
        self.port = port
        self.data = data
        self.config = config
        self.log = log
        self.reply = Reply()
        self.now = time.time()
        self._info_cache: dict | None = None
        self._key = f"{ev.agent}:{ev.session}"
        self.tools_of = ev.agent  # whose tool table names this event's tools

    @property
    def key(self) -> str:
        return self._key

    def info(self, *, fresh: bool = False) -> dict:
        """`session/info`, once per event unless something changed it."""
        if fresh or self._info_cache is None:
            self._info_cache = self.port.call("turnback/session/info", {})
        return self._info_cache

    def changed(self) -> None:
        self._info_cache = None

    def run(self) -> Reply:
        ev = self.ev
        if self._second_copy():
            return self.reply
        self._key = self.data.setdefault("aliases", {}).get(self._key, self._key)
        s = self.data["sessions"].get(self.key)
        if s is not None and s.get("agent"):
            self.tools_of = s["agent"]  # an alias (VS Code's second hook file): the session's tools
        if s is None:
            if ev.kind not in ("session-start", "prompt"):
                self.log(f"{self.key}: {ev.name} from a session turnback has not seen start; "
                         "attaching it now")
            if ev.kind == "session-start" and (ev.source or "startup") in ("startup", "clear", "fork"):
                self.close_idle_others()
            s = self._attach()
        _upgrade(s)
        self.reconcile(s)
        if ev.agent_id and ev.agent_id in s["helpers"]:
            s["helpers"][ev.agent_id]["last"] = self.now
        handler = getattr(self, "on_" + ev.kind.replace("-", "_"), None)
        if handler is None:
            self.log(f"{self.key}: {ev.name}: nothing to record")
        else:
            handler(s)
        s["active"] = self.now
        if ev.process:
            s["process"] = ev.process
        self.data["current"] = self.key
        self._forget_old_sessions()
        return self.reply

    def _second_copy(self) -> bool:
        """The same event through a second hook file: recorded once, and the two keys it came under
        are one agent session from now on."""
        ident = self.ev.identity
        if not ident:
            return False
        seen = self.data.setdefault("events", {})
        cutoff = self.now - DEDUP_SECONDS
        first = seen.get(ident)
        if first is not None and first[1] >= cutoff:
            if first[0] != self._key:
                self.data.setdefault("aliases", {})[self._key] = first[0]
            self.log(f"{self._key}: {self.ev.name}: a second copy of an event already recorded as "
                     f"{first[0]} (two hook files deliver it): recorded once")
            return True
        seen[ident] = [self.data.get("aliases", {}).get(self._key, self._key), self.now]
        if len(seen) > DEDUP_KEEP:
            for old in sorted(seen, key=lambda k: seen[k][1])[: len(seen) - DEDUP_KEEP]:
                del seen[old]
        return False

    def _forget_old_sessions(self) -> None:
        """Agent sessions idle for a long time with no turn running leave the record (their turnback
        sessions stay in the store; only the link to the agent's ids goes)."""
        cutoff = self.now - FORGET_SECONDS
        for key in [k for k, v in self.data["sessions"].items()
                    if v.get("turn") is None and v.get("active", 0) < cutoff and k != self.key]:
            del self.data["sessions"][key]

    # -- tools ------------------------------------------------------------------------------------
    def _use(self) -> ToolUse:
        return classify(self.ev.tool, self.ev.tool_input, self.ev.cwd, self.tools_of)

    def on_pre_tool(self, s: dict) -> None:
        if self.ev.name == "preToolUse" or self.ev.agent == "opencode":
            # Cursor, OpenCode: their tool events cover the edits afterFileEdit / file.edited name
            s["toolEvents"] = True
        use = self._use()
        if guard.check(self, s, use) == "deny":
            return  # refused before it ran (hooks/guard.py): there is nothing to record
        key = self.ev.tool_key()
        n = self.turn_for(s)
        if n is None:
            self._stray(s, use, "before")
            return
        if key in s["pending"]:
            self.log(f"{self.key}: a second PreToolUse for tool call {key}; the first is kept")
            return
        s["seq"] += 1
        # Tool calls begun while others are still unfinished run in parallel: one batch, logged in
        # the order of their tool ids once all of them are done; a batch alone keeps its own place.
        open_batches = [p["batch"] for p in s["pending"].values() if p.get("done") is None]
        batch = min(open_batches) if open_batches else s["seq"]
        s["pending"][key] = {"seq": s["seq"], "batch": batch, "tool": self.ev.tool, "group": use.group,
                             "kind": use.kind, "paths": use.paths, "summary": self._label(use.summary),
                             "command": use.command, "done": None, "at": self.now}
        if use.restorable:
            self._capture(use.paths, "before")

    def on_post_tool(self, s: dict, failed: bool = False) -> None:
        key = self.ev.tool_key()
        use = self._use()
        n = self.turn_for(s)
        if self.ev.status == "interrupted":
            s["interrupted"] = True  # the person stopped the turn: no Stop will come
        if n is None:
            s["pending"].pop(key, None)
            self._stray(s, use, "after")
            return
        pending = s["pending"].get(key)
        if pending is None:
            if key in s["finished"]:
                self.log(f"{self.key}: {self.ev.name} for tool call {key} ({self.ev.tool}), which is "
                         "already recorded: a second copy, ignored")
                return
            self.log(f"{self.key}: {self.ev.name} for tool call {key} ({self.ev.tool}) with no "
                     "PreToolUse: recorded as a step of its own (its before-image may be unknown)")
            s["seq"] += 1
            pending = s["pending"][key] = {"seq": s["seq"], "batch": s["seq"], "tool": self.ev.tool,
                                           "done": None, "at": self.now}
        outside = self._capture(use.paths, "after") if use.restorable else []
        changed, changed_outside = self._changed_files(use)
        written = self._shell_writes(use) if use.group == "shell" else None
        pending["done"] = self._step_params(use, outside, failed, changed, written)
        if changed_outside:
            pending["done"]["summary"] += " (also changed outside the workspace: " + \
                ", ".join(changed_outside[:5]) + ")"
        self.flush(s)

    def on_tool_failed(self, s: dict) -> None:
        self.on_post_tool(s, failed=True)

    def _shell_writes(self, use: ToolUse) -> tuple[list[str], list[str]]:
        """The files a shell command writes by redirection (`printf … > CHANGELOG.md`), captured
        now: (inside the workspace, outside it). The step names the inside ones, so the rewind that
        puts them back counts the step as restored (docs/effects.md)."""
        paths = [os.path.normpath(os.path.join(self.ev.cwd, t))
                 for t in self.config.shell_writes(use.command or "")]
        outside = self._capture(paths, "after") if paths else []
        return [p for p in paths if p not in outside], outside

    def on_file_edited(self, s: dict) -> None:
        """Cursor's afterFileEdit: a file the agent edited. Its tool call's own events (preToolUse,
        postToolUse) record the step when this Cursor sends them; older ones send only this."""
        path = (self.ev.tool_input or {}).get("file_path")
        if not path:
            return
        path = absolute(path, self.ev.cwd)
        if s.get("toolEvents") or self.turn_for(s) is None:
            self._capture([path], "after")
            return
        use = ToolUse("file", "file-write", "host", [path], summary=f"edit {short(path, self.ev.cwd)}")
        outside = self._capture([path], "after")
        s["seq"] += 1
        s["pending"][self.ev.tool_key()] = {"seq": s["seq"], "batch": s["seq"], "tool": "edit",
                                            "done": self._step_params(use, outside, False, []),
                                            "at": self.now}
        self.flush(s)

    def _label(self, summary: str) -> str:
        if self.ev.agent_id:
            kind = f"{self.ev.agent_type} " if self.ev.agent_type else ""
            summary = f"[helper {kind}{self.ev.agent_id}] {summary}"
        s = self.data["sessions"].get(self.key) or {}
        if s.get("turn") is None:  # a step of the turn of the agent session it shares the session with
            summary = f"[{self.ev.agent} session {self.ev.session[:8]}] {summary}"
        return summary

    def _changed_files(self, use: ToolUse) -> tuple[list[str], list[str]]:
        """The files a shell command says it changed (Claude Code's bashEditDiff): captured now, so
        their images belong to this step and not only to the turn's sweep. (inside, outside)."""
        if use.group != "shell" or not self.ev.changed:
            return [], []
        paths = [absolute(p, self.ev.cwd) for p in self.ev.changed]
        outside = self._capture(paths, "after")
        return [p for p in paths if p not in outside], outside

    def _stray(self, s: dict, use: ToolUse, phase: str) -> None:
        """A tool event that belongs to no turn: no turn is opened for it (nothing would end it);
        the files a file tool names are captured between turns, so nothing is lost."""
        where = f" ({', '.join(use.paths)})" if use.paths else ""
        self.log(f"{self.key}: {self.ev.name} {self.ev.tool}{where} with no turn running (after "
                 "its turn ended, with no prompt): logged, no turn opened for it")
        if use.restorable:
            self._capture(use.paths, phase)

    def _step_params(self, use: ToolUse, outside: list[str], failed: bool,
                     changed: list[str], written: tuple[list[str], list[str]] | None = None) -> dict:
        params = {"kind": use.kind, "summary": self._label(use.summary)}
        if use.group == "shell":
            scope, why = self.config.shell_scope(use.command or "")
            inside, beyond = written or ([], [])
            if scope == "host" and beyond:  # its redirect left the workspace: we cannot say more
                scope, why = "unknown", f"writes outside the workspace: {', '.join(beyond)}"
            params["scope"] = scope
            params["summary"] = f"{params['summary']} [scope {scope}: {why}]"
            named = list(dict.fromkeys(list(changed) + (inside if scope == "host" else [])))
            if named:
                params["uris"] = [_uri(p) for p in named]
        elif use.restorable and outside:
            # A write outside the workspace cannot be restored: no scope, so the turn gets a gap.
            params["summary"] += " (writes outside the workspace: " + ", ".join(outside) + ")"
        else:
            params["scope"] = use.scope
        if use.restorable:
            inside = [p for p in use.paths if p not in outside]
            params["uris"] = [_uri(p) for p in inside]
            params["inverse"] = {"kind": "restore", "scope": "host"}
        if failed:
            params["summary"] += f" (failed: {str(self.ev.error or 'no detail')[:300]})"
        result = self.ev.tool_response if self.ev.tool_response is not None else self.ev.error
        if result is not None:
            text = result if isinstance(result, str) else json.dumps(result, default=str)
            params["result"] = text[:RESULT_LIMIT]
        return params

    def flush(self, s: dict, *, final: bool = False, turn: int | None = None) -> None:
        """Log finished tool calls in the order they began; with `final`, the unfinished ones too,
        as steps of unknown scope (a Pre without a Post: denied, failed or interrupted)."""
        from ..agents.agentrecord import steps_in_order, unfinished_step

        n = turn if turn is not None else self.turn_of(s)
        for key, p, params in steps_in_order(s["pending"], final=final):
            if params is None:
                if p.get("group") == "file":
                    self._capture(p.get("paths", []), "after")
                params = unfinished_step(p)
                self.log(f"{s['agent']}:{s['sessionId']}: tool call {key} ({p.get('tool')}) began "
                         f"and never finished; recorded as a gap of turn {n}")
            if n is not None:
                self.port.call("turnback/turn/step", {"turn": n, **params})
            del s["pending"][key]
            s["finished"] = (s["finished"] + [key])[-FINISHED_KEEP:]

    def _capture(self, paths: list[str], phase: str) -> list[str]:
        """Capture the paths; returns those outside the workspace (refused, and a gap)."""
        if not paths:
            return []
        result = self.port.call("turnback/turn/capture",
                                {"uris": [_uri(p) for p in paths], "phase": phase})
        outside = {g.get("uri") for g in result.get("gaps", []) if g.get("reason") == "outside-workspace"}
        return [p for p in paths if _uri(p) in outside]


def _upgrade(s: dict) -> None:
    """Fields a record written by an older turnback may not have."""
    for name, default in (("pending", {}), ("seq", 0), ("ends", {}), ("helpers", {}),
                          ("finished", []), ("noticed", []), ("line", [])):
        if not isinstance(s.get(name), type(default)):
            s[name] = default


def _uri(path: str) -> str:
    return Path(path).as_uri()
