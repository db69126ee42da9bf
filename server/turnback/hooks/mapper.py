"""The shared mapper: one agent event, whatever the agent, as the contract's calls on the session.

* prompt -> `turn/begin` with the prompt (the pre-turn checkpoint);
* before a tool -> file tools: `turn/capture` phase `before` of each target; every tool: noted as
  begun (in the agent record), so its step is logged in the order the tools were started;
* after a tool, or after a failed one -> file tools: `turn/capture` phase `after`; then `turn/step`
  with an honest scope (docs/agents/README.md) and the tool's result persisted;
* stop -> `turn/respond` with the assistant's text (the payload's, or the transcript's), then
  `turn/settle`; a tool begun and never finished becomes a step of unknown scope, so the turn shows a
  `step-scope-unknown` gap naming it; subagent stop -> `agent/transcript` (the helper's transcript);
* session start -> attach the agent session to the turnback session (docs/agents/README.md says what
  each `source` does).

Anything out of order (a Post with no Pre, a Stop with no turn, a tool with no prompt) is recorded as
well as it can be and logged; nothing raises out of a handler except a failed call.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from . import transcript
from .event import Event
from .port import PortError
from .tools import ToolUse, classify

RESULT_LIMIT = 256 * 1024
PROMPT_CLIP = 300


@dataclass
class Reply:
    context: str | None = None  # additional context for the model (SessionStart, prompt)
    message: str | None = None  # a message shown to the person (systemMessage)


class Mapper:
    def __init__(self, ev: Event, port, data: dict, config, log):
        self.ev = ev
        self.port = port
        self.data = data
        self.config = config
        self.log = log
        self.reply = Reply()

    @property
    def key(self) -> str:
        return f"{self.ev.agent}:{self.ev.session}"

    def run(self) -> Reply:
        ev = self.ev
        s = self.data["sessions"].get(self.key)
        if s is None:
            if ev.kind not in ("session-start", "prompt"):
                self.log(f"{self.key}: {ev.name} from a session turnback has not seen start; "
                         "attaching it now")
            s = self._attach()
        handler = getattr(self, "on_" + ev.kind.replace("-", "_"), None)
        if handler is None:
            self.log(f"{self.key}: {ev.name}: nothing to record")
        else:
            handler(s)
        s["active"] = time.time()
        self.data["current"] = self.key
        return self.reply

    # -- sessions ---------------------------------------------------------------------------------
    def _attach(self) -> dict:
        info = self.port.call("turnback/session/info", {})
        tb = info["sessionId"]
        others = [k for k, v in self.data["sessions"].items() if v.get("turnback") == tb]
        if others:
            # One turnback session per agent session needs many sessions per store; until the store
            # has them, a new agent session continues the live session's chain of turns.
            self.log(f"{self.key}: continues turnback session {tb} (also fed by {', '.join(others)})")
        s = {"agent": self.ev.agent, "sessionId": self.ev.session, "turnback": tb,
             "source": self.ev.source, "created": time.time(), "transcript": self.ev.transcript,
             "turn": None, "pending": {}, "seq": 0, "turns": {}, "noticed": [],
             "epoch": info.get("epoch", 0), "turnCount": info.get("turnCount", 0), "offer": None}
        self.data["sessions"][self.key] = s
        return s

    def _follow_session(self, s: dict, session_id: str | None) -> None:
        """A store's session id is settled by its first publication; follow it if it moved."""
        if session_id and s.get("turnback") != session_id:
            s["turnback"] = session_id

    def on_session_start(self, s: dict) -> None:
        source = self.ev.source or "startup"
        if self.ev.transcript:
            s["transcript"] = self.ev.transcript
        if source in ("startup", "clear", "fork"):
            self._close_stale_turns(except_key=self.key)
        if s.get("turn") is not None and source in ("startup", "clear"):
            self._close_turn(s, "cancelled", why=f"the agent session started again ({source})")
        self.log(f"{self.key}: session start ({source}) -> turnback session {s['turnback']}")
        self._rewind_notice(s)

    def on_session_end(self, s: dict) -> None:
        if s.get("turn") is not None:
            self._close_turn(s, "cancelled", why="the agent session ended inside the turn")
        self.log(f"{self.key}: session end")

    def _close_stale_turns(self, except_key: str) -> None:
        """Another agent session of this store left a turn running (it died without a Stop)."""
        for key, other in self.data["sessions"].items():
            if key != except_key and other.get("turn") is not None:
                self._close_turn(other, "cancelled", why=f"{key} never stopped; a new session began")

    # -- turns ------------------------------------------------------------------------------------
    def on_prompt(self, s: dict) -> None:
        self._rewind_notice(s)
        if self.ev.agent == "claude-code":
            self._agent_rewind(s, self.ev.prompt)
        if s.get("turn") is not None:
            self._close_turn(s, "cancelled", why="a new prompt came before the previous turn stopped")
        self._begin(s, self.ev.prompt or "")

    def _begin(self, s: dict, prompt: str) -> int:
        result = self.port.call("turnback/turn/begin", {"kind": "chat", "prompt": prompt})
        n = result["turn"]
        s["turn"] = n
        s["turns"][str(n)] = {"prompt": prompt[:PROMPT_CLIP]}
        return n

    def _ensure_turn(self, s: dict) -> int:
        if s.get("turn") is not None:
            return s["turn"]
        self.log(f"{self.key}: {self.ev.name} with no turn running: beginning one with no prompt")
        return self._begin(s, "")

    def on_stop(self, s: dict) -> None:
        n = s.get("turn")
        if n is None:
            text = self.ev.message or ""
            self.log(f"{self.key}: {self.ev.name} with no turn running: nothing to settle"
                     + (f"; the answer was: {text[:500]!r}" if text else ""))
            return
        recs = transcript.records(self.ev.transcript or s.get("transcript"))
        uuid, text = transcript.last_assistant(recs)
        text = self.ev.message or text
        self._flush(s, final=True)
        if text:
            self.port.call("turnback/turn/respond", {"turn": n, "text": text, "final": True})
        self.port.call("turnback/turn/settle", {"turn": n, "status": "settled"})
        entry = s["turns"].setdefault(str(n), {})
        prompt = transcript.last_prompt(recs)
        if prompt is not None:
            entry["promptUuid"] = prompt.get("uuid")
            entry["promptParent"] = prompt.get("parentUuid")
        if uuid:
            entry["uuid"] = uuid
        entry["files"] = self._turn_files(n)
        s["turn"], s["turnCount"] = None, n
        if self.ev.agent == "claude-code" and prompt is not None:
            self._agent_rewind(s, None, record=prompt, current=n)

    def _turn_files(self, n: int) -> list[str]:
        log = self.port.call("turnback/session/log", {})
        self._follow_session(self.data["sessions"][self.key], log.get("sessionId"))
        for t in log.get("turns", []):
            if t.get("turn") == n:
                return sorted(f.get("path") or f.get("uri") for f in t.get("files", []))
        return []

    def _close_turn(self, s: dict, status: str, *, why: str) -> None:
        n = s["turn"]
        self.log(f"{s['agent']}:{s['sessionId']}: turn {n} {status}: {why}")
        try:
            self._flush(s, final=True)
            self.port.call("turnback/turn/settle", {"turn": n, "status": status})
        except PortError as exc:  # it may have been settled or rewound by someone else meanwhile
            self.log(f"turn {n} could not be closed: [{exc.code}] {exc}")
        s["turn"] = None

    def on_subagent_stop(self, s: dict) -> None:
        n = self._ensure_turn(s)
        text = transcript.helper_text(self.ev.agent_transcript) or self.ev.message or ""
        agent_id = self.ev.agent_id or "helper"
        self.port.call("turnback/agent/transcript",
                       {"agentId": agent_id, "turn": n, "text": text, "final": True})

    # -- tools ------------------------------------------------------------------------------------
    def on_pre_tool(self, s: dict) -> None:
        self._ensure_turn(s)
        use = classify(self.ev.tool, self.ev.tool_input, self.ev.cwd)
        key = self.ev.tool_key()
        if key in s["pending"]:
            self.log(f"{self.key}: a second PreToolUse for tool call {key}; the first is kept")
            return
        s["seq"] += 1
        # Tool calls begun while others are still unfinished run in parallel: one batch, logged in
        # the order of their tool ids once all of them are done; a batch alone keeps its own place.
        open_batches = [p["batch"] for p in s["pending"].values() if p.get("done") is None]
        batch = min(open_batches) if open_batches else s["seq"]
        s["pending"][key] = {"seq": s["seq"], "batch": batch, "tool": self.ev.tool, "group": use.group,
                             "kind": use.kind, "paths": use.paths, "summary": use.summary,
                             "command": use.command, "done": None}
        if use.restorable:
            self._capture(use.paths, "before")

    def on_post_tool(self, s: dict, failed: bool = False) -> None:
        key = self.ev.tool_key()
        use = classify(self.ev.tool, self.ev.tool_input, self.ev.cwd)
        pending = s["pending"].get(key)
        if pending is None:
            self.log(f"{self.key}: {self.ev.name} for tool call {key} ({self.ev.tool}) with no "
                     "PreToolUse: recorded as a step of its own (its before-image may be unknown)")
            self._ensure_turn(s)
            s["seq"] += 1
            pending = s["pending"][key] = {"seq": s["seq"], "batch": s["seq"], "tool": self.ev.tool,
                                           "done": None}
        outside = self._capture(use.paths, "after") if use.restorable else []
        pending["done"] = self._step_params(use, outside, failed)
        self._flush(s)

    def on_tool_failed(self, s: dict) -> None:
        self.on_post_tool(s, failed=True)

    def _step_params(self, use: ToolUse, outside: list[str], failed: bool) -> dict:
        params = {"kind": use.kind, "summary": use.summary}
        if use.group == "shell":
            scope, why = self.config.shell_scope(use.command or "")
            params["scope"] = scope
            params["summary"] = f"{use.summary} [scope {scope}: {why}]"
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

    def _flush(self, s: dict, *, final: bool = False) -> None:
        """Log finished tool calls in the order they began; with `final`, the unfinished ones too,
        as steps of unknown scope (a Pre without a Post: denied, failed or interrupted)."""
        n = s.get("turn")
        order = sorted(s["pending"].items(), key=lambda kv: (kv[1].get("batch", kv[1]["seq"]), kv[0]))
        unfinished = {p.get("batch", p["seq"]) for p in s["pending"].values() if p.get("done") is None}
        for key, p in order:
            params = p.get("done")
            if not final and (params is None or p.get("batch", p["seq"]) in unfinished):
                break
            if params is None:
                if p.get("group") == "file":
                    self._capture(p.get("paths", []), "after")
                params = {"kind": p.get("kind") or "other",
                          "summary": f"{p.get('summary') or p.get('tool')} (began but never "
                                     "finished: denied, failed or interrupted)"}
            if n is not None:
                self.port.call("turnback/turn/step", {"turn": n, **params})
            del s["pending"][key]

    def _capture(self, paths: list[str], phase: str) -> list[str]:
        """Capture the paths; returns those outside the workspace (refused, and a gap)."""
        if not paths:
            return []
        result = self.port.call("turnback/turn/capture",
                                {"uris": [_uri(p) for p in paths], "phase": phase})
        outside = {g.get("uri") for g in result.get("gaps", []) if g.get("reason") == "outside-workspace"}
        return [p for p in paths if _uri(p) in outside]

    # -- the conversation's side of a rewind --------------------------------------------------------
    def _rewind_notice(self, s: dict) -> None:
        """After a committed turnback rewind (or redo), tell the model what happened, once."""
        info = self.port.call("turnback/session/info", {})
        self._follow_session(s, info.get("sessionId"))
        epoch = info.get("epoch")
        if not isinstance(epoch, int) or epoch <= s.get("epoch", 0):
            return
        k = info.get("turnCount", 0)
        gone = sorted(int(n) for n in s["turns"] if int(n) > k)
        files = sorted({f for n in gone for f in s["turns"][str(n)].get("files", [])})
        for n in gone:
            del s["turns"][str(n)]
        s["epoch"], s["turnCount"] = epoch, k
        last = s["turns"].get(str(k), {}).get("prompt")
        where = f"the end of turn {k}" + (f" (prompt: {last!r})" if last else "") if k else \
            "the start of the session (no turn survives)"
        text = (f"turnback rewound this conversation and the workspace files to {where}. "
                f"Everything after that point was undone"
                + (f"; the files it changed back: {', '.join(files)}" if files else "")
                + ". Do not assume any later change still exists; read files again before editing.")
        self.reply.context = text
        self.log(f"{self.key}: told the agent about the rewind to turn {k} (epoch {epoch})")

    def _agent_rewind(self, s: dict, prompt: str | None, *, record: dict | None = None,
                      current: int | None = None) -> None:
        """Claude Code's own /rewind: the newest prompt's parent is the end of an earlier turn than
        the last one. Offer the matching file rewind, which also covers shell edits."""
        if record is None:
            recs = transcript.records(self.ev.transcript or s.get("transcript"))
            record = transcript.last_prompt(recs, prompt)
        if record is None or record.get("uuid") in s["noticed"]:
            return
        known_prompts = {v.get("promptUuid") for n, v in s["turns"].items()
                         if current is None or int(n) != current}
        if record.get("uuid") in known_prompts:
            return
        ends = {v["uuid"]: int(n) for n, v in s["turns"].items() if v.get("uuid")}
        latest = max((int(n) for n, v in s["turns"].items() if v.get("uuid")
                      and (current is None or int(n) < current)), default=None)
        if latest is None:
            return
        parent = record.get("parentUuid")
        j = 0 if parent is None else ends.get(parent)
        if j is None or j >= latest:
            return
        s["noticed"].append(record.get("uuid"))
        command = f"turnback rewind --after-response {j} --yes" if j else \
            "turnback rewind --before-prompt 1 --yes"
        s["offer"] = {"turn": j, "after": latest, "command": command, "detected": time.time()}
        self.reply.message = (
            f"turnback: Claude Code's /rewind took the conversation back to the end of turn {j}, "
            f"but files changed by turns {j + 1}..{latest} (shell edits included, which Claude "
            f"Code's checkpoints miss) may still be there. To rewind the files too: {command}")
        self.log(f"{self.key}: Claude Code /rewind to turn {j} detected; offered: {command}")


def _uri(path: str) -> str:
    return Path(path).as_uri()
