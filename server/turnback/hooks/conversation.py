"""The conversation's side of turnback (docs/agents/README.md, "The conversation rewinds too").

* At each Stop: the turn's answer, and the transcript record that ended the turn (its resume point:
  `claude --resume S --resume-session-at U`), found by the turn's prompt and answer, waiting briefly
  for it to reach the transcript, or left to be resolved when a rewind needs it.
* After a rewind, Redo or fork: the notice that tells the model what happened, printed where the
  agent reads it (agents.py `CONTEXT`) and counted as told only where it surely does (`DELIVERS`).
* Claude Code's own /rewind, seen in the transcript: the matching file rewind offered.
"""

from __future__ import annotations

import time

from ..agents import agenttranscript
from ..agents.agentrecord import turn_key
from .agents import CONTEXT, DELIVERS
from .port import PortError
from .transcript import last_prompt

ANSWER_KEEP = 4000
ENDS_KEEP = 200  # turn ends kept per agent session (every branch's; the record is read per event)
RESOLVE_LATE = 3  # pending resume points looked for again at each prompt


class ConversationMixin:
    # -- the answer and the resume point ------------------------------------------------------------
    def answer(self, s: dict, n: int) -> str | None:
        """Record the turn's answer (the payload's, or the transcript's) and its resume point."""
        entry = s["ends"].setdefault(s.get("turnKey") or f"{n}@?", {"n": n})
        path = self.ev.transcript or s.get("transcript")
        text = self.ev.message
        if self.ev.agent == "claude-code" and path:
            complete = self.ev.kind == "stop"  # a failed or interrupted turn writes no last record
            started = time.monotonic()
            prompt, end, waited = agenttranscript.wait_for_end(
                path, wait=self.config.resume_wait if complete else 0,
                prompt_id=entry.get("promptId"), prompt_uuid=entry.get("promptUuid"),
                prompt_digest=entry.get("promptDigest"), answer=text)
            if prompt is not None:
                entry.update(promptUuid=prompt.get("uuid"), promptParent=prompt.get("parentUuid"))
                if text is None:
                    text = agenttranscript.answer_of(agenttranscript.read(path), prompt)
            if end is not None:
                entry.update(uuid=end.get("uuid"), pending=False)
                if waited >= agenttranscript.RESUME_POLL:
                    self.log(f"{self.key}: turn {n}'s last record reached the transcript "
                             f"{waited * 1000:.0f} ms after its Stop")
            else:
                entry.update(uuid=None, pending=complete)
                self.log(f"{self.key}: turn {n}'s last record is not in the transcript "
                         f"({(time.monotonic() - started) * 1000:.0f} ms after its Stop); it is "
                         "looked for again at the next prompt and when a rewind needs it")
        if self.ev.agent == "copilot" and text is None and self.ev.kind == "stop" and path:
            text = self._copilot_answer(path, entry, n)
        if text:
            entry["answer"] = text[-ANSWER_KEEP:]
            self.port.call("turnback/turn/respond", {"turn": n, "text": text, "final": True})
        return text

    def _copilot_answer(self, path: str, entry: dict, n: int) -> str | None:
        """The turn's answer from Copilot's transcript, waiting for it as long as a Claude Code
        Stop waits for its last record (`resume_wait`)."""
        deadline = time.monotonic() + self.config.resume_wait
        while True:
            text = agenttranscript.copilot_answer(agenttranscript.read(path), entry.get("promptDigest"))
            if text is not None or time.monotonic() >= deadline:
                break
            time.sleep(agenttranscript.RESUME_POLL)
        if text is None:
            self.log(f"{self.key}: turn {n}'s answer is not in Copilot's transcript yet "
                     f"({self.config.resume_wait * 1000:.0f} ms after its agentStop): not recorded")
        return text

    def resolve_pending_ends(self, s: dict) -> None:
        """Resume points a Stop could not find yet: by the next prompt the records are written."""
        path = self.ev.transcript or s.get("transcript")
        pending = [s["ends"][k] for k in s["line"][-RESOLVE_LATE:]
                   if (s["ends"].get(k) or {}).get("pending")]
        for entry in pending:
            _prompt, end = agenttranscript.resolve(
                path, prompt_id=entry.get("promptId"), prompt_uuid=entry.get("promptUuid"),
                prompt_digest=entry.get("promptDigest"), answer=entry.get("answer"))
            if end is not None:
                entry.update(uuid=end.get("uuid"), pending=False)
                self.log(f"{self.key}: turn {entry.get('n')}'s last record found: {end.get('uuid')}")

    def after_settle(self, s: dict, n: int) -> None:
        """The turn's files (for the notice after a rewind), and Claude Code's own /rewind seen at
        this turn's Stop."""
        last = s.get("last") or {}
        entry = s["ends"].get(last.get("key") or "")
        if entry is not None:
            entry["files"] = self._turn_files(n)
        if len(s["ends"]) > ENDS_KEEP:
            live = set(s["line"])
            for key in [k for k in s["ends"] if k not in live][: len(s["ends"]) - ENDS_KEEP]:
                del s["ends"][key]
        if self.ev.agent == "claude-code" and entry is not None and entry.get("promptUuid"):
            recs = agenttranscript.read(self.ev.transcript or s.get("transcript"))
            record = agenttranscript.find_prompt(recs, uuid=entry["promptUuid"])
            if record is not None:
                self.agent_rewind(s, None, record=record, current=n)

    def _turn_files(self, n: int) -> list[str]:
        try:  # one turn, not the whole log (a 300-turn session's is about 1 MiB)
            log = self.port.call("turnback/session/log", {"turn": n})
        except PortError as exc:
            if exc.code != "unknown-turn":
                raise
            return []  # rewound away meanwhile
        s = self.data["sessions"][self.key]
        if s.get("provisional"):  # the first publication settled the store's session id
            s["turnback"], s["provisional"] = log.get("sessionId") or s["turnback"], False
        for t in log.get("turns", []):
            if t.get("turn") == n:
                return sorted(f.get("path") or f.get("uri") for f in t.get("files", []))
        return []

    # -- the notice ---------------------------------------------------------------------------------
    def tell(self, s: dict) -> None:
        """After a committed rewind, Redo or fork of this agent's session, tell the model what
        happened: on the first event whose context it reads, and again until one it surely does."""
        info = self.info()
        epoch = info.get("epoch")
        if info.get("sessionId") != s.get("turnback"):
            return
        if isinstance(epoch, int) and epoch > s.get("epoch", 0):
            s["notice"] = {"text": self._notice_text(s, info), "epoch": epoch, "at": self.now}
            s["epoch"], s["turnCount"] = epoch, info.get("turnCount", 0)
            s.pop("forked", None)
        notice = s.get("notice")
        if not notice:
            return
        agent, kind = self.ev.agent, self.ev.kind
        if kind not in CONTEXT.get(agent, ()):
            if not notice.get("silent") and not CONTEXT.get(agent):
                notice["silent"] = True
                self.log(f"{self.key}: {agent} reads no hook output: the model cannot be told of the "
                         f"change (epoch {notice['epoch']})")
            return
        self.reply.context = notice["text"]
        if kind in DELIVERS.get(agent, ()):
            s["notice"] = None
            s["told"] = {"epoch": notice["epoch"], "event": self.ev.name, "at": self.now}
            self.log(f"{self.key}: told the agent about the change (epoch {notice['epoch']}) "
                     f"with its {self.ev.name}")
        else:
            self.log(f"{self.key}: said the change (epoch {notice['epoch']}) at {self.ev.name}, "
                     "which the agent may not pass on (Claude Code drops it after "
                     "--resume-session-at): said again with the next prompt")

    def _notice_text(self, s: dict, info: dict) -> str:
        log = self.port.call("turnback/session/log", {})
        live = [(turn_key(t["turn"], t.get("started")), t) for t in log.get("turns", [])]
        keys = [k for k, _ in live]
        before = s["line"] or [k for k, e in s["ends"].items() if e.get("n", 0) <= s.get("turnCount", 0)]
        gone = [k for k in before if k not in keys]
        back = [k for k in keys if k not in before]
        s["line"] = keys
        k = info.get("turnCount", 0)
        last = live[-1][1].get("prompt") if live else None
        where = (f"the end of turn {k}" + (f" (prompt: {last[:120]!r})" if last else "")) if k else \
            "the start of the session (no turn survives)"
        forked = s.get("forked")
        verb = "forked this conversation into a new branch, which" if forked else \
            "changed this conversation and the workspace files: they"
        parts = [f"turnback {verb} now stand{'s' if forked else ''} at {where}."]

        def names(ks):
            out = []
            for key in ks:
                e = s["ends"].get(key) or {}
                n = e.get("n") or key.split("@", 1)[0]
                out.append(f"turn {n}" + (f" ({e['prompt'][:60]!r})" if e.get("prompt") else ""))
            return ", ".join(out)

        files = sorted({f for key in gone + back for f in (s["ends"].get(key) or {}).get("files", [])})
        if gone:
            parts.append(f"Undone: {names(gone)}.")
        if back:
            parts.append(f"Brought back (Redo): {names(back)}.")
        if files:
            parts.append(f"Files changed by this: {', '.join(files)}.")
        parts.append("Do not assume any change you remember from the undone turns still exists; "
                     "read files again before editing.")
        return " ".join(parts)

    # -- Claude Code's own /rewind ------------------------------------------------------------------
    def agent_rewind(self, s: dict, prompt: str | None, *, record: dict | None = None,
                     current: int | None = None) -> None:
        """Claude Code's own /rewind: the newest prompt's parent is the end of an earlier turn than
        the last one. Offer the matching file rewind, which also covers shell edits."""
        if record is None:
            recs = agenttranscript.read(self.ev.transcript or s.get("transcript"))
            record = last_prompt(recs, prompt)
        if record is None or record.get("uuid") in s["noticed"]:
            return
        live = [s["ends"][k] for k in s["line"] if k in s["ends"]]
        if record.get("uuid") in {e.get("promptUuid") for e in live
                                  if current is None or e.get("n") != current}:
            return
        ends = {e["uuid"]: e["n"] for e in live if e.get("uuid")}
        latest = max((e["n"] for e in live if e.get("uuid")
                      and (current is None or e["n"] < current)), default=None)
        if latest is None:
            return
        parent = record.get("parentUuid")
        j = 0 if parent is None else ends.get(parent)
        if j is None or j >= latest:
            return
        s["noticed"] = (s["noticed"] + [record.get("uuid")])[-50:]
        command = f"turnback rewind --after-response {j} --yes" if j else \
            "turnback rewind --before-prompt 1 --yes"
        s["offer"] = {"turn": j, "after": latest, "command": command, "detected": time.time()}
        self.reply.message = (
            f"turnback: Claude Code's /rewind took the conversation back to the end of turn {j}, "
            f"but files changed by turns {j + 1}..{latest} (shell edits included, which Claude "
            f"Code's checkpoints miss) may still be there. To rewind the files too: {command}")
        self.log(f"{self.key}: Claude Code /rewind to turn {j} detected; offered: {command}")
