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
import os
import time
from pathlib import Path

from . import guard, transcript
from .event import Event
from .port import PortError
from .tools import ToolUse, classify

RESULT_LIMIT = 256 * 1024
NEW_CONVERSATION = ("startup", "clear", "fork")
FORGET_SECONDS = 90 * 24 * 3600  # an agent session idle this long is not resumed any more
STALE_SECONDS = 30 * 60  # a running turn with no hook event for this long belongs to a dead agent
PROMPT_CLIP = 300


class Reply:
    def __init__(self):
        self.context: str | None = None  # additional context for the model (SessionStart, prompt)
        self.message: str | None = None  # a message shown to the person (systemMessage)


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
            if ev.kind == "session-start" and (ev.source or "startup") in NEW_CONVERSATION:
                self._close_stale_turns(except_key=self.key)
            s = self._attach()
        handler = getattr(self, "on_" + ev.kind.replace("-", "_"), None)
        if handler is None:
            self.log(f"{self.key}: {ev.name}: nothing to record")
        else:
            handler(s)
        s["active"] = time.time()
        self.data["current"] = self.key
        self._forget_old_sessions()
        return self.reply

    def _forget_old_sessions(self) -> None:
        """Agent sessions idle for a long time with no turn running leave the record (their turnback
        sessions stay in the store; only the link to the agent's ids goes)."""
        cutoff = time.time() - FORGET_SECONDS
        for key in [k for k, v in self.data["sessions"].items()
                    if v.get("turn") is None and v.get("active", 0) < cutoff and k != self.key]:
            del self.data["sessions"][key]

    # -- sessions ---------------------------------------------------------------------------------
    def _owner_of(self, turnback_id: str) -> str | None:
        """The other agent session that feeds this turnback session, if any."""
        for key, other in self.data["sessions"].items():
            if key != self.key and other.get("turnback") == turnback_id:
                return key
        return None

    def _attach(self) -> dict:
        """One turnback session per agent session: an empty live session nobody feeds is adopted;
        otherwise a new session is started (the live one is parked, nothing on disk changes)."""
        info = self.port.call("turnback/session/info", {})
        s = {"agent": self.ev.agent, "sessionId": self.ev.session, "turnback": info["sessionId"],
             "source": self.ev.source, "created": time.time(), "transcript": self.ev.transcript,
             "turn": None, "pending": {}, "seq": 0, "turns": {}, "noticed": [],
             "epoch": info.get("epoch", 0), "turnCount": info.get("turnCount", 0), "offer": None,
             "provisional": info.get("headSeq") is None}
        self.data["sessions"][self.key] = s
        earlier = self._resumed_from() if (self.ev.source or "") == "resume" else None
        if earlier is not None:
            # `claude --resume … --resume-session-at …` may continue under a new session id; its
            # transcript holds the records of the turns it resumes, so it is the same conversation.
            old = self.data["sessions"][earlier]
            s.update(turnback=old["turnback"], turns=dict(old.get("turns", {})),
                     epoch=old.get("epoch", 0), turnCount=old.get("turnCount", 0),
                     provisional=old.get("provisional", False))
            self.log(f"{self.key}: resumes {earlier} (its transcript holds that session's turns)")
            return s
        if info.get("turnCount", 0) or self._owner_of(info["sessionId"]) is not None:
            parent = None
            if (self.ev.source or "") in ("clear", "fork"):
                current = self.data["sessions"].get(self.data.get("current") or "")
                parent = current.get("turnback") if current else None
            self._start_session(s, parent, why=f"a new {self.ev.agent} session "
                                               f"({self.ev.source or 'first event'})")
        return s

    def _resumed_from(self) -> str | None:
        """The known agent session whose turn-ending records this session's transcript contains."""
        uuids = {r.get("uuid") for r in transcript.records(self.ev.transcript)} - {None}
        if not uuids:
            return None
        best, best_n = None, 0
        for key, other in self.data["sessions"].items():
            if key == self.key or other.get("agent") != self.ev.agent:
                continue
            n = sum(1 for t in other.get("turns", {}).values() if t.get("uuid") in uuids)
            if n > best_n:
                best, best_n = key, n
        return best

    def _start_session(self, s: dict, parent: str | None, *, why: str) -> bool:
        live = self.port.call("turnback/session/info", {})
        owner = self._owner_of(live["sessionId"])
        if owner is not None and self.data["sessions"][owner].get("turn") is not None:
            # Two agent sessions at once in one workspace: the store has one live session, and the
            # other one is mid-turn, so this one shares it rather than cutting that turn short.
            self.log(f"{self.key}: {why}, but {owner} is in the middle of a turn; sharing turnback "
                     f"session {live['sessionId']} with it")
            s["turnback"] = live["sessionId"]
            return False
        params = {"meta": {"agent": self.ev.agent, "agentSessionId": self.ev.session,
                           "source": self.ev.source}}
        if parent:
            params["parentId"] = parent
        try:
            entry = self.port.call("turnback/session/start", params)
        except PortError as exc:
            self.log(f"{self.key}: could not start a turnback session ([{exc.code}] {exc}); "
                     f"continuing in {live['sessionId']}")
            s["turnback"] = live["sessionId"]
            return False
        s.update(turnback=entry["sessionId"], turns={}, epoch=0, turnCount=0, provisional=False)
        self.log(f"{self.key}: {why}: started turnback session {entry['sessionId']}"
                 + (f" (lineage parent {parent})" if parent else ""))
        return True

    def _ensure_live(self, s: dict, info: dict) -> None:
        """The agent session's turnback session must be the live one before a turn begins: after
        another agent session took over the store, continue in a new session whose lineage parent
        is this one's (a parked session takes no new turns)."""
        if info["sessionId"] == s["turnback"]:
            return
        if s.get("provisional"):
            s["turnback"] = info["sessionId"]  # an unpublished store settled its session id
            return
        self._start_session(s, s["turnback"], why="its turnback session is no longer the live one")

    def on_session_start(self, s: dict) -> None:
        source = self.ev.source or "startup"
        if self.ev.transcript:
            s["transcript"] = self.ev.transcript
        if s.get("turn") is not None and source in ("startup", "clear"):
            self._close_turn(s, "cancelled", why=f"the agent session started again ({source})")
        info = self._rewind_notice(s)
        if source == "resume":
            self._ensure_live(s, info)
        self.log(f"{self.key}: session start ({source}) -> turnback session {s['turnback']}")

    def on_session_end(self, s: dict) -> None:
        if s.get("turn") is not None:
            self._close_turn(s, "cancelled", why="the agent session ended inside the turn")
        self.log(f"{self.key}: session end")

    def _close_stale_turns(self, except_key: str) -> None:
        """Another agent session left a turn running and has sent nothing for a long time: it died
        without a Stop or a SessionEnd. (One that is still active is another agent at work.)"""
        now = time.time()
        for key, other in self.data["sessions"].items():
            if key != except_key and other.get("turn") is not None \
                    and now - other.get("active", 0) > STALE_SECONDS:
                self._close_turn(other, "cancelled", why=f"{key} never stopped; a new session began")

    # -- turns ------------------------------------------------------------------------------------
    def on_prompt(self, s: dict) -> None:
        info = self._rewind_notice(s)
        if s.get("turn") is None:
            self._ensure_live(s, info)
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
        s = self.data["sessions"][self.key]
        if s.get("provisional"):  # the first publication settled the store's session id
            s["turnback"], s["provisional"] = log.get("sessionId") or s["turnback"], False
        for t in log.get("turns", []):
            if t.get("turn") == n:
                return sorted(f.get("path") or f.get("uri") for f in t.get("files", []))
        return []

    def _close_turn(self, s: dict, status: str, *, why: str) -> None:
        n = s["turn"]
        self.log(f"{s['agent']}:{s['sessionId']}: turn {n} {status}: {why}")
        live = self.port.call("turnback/session/info", {}).get("sessionId")
        if live != s["turnback"] and not s.get("provisional"):
            s["turn"] = None  # its session is parked: the turn was closed when it was parked
            return
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
        if guard.check(self, s, use) == "deny":
            return  # refused before it ran (hooks/guard.py): there is nothing to record
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
        written = self._shell_writes(use) if use.group == "shell" else None
        pending["done"] = self._step_params(use, outside, failed, written)
        self._flush(s)

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

    def _step_params(self, use: ToolUse, outside: list[str], failed: bool,
                     written: tuple[list[str], list[str]] | None = None) -> dict:
        params = {"kind": use.kind, "summary": use.summary}
        if use.group == "shell":
            scope, why = self.config.shell_scope(use.command or "")
            inside, beyond = written or ([], [])
            if scope == "host" and beyond:  # its redirect left the workspace: we cannot say more
                scope, why = "unknown", f"writes outside the workspace: {', '.join(beyond)}"
            params["scope"] = scope
            params["summary"] = f"{use.summary} [scope {scope}: {why}]"
            if scope == "host" and inside:
                params["uris"] = [_uri(p) for p in inside]
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
                self.log(f"{s['agent']}:{s['sessionId']}: tool call {key} ({p.get('tool')}) began "
                         f"and never finished; recorded as a gap of turn {n}")
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
    def _rewind_notice(self, s: dict) -> dict:
        """After a committed turnback rewind (or redo), tell the model what happened, once."""
        info = self.port.call("turnback/session/info", {})
        epoch = info.get("epoch")
        if info.get("sessionId") != s.get("turnback") or not isinstance(epoch, int) \
                or epoch <= s.get("epoch", 0):
            return info
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
        return info

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
