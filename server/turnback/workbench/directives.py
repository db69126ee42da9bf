"""Directives: requests the user anchors in a file, and the attempts directive turns make at them."""

from __future__ import annotations

import time
import uuid

from ..directives import rules
from ..errors import InvalidParams, NotFound, UnknownTurn
from ..travel.disk import read_text
from ..model.directives import Directive
from . import params as P


class DirectivesFeature:
    def __init__(self, wb):
        self.wb = wb

    @property
    def state(self):
        return self.wb.book.state

    def _running(self) -> int | None:
        running = self.state.running
        return running.n if running else None

    def wire(self, d: Directive) -> dict:
        return rules.to_wire(d, self.wb.ws.to_uri(d.rel), self.state.directives)

    def _text(self, rel: str) -> str | None:
        return read_text(self.wb.ws, rel, max_bytes=self.wb.options.max_file_bytes)

    def _line_text(self, rel: str, line: int) -> str:
        lines = rules.split_lines(self._text(rel) or "")
        return lines[line] if 0 <= line < len(lines) else ""

    def follow_edits(self, rels) -> None:
        """After a file with directives changed, move their anchors with their text, so panels stay
        beside what the user anchored them to. An edit that rewrites the anchored line (the agent
        implementing the directive, typically) leaves the anchor where it was: only a rewind that
        restores a file without the text detaches it."""
        wanted = set(rels)
        mine = [d for d in self.state.directives.values() if d.rel in wanted]
        if not mine:
            return
        texts = {rel: self._text(rel) for rel in {d.rel for d in mine}}
        changed = set()
        for d in mine:
            new = rules.reattach_anchor(d, texts[d.rel], running_turn=self._running())
            if not new.attached:
                continue
            if (new.line, new.attached, new.anchor_text, new.state) != \
                    (d.line, d.attached, d.anchor_text, d.state):
                self.wb.book.record({"op": "directive", "directive": new.to_dict()})
                changed.add(d.rel)
        if changed:
            self.wb.book.sync()
            self.notify(changed)

    def _save(self, d: Directive) -> None:
        d.state = rules.recompute_state(d, running_turn=self._running())
        self.wb.book.record({"op": "directive", "directive": d.to_dict()}, sync=True)

    def notify(self, rels) -> None:
        for rel in sorted(set(rels)):
            items = [self.wire(d) for d in self.state.directives.values() if d.rel == rel]
            self.wb.events.emit("directives", {"uri": self.wb.ws.to_uri(rel), "directives": items})

    # -- requests -------------------------------------------------------------------------------
    def upsert(self, params) -> dict:
        p = P.obj(params)
        self.wb.book.require_owner()
        rel = self.wb.ws.to_rel(P.field(p, "uri", str))
        anchor = P.obj(P.field(p, "anchor", dict), "anchor")
        line = P.field(anchor, "line", int)
        character = P.field(anchor, "character", int, default=0)
        request = P.field(p, "request", str)
        parent_id = P.field(p, "parentId", str, default=None, allow_none=True)
        if parent_id is not None and parent_id not in self.state.directives:
            raise NotFound(f"no parent directive {parent_id!r}", data={"parentId": parent_id})
        did = P.field(p, "id", str, default=None, allow_none=True)
        old = self.state.directives.get(did) if did else None
        if old is None:
            d = Directive(id=did or "d" + uuid.uuid4().hex[:12], rel=rel, line=line,
                          character=character, request=request, parent_id=parent_id,
                          anchor_text=self._line_text(rel, line), created=time.time())
        else:
            d = Directive.from_dict(old.to_dict())
            moved = (d.rel, d.line) != (rel, line)
            d.rel, d.line, d.character, d.parent_id = rel, line, character, parent_id
            if moved:
                d.anchor_text, d.attached = self._line_text(rel, line), True
            if request != d.request:
                d.request, d.request_rev = request, d.request_rev + 1
        self._save(d)
        self.notify([rel] + ([old.rel] if old is not None and old.rel != rel else []))
        return self.wire(self.state.directives[d.id])

    def record(self, params) -> dict:
        p = P.obj(params)
        self.wb.book.require_owner()
        did = P.field(p, "directiveId", str)
        if did not in self.state.directives:
            raise NotFound(f"no directive {did!r}", data={"directiveId": did})
        n = P.field(p, "turn", int)
        turn = self.state.turn(n)
        if turn is None:
            raise UnknownTurn(f"there is no turn {n}", data={"turn": n})
        if turn.directive_id != did:
            raise InvalidParams(f"turn {n} is not an attempt at directive {did}", data={"turn": n})
        consumed = P.str_list(p, "consumed", default=[])
        for sub in consumed:
            if sub not in self.state.directives or self.state.directives[sub].parent_id != did:
                raise InvalidParams(f"{sub!r} is not a subdirective of {did}", data={"id": sub})
        op = {"op": "attempt", "directiveId": did, "turn": n, "consumed": consumed}
        for key in ("answer", "feedback", "patch"):
            op[key] = P.field(p, key, str, default=None, allow_none=True)
        self.wb.book.record(op)
        self.refresh(did)
        return self.wire(self.state.directives[did])

    def list(self, params=None) -> dict:
        p = P.obj(params)
        uri = P.field(p, "uri", str, default=None, allow_none=True)
        rel = self.wb.ws.to_rel(uri) if uri else None
        items = [self.wire(d) for d in sorted(self.state.directives.values(), key=lambda d: d.created)
                 if rel is None or d.rel == rel]
        return {"directives": items}

    # -- used by the turn lifecycle -------------------------------------------------------------
    def start_attempt(self, did: str, turn: int) -> None:
        self.wb.book.record({"op": "attempt", "directiveId": did, "turn": turn})
        self.refresh(did)

    def refresh(self, did: str) -> None:
        d = self.state.directives[did]
        new_state = rules.recompute_state(d, running_turn=self._running())
        if new_state != d.state:
            self.wb.book.record({"op": "attempt-state", "directiveId": did, "state": new_state})
        self.wb.book.sync()
        self.notify([d.rel])
