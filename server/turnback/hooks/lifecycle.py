"""How every turn an agent's hooks begin comes to an end (docs/agents/README.md, "Every turn ends").

A turn begins with a prompt and is settled by what ends it in the agent: its Stop (once the helper
agents it launched are done), a StopFailure (an API error), an interrupt, the session's end, or the
next prompt; an idle one is settled by whatever needs the session next (a rewind, Redo, fork or
another turn: workbench/turns.py `settle_idle_job`). A Stop another Stop hook blocked (the agent goes
on: `stop_hook_active`, or the same prompt id after the Stop) continues the same turn. Helpers
(`SubagentStart`/`SubagentStop`, `agent_id`) are steps of the turn that launched them.
"""

from __future__ import annotations

import os

from ..agents import agenttranscript
from ..agents.agentrecord import QUIET_SECONDS, waiting_for
from .port import PortError

PROMPT_CLIP = 300
CONTINUE_SECONDS = QUIET_SECONDS  # a Stop another Stop hook blocked goes on within this
ANSWER_KEEP = 4000  # of a turn's answer, kept to find its record in the transcript later


class LifecycleMixin:
    # -- which turn an event belongs to -------------------------------------------------------------
    def working(self, s: dict) -> list[dict]:
        try:
            mtime = os.stat(s["transcript"]).st_mtime if s.get("transcript") else None
        except OSError:
            mtime = None
        return waiting_for(s, self.now, transcript_mtime=mtime)

    def reconcile(self, s: dict) -> None:
        """The turn the record says this agent session is in, when it no longer runs (a settle from
        an editor or the command line): the record follows."""
        n = s.get("turn")
        if n is None:
            return
        info = self.info()
        running = (info.get("agent") or {}).get("running") or {}
        if running.get("turn") == n and (info["sessionId"] == s["turnback"] or s.get("provisional")):
            return
        dropped = len(s["pending"])
        self.log(f"{self.key}: turn {n} was closed by someone else (an editor, the command line or a "
                 f"rewind); the record follows" + (f", {dropped} unfinished tool call(s) dropped"
                                                   if dropped else ""))
        s.update(turn=None, stopped=None, pending={}, interrupted=False,
                 last={"n": n, "key": s.get("turnKey"), "promptId": s.get("promptId"),
                       "how": "elsewhere", "at": self.now})

    def turn_of(self, s: dict) -> int | None:
        """The running turn this agent session's events go to: its own, or the one of the agent
        session it shares the live session with."""
        if s.get("turn") is not None:
            return s["turn"]
        running = (self.info().get("agent") or {}).get("running") or {}
        if s.get("turnback") == self.info().get("sessionId") and (running.get("agent") or {}):
            return running.get("turn")
        return None

    def turn_for(self, s: dict) -> int | None:
        """The turn a tool (or stop) event belongs to, or None when it belongs to none: a late
        continuation reopens the turn it continues; a new prompt turnback never saw begin is begun
        (the prompt's text from the transcript); so does an event of an agent session that never had
        a turn (hooks installed mid-turn); anything else (after the last Stop, with no prompt) opens
        none."""
        ev = self.ev
        n = s.get("turn")
        missed = self._missed_prompt(s)
        if n is not None:
            if missed is not None:
                self.log(f"{self.key}: {ev.name} of a new prompt ({ev.prompt_id}) whose prompt event "
                         f"never came: turn {n} ends here")
                self.close_turn(s, why="a new prompt began without its prompt event")
                return self.begin(s, missed)
            if s.get("stopped") and not ev.agent_id and ev.kind != "stop":
                self.log(f"{self.key}: turn {n} goes on after its Stop (a Stop hook said go on)")
                s["stopped"] = None
            return n
        shared = self.turn_of(s)
        if shared is not None:
            return shared
        last = s.get("last") or {}
        if self._continues(last):
            return self.reopen(s, last)
        if missed is not None:
            self.log(f"{self.key}: {ev.name} of a prompt ({ev.prompt_id}) whose prompt event never "
                     "came (its record is in the transcript): beginning its turn")
            return self.begin(s, missed)
        if not s["ends"] and not last and not ev.agent_id and ev.kind != "stop":
            # no turn of this agent session was ever seen (its hooks were installed mid-turn, or
            # its prompt event was lost): what it does now is a turn, which its Stop will end
            self.log(f"{self.key}: {ev.name} with no turn running, and none seen before in this "
                     "session: beginning one with no prompt")
            return self.begin(s, "")
        return None

    def _continues(self, last: dict) -> bool:
        """This event goes on with the turn that just ended: a Stop saying another Stop hook said "go
        on" (`stop_hook_active`), or a tool event of that turn's prompt soon after its end (a blocked
        Stop goes on at once; later, the same prompt id is a stray event, which opens nothing)."""
        if last.get("how") not in ("stop", "elsewhere", "idle") or self.ev.agent_id:
            return False
        if self.ev.prompt_id and self.ev.prompt_id != last.get("promptId"):
            return False
        if self.ev.kind == "stop":
            return bool(self.ev.stop_active)
        return bool(self.ev.prompt_id) and self.now - (last.get("at") or 0) < CONTINUE_SECONDS

    def _missed_prompt(self, s: dict) -> str | None:
        """The text of the prompt this event belongs to when turnback never saw its prompt event:
        a prompt id no turn of this session has, whose prompt record is in the transcript (the record
        is what tells a real prompt from a stray event). None otherwise."""
        pid = self.ev.prompt_id
        if not pid or self.ev.agent_id or pid == s.get("promptId") \
                or pid in {e.get("promptId") for e in s["ends"].values()}:
            return None
        prompt = agenttranscript.find_prompt(
            agenttranscript.read(self.ev.transcript or s.get("transcript")), prompt_id=pid)
        return agenttranscript.text_of(prompt) if prompt else None

    # -- beginning --------------------------------------------------------------------------------
    def begin(self, s: dict, prompt: str) -> int | None:
        """A turn for this agent session's prompt, or its place in a directive attempt an editor
        began for it (issue 26: one turn, the attempt's)."""
        try:
            result = self.port.call("turnback/turn/begin", {"kind": "chat", "prompt": prompt})
        except PortError as exc:
            if exc.code != "turn-running":
                raise
            joined = self._join_directive()
            if joined is None:
                other = self._turn_holder()
                if other is None:
                    raise
                self.log(f"{self.key}: its prompt came while turn {exc.data.get('turn')} of {other} "
                         "runs (that agent is still working): no turn of its own; its tool calls "
                         "are steps of that turn")
                return None
            result = joined
            s["joined"] = result["directiveId"]
        self.changed()
        n = result["turn"]
        started = result.get("started")
        if started is None:  # an owner of an older turnback answered
            turns = self.port.call("turnback/session/log", {}).get("turns", [])
            started = next((t.get("started") for t in turns if t.get("turn") == n), None)
        self._enter(s, n, started, prompt)
        if result.get("settledFirst"):
            self.log(f"{self.key}: {result['settledFirst'].get('text')}")
        return n

    def _enter(self, s: dict, n: int, started, prompt: str) -> None:
        from ..agents.agentrecord import turn_key

        key = turn_key(n, started)
        s.update(turn=n, turnKey=key, promptId=self.ev.prompt_id, stopped=None, interrupted=False,
                 last=None)
        s["ends"][key] = {"n": n, "prompt": prompt[:PROMPT_CLIP],
                          "promptDigest": agenttranscript.digest(prompt),
                          **({"promptId": self.ev.prompt_id} if self.ev.prompt_id else {})}
        s["line"] = [k for k in s["line"] if int(k.split("@", 1)[0]) < n] + [key]  # the live turns

    def _turn_holder(self) -> str | None:
        """The other agent session whose turn is running in the live session."""
        running = (self.info(fresh=True).get("agent") or {}).get("running") or {}
        return next((k for k, o in self.data["sessions"].items()
                     if k != self.key and o.get("turn") == running.get("turn")
                     and o.get("turnback") == self.info().get("sessionId")), None)

    def _join_directive(self) -> dict | None:
        """A directive attempt an editor began (`turn/begin` kind `directive`) that no agent session
        is in: this agent's turn is that attempt."""
        running = (self.info(fresh=True).get("agent") or {}).get("running")
        if not running or running.get("kind") != "directive" or running.get("agent"):
            return None
        if any(o.get("turn") == running["turn"] for k, o in self.data["sessions"].items()
               if k != self.key):
            return None
        self.log(f"{self.key}: joins directive attempt {running['turn']} "
                 f"({running.get('directiveId')}), begun by an editor")
        return {"turn": running["turn"], "started": running["started"],
                "directiveId": running.get("directiveId")}

    def reopen(self, s: dict, last: dict) -> int | None:
        """The turn that just ended goes on (a Stop hook said "go on"): reopened when nothing changed
        since it ended, else continued in a new turn with the same prompt."""
        n = last.get("n")
        entry = s["ends"].get(last.get("key") or "", {})
        try:
            result = self.port.call("turnback/turn/begin", {"continues": n})
        except PortError as exc:
            if exc.code not in ("cannot-continue", "invalid-params"):
                raise
            self.log(f"{self.key}: {self.ev.name} goes on with turn {n}, which cannot be reopened "
                     f"({exc}); continuing in a new turn")
            s["last"] = None
            return self.begin(s, (entry.get("prompt") or "") + " (continued)")
        self.changed()
        s.update(turn=n, turnKey=last.get("key"), promptId=last.get("promptId"), stopped=None,
                 last=None, interrupted=False)
        self.log(f"{self.key}: turn {n} goes on after its Stop (a Stop hook said go on): reopened")
        return result["turn"]

    # -- ending -----------------------------------------------------------------------------------
    def close_turn(self, s: dict, *, why: str, status: str | None = None, how: str = "closed") -> None:
        """End this agent session's turn now: settled if its Stop came (it waited for helpers),
        else cancelled (no Stop came: interrupted, crashed, or replaced)."""
        n = s.get("turn")
        if n is None:
            return
        status = status or ("settled" if s.get("stopped") else "cancelled")
        self.log(f"{s['agent']}:{s['sessionId']}: turn {n} {status}: {why}")
        live = self.info().get("sessionId")
        if live != s["turnback"] and not s.get("provisional"):
            self._ended(s, n, how)  # its session is parked: the turn was closed when it was parked
            return
        try:
            self.flush(s, final=True, turn=n)
            self._settle(n, status)
        except PortError as exc:  # it may have been settled or rewound by someone else meanwhile
            self.log(f"turn {n} could not be closed: [{exc.code}] {exc}")
            self.changed()
            self._ended(s, n, how)
            return
        self.changed()
        self._ended(s, n, how)
        if s is self.data["sessions"].get(self.key):
            self.after_settle(s, n)

    def _ended(self, s: dict, n: int, how: str) -> None:
        s.update(turn=None, stopped=None, pending={}, interrupted=False, joined=None, turnCount=n,
                 last={"n": n, "key": s.get("turnKey"), "promptId": s.get("promptId"), "how": how,
                       "at": self.now})

    def on_session_start(self, s: dict) -> None:
        source = self.ev.source or "startup"
        if self.ev.transcript:
            s["transcript"] = self.ev.transcript
        if s.get("turn") is not None and source in ("startup", "clear"):
            if self._late_start(s):
                self.log(f"{self.key}: session start came after its own first prompt "
                         f"(turn {s['turn']} goes on)")
            else:
                self.close_turn(s, why=f"the agent session started again ({source})")
        if source == "resume":
            self.ensure_live(s)
        if self.ev.agent == "claude-code":
            self.resolve_pending_ends(s)  # the last run's last record is written by now
        self.tell(s)
        self.log(f"{self.key}: session start ({source}) -> turnback session {s['turnback']}")

    def _late_start(self, s: dict) -> bool:
        """Copilot CLI does not wait for its sessionStart hook: it can arrive after the prompt it
        names (`initialPrompt`), inside the turn that prompt began. That start is not a restart."""
        entry = s["ends"].get(s.get("turnKey") or "", {})
        return (not s.get("stopped") and bool(self.ev.prompt) and bool(entry.get("promptDigest"))
                and entry["promptDigest"] == agenttranscript.digest(self.ev.prompt))

    def on_session_end(self, s: dict) -> None:
        if s.get("turn") is not None:
            self.close_turn(s, why="the agent session ended inside the turn", how="session-end")
        s["helpers"] = {}
        self.log(f"{self.key}: session end")

    def on_prompt(self, s: dict) -> None:
        if s.get("turn") is not None:
            self.close_turn(s, why=("its helpers were still running when the next prompt came"
                                    if s.get("stopped") else
                                    "a new prompt came before the previous turn stopped"))
        self.ensure_live(s)
        self.tell(s)
        if self.ev.agent == "claude-code":
            self.resolve_pending_ends(s)  # first: /rewind is seen against the turns' ends
            self.agent_rewind(s, self.ev.prompt)
        self.close_idle_others()
        self.begin(s, self.ev.prompt or "")

    def on_stop(self, s: dict) -> None:
        n = s.get("turn")
        if n is None and self._continues(s.get("last") or {}):
            n = self.reopen(s, s["last"])
        if n is None:
            text = self.ev.message or ""
            self.log(f"{self.key}: {self.ev.name} with no turn running: nothing to settle"
                     + (f"; the answer was: {text[:500]!r}" if text else ""))
            return
        waiting = self._helpers_running(s)
        # the main thread's calls still open never finished; a helper's may, after this Stop
        self.flush(s, final=not waiting)
        text = self.answer(s, n)
        if s.get("joined"):
            try:
                self.port.call("turnback/directive/record",
                               {"directiveId": s["joined"], "turn": n, "answer": text or ""})
            except PortError as exc:
                self.log(f"{self.key}: the answer to directive {s['joined']} was not recorded: "
                         f"[{exc.code}] {exc}")
        if waiting:
            s["stopped"] = {"n": n, "at": self.now, "background": self.ev.background or []}
            self.log(f"{self.key}: turn {n} stopped; it is settled when its helpers are done: "
                     + ", ".join(waiting))
            return
        self._settle_stopped(s, n, how="stop")

    def _helpers_running(self, s: dict) -> list[str]:
        """The helper agents of this session still running: those started and not stopped, and the
        subagents the event's `background_tasks` names (a SubagentStop still lists its own)."""
        names = [f"{h.get('type') or 'helper'} {agent_id}" for agent_id, h in s["helpers"].items()]
        for task in self.ev.background or []:
            if task.get("type") in ("subagent", "agent", "workflow", "teammate") \
                    and str(task.get("id")) != str(self.ev.agent_id) \
                    and not any(str(task.get("id")) in n for n in names):
                names.append(f"{task.get('type')} {task.get('id')} ({task.get('description') or ''})")
        return names

    def _settle(self, n: int, status: str) -> None:
        """Settle turn `n`. Through an owner it answers once the settle is durable (its journal
        record synced: an owner killed then comes back with the turn settled) and publishes the
        head right after, before any other change (docs/protocol.md, `answer`): what the hook
        reads next (the turn's files, the log) is the owner's live state, so it need not wait for
        the publication, and the agent goes on sooner. An older owner ignores the field. The
        direct path runs the whole job in this process anyway: it keeps the default."""
        params: dict = {"turn": n, "status": status}
        if self.port.name != "direct":
            params["answer"] = "durable"
        self.port.call("turnback/turn/settle", params)

    def _settle_stopped(self, s: dict, n: int, *, how: str, status: str = "settled") -> None:
        self._settle(n, status)
        self.changed()
        self._ended(s, n, how)
        self.after_settle(s, n)

    def on_stop_failed(self, s: dict) -> None:
        """The turn ended on an API error (Claude Code's StopFailure): what it did stays recorded, its
        partial answer too; the turn is closed as cancelled."""
        n = s.get("turn")
        if n is None:
            self.log(f"{self.key}: {self.ev.name} ({self.ev.error}) with no turn running")
            return
        self.log(f"{self.key}: turn {n} ended on an API error: {self.ev.error}")
        self.flush(s, final=True)
        self.answer(s, n)
        self._settle_stopped(s, n, how="api-error", status="cancelled")

    def on_interrupt(self, s: dict) -> None:
        if s.get("turn") is None:
            return
        if self.ev.message:
            self.answer(s, s["turn"])
        self.close_turn(s, why="the person interrupted it", how="interrupted")

    def on_answer(self, s: dict) -> None:
        """Assistant text before the stop (Cursor's afterAgentResponse)."""
        n = s.get("turn")
        if n is not None and self.ev.message:
            self.port.call("turnback/turn/respond", {"turn": n, "text": self.ev.message + "\n"})
            entry = s["ends"].get(s.get("turnKey") or "")
            if entry is not None:
                entry["answer"] = self.ev.message[-ANSWER_KEEP:]

    # -- helpers ----------------------------------------------------------------------------------
    def on_subagent_start(self, s: dict) -> None:
        agent_id = self.ev.agent_id or "helper"
        n = s.get("turn")
        s["helpers"][agent_id] = {"turn": n, "type": self.ev.agent_type, "started": self.now,
                                  "last": self.now}
        self.log(f"{self.key}: helper {self.ev.agent_type or ''} {agent_id} started in turn {n}"
                 .replace("  ", " "))

    def on_subagent_stop(self, s: dict) -> None:
        from .transcript import helper_text

        agent_id = self.ev.agent_id or "helper"
        helper = s["helpers"].pop(agent_id, None) or {}
        n = s.get("turn") if s.get("turn") is not None else helper.get("turn")
        text = helper_text(self.ev.agent_transcript) or self.ev.message or ""
        if n is not None:
            try:
                self.port.call("turnback/agent/transcript",
                               {"agentId": agent_id, "turn": n, "text": text, "final": True})
            except PortError as exc:
                self.log(f"{self.key}: helper {agent_id}'s transcript not kept: [{exc.code}] {exc}")
        if s.get("stopped") and s.get("turn") is not None:
            left = self._helpers_running(s)
            if not left:
                self.log(f"{self.key}: the last helper of turn {s['turn']} is done: settling it")
                self.flush(s, final=True)
                self._settle_stopped(s, s["turn"], how="stop")
            else:
                self.flush(s)
