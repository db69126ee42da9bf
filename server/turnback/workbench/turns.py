"""Turn lifecycle and capture: begin, capture, step, respond, settle, agent transcripts, workflow, log."""

from __future__ import annotations

import time

from ..errors import (CannotContinue, InvalidParams, NoTurnRunning, NotFound, OutsideWorkspace,
                      SessionFrozen, TurnRunning, UnknownTurn)
from ..model.gaps import Gap
from ..model.images import ABSENT
from ..model.session import WORKFLOW_LISTS
from ..model.steps import SCOPES
from ..model.turns import TURN_KINDS, TURN_STATES
from ..store import waiting
from . import params as P


SETTLE_ANSWERS = ("published", "durable")  # when a settle answers (docs/protocol.md)


class Answer:
    """A job's answer before its end: the owner sends `result` at once and runs the rest of the job
    still holding the mutation lock, so the next mutating request waits for it (lsp/runners.py).
    Binding: the job changed the session before it answers."""

    binding = True

    def __init__(self, result: dict):
        self.early_answer = result


class TurnsFeature:
    def __init__(self, wb):
        self.wb = wb

    @property
    def book(self):
        return self.wb.book

    @property
    def state(self):
        return self.wb.book.state

    # -- begin ----------------------------------------------------------------------------------
    def begin_job(self, params):
        p = P.obj(params)
        continues = P.field(p, "continues", int, default=None, allow_none=True)
        if continues is not None:
            return (yield from self._continue_job(continues))
        kind = P.field(p, "kind", str, default="chat", choices=TURN_KINDS)
        prompt = P.field(p, "prompt", str, default="")
        directive_id = P.field(p, "directiveId", str, default=None, allow_none=True)
        instructions = P.obj(p.get("instructions"), "instructions")
        if any(not isinstance(v, str) for v in instructions.values()):
            raise InvalidParams("instructions must map names to texts")
        if kind == "directive" and directive_id is None:
            raise InvalidParams("a directive turn needs a directiveId")
        if directive_id is not None and directive_id not in self.state.directives:
            raise NotFound(f"no directive {directive_id!r} in this session",
                           data={"directiveId": directive_id})
        settled = yield from self.settle_idle_job("turn/begin")
        self._require_idle()
        yield from self.wb.sweep_job(caller_syncs=True)  # the begin's own sync covers the sweep's
        snapshot = {name: self.wb.store.objects.put(text.encode()) for name, text in instructions.items()}
        n = self.state.turn_count + 1
        started = time.time()
        self.book.record({"op": "begin", "n": n, "kind": kind, "prompt": prompt,
                          "directiveId": directive_id, "instructions": snapshot, "ts": started})
        if directive_id is not None:
            self.wb.directives.start_attempt(directive_id, n)
        yield from waiting.binding_steps(self.book.iter_sync())  # the turn has begun
        self.wb.emit_status()
        return {"turn": n, "started": started, **({"settledFirst": settled} if settled else {})}

    def _continue_job(self, n: int):
        """`turn/begin {continues: n}`: the last turn, settled, goes on (an agent's Stop hook said
        "go on", so the agent works on in the same turn). Refused with `cannot-continue` when it is
        not the last turn, is a directive attempt, or something changed since it ended (the sweep
        here finds it): then the caller begins a new turn."""
        self.book.require_owner()
        if self.state.frozen:
            raise SessionFrozen("this session is frozen; start a new session to continue")
        turn = self.state.turn(n)
        last = self.state.turns[-1] if self.state.turns else None
        if turn is None or turn is not last or turn.state == "running" or turn.directive_id:
            why = ("it is not the last turn" if turn is not last or turn is None else
                   "it is still running" if turn.state == "running" else "it is a directive attempt")
            raise CannotContinue(f"turn {n} cannot go on: {why}", data={"turn": n})
        yield from self.wb.sweep_job()  # what changed since it ended belongs to no turn
        changed = sorted(self.state.between.get(n, {}))
        if changed:
            raise CannotContinue(f"turn {n} cannot go on: {len(changed)} file(s) changed after it ended "
                                 f"({', '.join(changed[:3])})", data={"turn": n, "changed": changed})
        self.book.record({"op": "reopen", "turn": n, "ts": time.time()}, sync=True)
        self.wb.emit_status()
        return {"turn": n, "started": turn.started, "continued": True}

    def settle_idle_job(self, operation: str):
        """A turn an agent's hooks began, whose agent is no longer working on it (agents/agentrecord.py
        `waiting_for`: no tool call, helper or answer in flight), is settled now, with its sweep, so a
        rewind, Redo, fork or new turn is not refused for it; its unfinished tool calls become steps
        of unknown scope. Returns what was settled (for the confirmation), or None when no such turn
        runs. Raises `turn-running` naming what the agent still waits for."""
        running = self.state.running
        if not self.wb.is_owner:
            return None
        from ..agents.agentrecord import (AgentRecord, holder, process_gone, steps_in_order,
                                         unfinished_step)
        from .agentlinks import busy, follow_settled, idle_holder, settled_words

        if running is None:
            follow_settled(self.wb)  # a record left saying a settled turn runs (its write failed)
            return None

        record = AgentRecord(self.wb.store.path)
        n = running.n
        if holder(record.read(), self.state.session_id, n) is None:
            return None  # begun by an editor or a script: the caller's own refusal stands
        with record.try_locked() as data:
            if data is None:
                raise busy(self.wb, n)
            found = idle_holder(self.wb, record, data, n)
            if found is None:
                return None
            key, s = found
            for tool, p, params in steps_in_order(s.get("pending") or {}, final=True):
                before = len(running.steps)
                try:
                    self.step({"turn": n, **(params or unfinished_step(p))})
                finally:  # recorded (the state has it, even when its sync failed): not twice
                    if len(running.steps) > before:
                        s["pending"].pop(tool, None)
            status = "settled" if s.get("stopped") else "cancelled"
            why = ("its Stop came and its helpers went quiet" if s.get("stopped") else
                   "the person interrupted it" if s.get("interrupted") else
                   "its agent's process has ended" if process_gone(s.get("process")) else
                   "no Stop ever came")
            try:
                # A prelude to the caller's operation, which stays cancellable until its own change.
                yield from waiting.unbound_steps(self.settle_job({"turn": n, "status": status}))
            finally:
                if running.state != "running":  # settled (even if its publication then failed)
                    now = time.time()
                    report = {"turn": n, "status": status, "agent": s.get("agent"),
                              "agentSessionId": s.get("sessionId"),
                              "silentSeconds": round(now - (s.get("active") or now)), "why": why,
                              "by": operation}
                    s.update(turn=None, stopped=None, pending={}, interrupted=False, turnCount=n,
                             last={"n": n, "key": s.get("turnKey"), "promptId": s.get("promptId"),
                                   "how": "idle", "by": operation, "at": now})
            report["text"] = settled_words(report)
        record.log(f"{key}: turn {n} {status} before {operation}: {why} "
                   f"(silent {report['silentSeconds']} s)")
        return report

    def _require_idle(self) -> None:
        self.book.require_owner()
        if self.state.frozen:
            raise SessionFrozen("this session is frozen; start a new session to continue")
        running = self.state.running
        if running is not None:
            raise TurnRunning(f"turn {running.n} is still running; settle or cancel it first",
                              data={"turn": running.n})

    # -- capture --------------------------------------------------------------------------------
    def capture(self, params) -> dict:
        """`turn/capture` in one call (the command line, the hooks' in-process port)."""
        with self.book.one_check():
            phase, targets = self._capture_targets(params)
            recorder = self.wb.recorder
            return self._captured(phase, targets, [
                recorder.capture(rel, phase=phase) for _uri, rel in targets if rel is not None])

    def capture_job(self, params):
        """`turn/capture` as a served job: the files are read and stored, and the journal synced,
        on helper threads (three fsyncs a capture, each on the loop before)."""
        phase, targets = self._capture_targets(params)
        results = yield from self.wb.recorder.iter_capture(
            [rel for _uri, rel in targets if rel is not None], phase=phase)
        return self._captured(phase, targets, results)

    def _capture_targets(self, params) -> tuple[str, list[tuple[str, str | None]]]:
        p = P.obj(params)
        uris = P.str_list(p, "uris")
        phase = P.field(p, "phase", str, default="after", choices=("before", "after"))
        self.book.require_owner()
        targets = []
        for uri in uris:
            try:
                targets.append((uri, self.wb.ws.to_rel(uri)))
            except OutsideWorkspace:
                targets.append((uri, None))
        return phase, targets

    def _captured(self, phase: str, targets, results) -> dict:
        """The answer, from each target's capture (in order; none for a path outside)."""
        captured, gaps = [], []
        results = iter(results)
        for uri, rel in targets:
            if rel is None:
                gap = Gap(uri, "outside-workspace", self._running_n())
                gaps.append(self.wb.wire_gap(gap))
                captured.append({"uri": uri, "digest": None, "checkpoint": None})
                continue
            result, new_gaps = next(results)
            if phase == "after":
                self.wb.directives.follow_edits([rel])
            gaps.extend(self.wb.wire_gap(g) for g in new_gaps)
            captured.append({"uri": self.wb.ws.to_uri(rel),
                             "digest": result.image if result.image not in (None, ABSENT) else None,
                             "absent": result.image == ABSENT, "checkpoint": result.checkpoint})
        self.wb.maybe_publish()
        self.wb.emit_status()
        return {"captured": captured, "gaps": gaps}

    def capture_rels(self, rels, *, phase: str = "after", by: str = "save") -> None:
        """Editor events (save, open, watched change) already turned into workspace paths; `by` says
        which (`save` or `watch`), so a rewind can say who made a change between turns."""
        self.wb.run(self.capture_rels_job(rels, phase=phase, by=by))

    def capture_rels_job(self, rels, *, phase: str = "after", by: str = "save"):
        """`capture_rels` as a job: a watched folder's listing, the reads and the journal's sync on
        helper threads (a 1 MiB save held the loop for its fsyncs). The server runs it holding its
        mutation lock throughout, so saves are recorded in the order they arrived."""
        if not self.wb.is_owner:
            return
        recorder = self.wb.recorder
        # Git's own files, as an editor reports them (`git status` refreshing the index, a commit
        # message saved): never the session's files, so no capture and no gap. An agent's hook
        # naming one still gets its `git-internal` gap (docs/capture.md, "Git's files and turnback's own").
        rels = [rel for rel in rels if not self.wb.ws.git_internal(rel)]
        if not rels:
            return
        if by == "watch":  # a folder the watcher reports: itself (a file that became a folder is a
            # gap) and the files in it, which the watcher may not report
            def with_their_files(reported):
                return [f for rel in reported for f in [rel, *(recorder.files_in_folder(rel) or ())]]
            rels = yield from waiting.wait_in_slices(waiting.in_thread(with_their_files, list(rels)))
        yield from recorder.iter_capture(rels, phase=phase, by=by)
        if phase == "after":
            self.wb.directives.follow_edits(rels)
        self.wb.maybe_publish()
        self.wb.emit_status()

    def opened(self, rel: str, text: str | None) -> None:
        self.wb.run(self.opened_job(rel, text))

    def opened_job(self, rel: str, text: str | None):
        """An editor opened a file: learn its image if that is safe, never mint a checkpoint. A job:
        the disk read and the store's write happen on helper threads (a file the store did not know
        was read and stored on the loop).

        The event may be handled after the agent already changed the file, so during a turn a disk
        read is trusted as the before-image only when it equals the text the editor opened. The
        server runs it holding its mutation lock throughout, so the session cannot move meanwhile."""
        if not self.wb.is_owner or rel in self.state.known:
            return
        if self.state.running is not None:
            if text is None:
                return
            from ..travel.disk import disk_image

            wb, hasher = self.wb, self.wb.store.objects.hasher

            def same_as_opened() -> bool:
                now, _problem = disk_image(wb.ws, rel, hasher, max_bytes=wb.options.max_file_bytes)
                return now == hasher.digest(text.encode("utf-8"))

            if not (yield from waiting.wait_in_slices(waiting.in_thread(same_as_opened))):
                return
        yield from self.wb.recorder.iter_capture([rel], phase="before")
        self.wb.emit_status()

    def _running_n(self) -> int | None:
        running = self.state.running
        return running.n if running else None

    # -- steps, text, agents, workflow ------------------------------------------------------------
    def _running_turn(self, p: dict):
        n = P.field(p, "turn", int)
        turn = self.state.turn(n)
        if turn is None:
            raise UnknownTurn(f"there is no turn {n}; the session has {self.state.turn_count}",
                              data={"turn": n})
        if turn.state != "running":
            raise InvalidParams(f"turn {n} is {turn.state}, not running", data={"turn": n})
        return turn

    def step(self, params) -> dict:
        return self.wb.run(self.step_job(params))

    def step_job(self, params):
        """Record a step the agent took. A job (not one synchronous call): the tool result's object
        and the journal's fsync are written on helper threads while the loop serves others."""
        p = P.obj(params)
        self.book.require_owner()
        turn = self._running_turn(p)
        kind = P.field(p, "kind", str)
        scope = P.field(p, "scope", str, default="unknown", choices=SCOPES)
        rels = [self.wb.ws.to_rel(u) for u in P.str_list(p, "uris", default=[])]
        inverse = p.get("inverse")
        if inverse is not None:
            inverse = P.obj(inverse, "inverse")
            inverse = {"kind": P.field(inverse, "kind", str),
                       "scope": P.field(inverse, "scope", str, default="unknown", choices=SCOPES),
                       **({"idempotent": inverse["idempotent"]}
                          if P.field(inverse, "idempotent", bool, default=None, allow_none=True)
                          is not None else {})}
        compensates = P.field(p, "compensates", str, default=None, allow_none=True)
        if compensates is not None and not any(s.id == compensates for t in self.state.turns
                                               for s in t.steps):
            raise NotFound(f"no step {compensates!r} to compensate", data={"stepId": compensates})
        result = P.field(p, "result", str, default=None, allow_none=True)
        summary = P.field(p, "summary", str, default="")
        held = P.field(p, "held", bool, default=False)
        step_id = f"s{turn.n}.{len(turn.steps) + 1}"
        # Before the record: a cancel here leaves an object nothing names (the collector's).
        digest = (yield from self.wb.store.objects.iter_put(result.encode())) \
            if result is not None else None
        step = {"id": step_id, "turn": turn.n, "kind": kind, "scope": scope,
                "summary": summary, "rels": rels, "inverse": inverse,
                "held": held, "compensates": compensates, "result": digest,
                "created": time.time()}
        self.book.record({"op": "step", "step": step})  # checks the lease again
        if "scope" not in p or p.get("scope") is None:
            gap = Gap("", "step-scope-unknown", turn.n, f"step {step_id} ({kind}) did not say its scope")
            self.book.record({"op": "gaps", "turn": turn.n, "add": [gap.to_dict()]})
        yield from waiting.binding_steps(self.book.iter_sync())  # the step is recorded
        self.wb.maybe_publish()
        self.wb.emit_status()
        return {"stepId": step_id}

    def respond(self, params) -> dict:
        p = P.obj(params)
        self.book.require_owner()
        turn = self._running_turn(p)
        text = P.field(p, "text", str)
        final = P.field(p, "final", bool, default=False)
        self.book.record({"op": "respond", "turn": turn.n, "text": text, "final": final}, sync=final)
        self.wb.maybe_publish()
        return {}

    def agent_transcript(self, params) -> dict:
        p = P.obj(params)
        self.book.require_owner()
        agent_id = P.field(p, "agentId", str)
        n = P.field(p, "turn", int)
        if self.state.turn(n) is None:
            raise UnknownTurn(f"there is no turn {n}", data={"turn": n})
        final = P.field(p, "final", bool, default=False)
        self.book.record({"op": "agent", "agentId": agent_id, "turn": n,
                          "text": P.field(p, "text", str), "final": final}, sync=final)
        self.wb.maybe_publish()
        return {}

    def workflow_set(self, params) -> dict:
        p = P.obj(params)
        self.book.require_owner()
        lists = {name: P.field(p, name, list) for name in WORKFLOW_LISTS if p.get(name) is not None}
        self.book.record({"op": "workflow", "lists": lists}, sync=True)
        return {}

    def workflow_get(self, params=None) -> dict:
        P.obj(params)
        return {name: list(self.state.workflow.get(name, [])) for name in WORKFLOW_LISTS}

    # -- settle ---------------------------------------------------------------------------------
    def settle_job(self, params):
        p = P.obj(params)
        self.book.require_owner()
        if p.get("turn") is None:  # the contract: without `turn`, settle the running turn
            running = self.state.running
            if running is None:
                raise NoTurnRunning("no turn is running; there is nothing to settle")
            p = {**p, "turn": running.n}
        turn = self._running_turn(p)
        status = P.field(p, "status", str, default="settled", choices=TURN_STATES[1:])
        answer = P.field(p, "answer", str, default="published", choices=SETTLE_ANSWERS)
        # A settle sweep attributes what a shell command changed behind our back to this turn.
        # Its records are made durable with the settle's: the sync below, or the publication.
        yield from self.wb.sweep_job(caller_syncs=True)
        self.book.record({"op": "settle", "turn": turn.n, "status": status, "ts": time.time()})
        if turn.directive_id:
            self.wb.directives.refresh(turn.directive_id)
        if answer == "durable":  # the journal's settle is what a replay settles by
            yield from waiting.binding_steps(self.book.iter_sync())
            yield Answer({"headSeq": None, "publishing": True, "turn": turn.n})
        seq = yield from waiting.binding_steps(self.book.iter_publish())  # settled: publish it
        self.wb.collection.schedule("settlement")
        self.wb.emit_status()
        return {"headSeq": seq, "turn": turn.n}  # `turn`: which one, when the caller named none

    # -- log ------------------------------------------------------------------------------------
    def log(self, params=None, *, state=None) -> dict:
        """The session log of the live session, or of `state` (a parked or frozen session). With
        `turn`, only that turn (and the restores that followed it): what a hook asks about the
        running turn costs one turn, not the whole session (a 300-turn log is about 1 MiB)."""
        p = P.obj(params)
        only = P.field(p, "turn", int, default=None)
        state = state or self.state
        chosen = state.turns
        if only is not None:
            chosen = [t for t in state.turns if t.n == only]
            if not chosen:
                raise UnknownTurn(f"this session has no turn {only} (it has {len(state.turns)})",
                                  data={"turn": only})
        to_uri = self.wb.ws.to_uri
        turns = []
        for t in chosen:
            entry = {
                "turn": t.n, "kind": t.kind, "prompt": t.prompt, "response": t.response,
                "state": t.state, "started": t.started, "ended": t.ended,
                "files": [{"uri": to_uri(e.rel), "path": e.rel, "checkpoint": e.checkpoint,
                           "created": e.created, "before": e.before, "after": e.after,
                           "captures": e.captures} for e in t.files.values()],
                "steps": len(t.steps),
                "stepList": [{"id": s.id, "kind": s.kind, "scope": s.scope, "summary": s.summary,
                              "paths": list(s.rels)} for s in t.steps],
                "gaps": [self.wb.wire_gap(g) for g in t.gaps],
            }
            if t.directive_id:
                entry["directiveId"] = t.directive_id
            turns.append(entry)
        out = {"turns": turns, "sessionId": state.session_id}
        if state.lineage:
            out["lineage"] = state.lineage
        restores = [r for r in state.restores if only is None or r.get("afterTurn") == only]
        if restores:  # file restores that kept every turn (travel/filestate.py)
            out["restores"] = [dict(r, paths=[to_uri(p) for p in r.get("paths", [])])
                               for r in restores]
        return out
