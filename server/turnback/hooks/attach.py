"""Which turnback session an agent session feeds (docs/agents/README.md, "Sessions").

One agent session feeds one turnback session. The first event of an agent session turnback has not
seen adopts the live session when it is empty and no other agent session feeds it (or when an
editor began a directive attempt there for the agent to make), else starts a new one. A session
turnback forked in place is followed into its branch; one parked because another agent session
took the store continues in a child.
"""

from __future__ import annotations

import time

from ..agents import agenttranscript
from ..agents.agentrecord import waiting_for
from .port import PortError

NEW_CONVERSATION = ("startup", "clear", "fork")


class AttachMixin:
    def _owner_of(self, turnback_id: str) -> str | None:
        """The other agent session that feeds this turnback session, if any."""
        for key, other in self.data["sessions"].items():
            if key != self.key and other.get("turnback") == turnback_id:
                return key
        return None

    def _attach(self) -> dict:
        """One turnback session per agent session: an empty live session nobody feeds is adopted;
        otherwise a new session is started (the live one is parked, nothing on disk changes)."""
        info = self.info()
        s = {"agent": self.ev.agent, "sessionId": self.ev.session, "turnback": info["sessionId"],
             "source": self.ev.source, "created": time.time(), "transcript": self.ev.transcript,
             "turn": None, "pending": {}, "seq": 0, "ends": {}, "noticed": [], "helpers": {},
             "finished": [], "line": [], "epoch": info.get("epoch", 0),
             "turnCount": info.get("turnCount", 0), "offer": None,
             "provisional": info.get("headSeq") is None}
        self.data["sessions"][self.key] = s
        earlier = self._resumed_from() if (self.ev.source or "") == "resume" else None
        if earlier is not None:
            # `claude --resume … --resume-session-at …` may continue under a new session id; its
            # transcript holds the records of the turns it resumes, so it is the same conversation.
            old = self.data["sessions"][earlier]
            s.update(turnback=old["turnback"], ends=dict(old.get("ends", {})),
                     turns=dict(old.get("turns", {})), line=list(old.get("line", [])),
                     epoch=old.get("epoch", 0), turnCount=old.get("turnCount", 0),
                     provisional=old.get("provisional", False), notice=old.get("notice"))
            self.log(f"{self.key}: resumes {earlier} (its transcript holds that session's turns)")
            return s
        running = (info.get("agent") or {}).get("running")
        if running and running.get("kind") == "directive" and not running.get("agent"):
            self.log(f"{self.key}: the live session runs directive attempt {running['turn']} begun "
                     "by an editor: joining it")
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
        uuids = {r.get("uuid") for r in agenttranscript.read(self.ev.transcript)} - {None}
        if not uuids:
            return None
        best, best_n = None, 0
        for key, other in self.data["sessions"].items():
            if key == self.key or other.get("agent") != self.ev.agent:
                continue
            ends = list((other.get("ends") or {}).values()) + list((other.get("turns") or {}).values())
            n = sum(1 for t in ends if isinstance(t, dict) and t.get("uuid") in uuids)
            if n > best_n:
                best, best_n = key, n
        return best

    def _start_session(self, s: dict, parent: str | None, *, why: str) -> bool:
        live = self.info()
        owner = self._owner_of(live["sessionId"])
        if owner is not None and self.data["sessions"][owner].get("turn") is not None:
            other = self.data["sessions"][owner]
            if waiting_for(other, self.now):
                # Two agent sessions at once in one workspace: the store has one live session, and
                # the other one is mid-turn, so this one shares it rather than cutting that turn short.
                self.log(f"{self.key}: {why}, but {owner} is in the middle of a turn; sharing turnback "
                         f"session {live['sessionId']} with it")
                s["turnback"] = live["sessionId"]
                return False
            self.close_turn(other, why=self._quiet(owner, other))
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
        self.changed()
        s.update(turnback=entry["sessionId"], ends={}, line=[], epoch=0, turnCount=0,
                 provisional=False)
        self.log(f"{self.key}: {why}: started turnback session {entry['sessionId']}"
                 + (f" (lineage parent {parent})" if parent else ""))
        return True

    def ensure_live(self, s: dict) -> None:
        """The agent session's turnback session must be the live one before a turn begins. After a
        fork in place of that session, the agent goes on in the branch; after another agent session
        took over the store, in a new session whose lineage parent is this one's (a parked session
        takes no new turns)."""
        info = self.info()
        if info["sessionId"] == s["turnback"]:
            return
        if s.get("provisional"):
            s["turnback"] = info["sessionId"]  # an unpublished store settled its session id
            return
        if info.get("parentId") == s["turnback"] and self._owner_of(info["sessionId"]) is None:
            self.log(f"{self.key}: turnback session {s['turnback']} was forked; going on in its "
                     f"branch {info['sessionId']}")
            s["forked"] = {"from": s["turnback"], "at": self.now}
            s["turnback"] = info["sessionId"]
            return
        self._start_session(s, s["turnback"], why="its turnback session is no longer the live one")

    def close_idle_others(self) -> None:
        """Another agent session's turn in the live session whose agent is no longer working on it
        (it died without a Stop or a SessionEnd): closed now, so this one can begin. (One that is
        still working is another agent at work.)"""
        live = self.info().get("sessionId")
        for key, other in self.data["sessions"].items():
            if key != self.key and other.get("turn") is not None and other.get("turnback") == live \
                    and not waiting_for(other, self.now):
                self.close_turn(other, why=self._quiet(key, other))

    def _quiet(self, key: str, other: dict) -> str:
        silent = int(self.now - (other.get("active") or self.now))
        return f"{key} never stopped (silent for {silent // 60} min {silent % 60} s) and {self.key} began"
