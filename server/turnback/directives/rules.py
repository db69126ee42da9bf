"""Directive rules: state from surviving activity, pruning on rewind, anchor reattachment, wire shape.

Pure functions over plain data, no I/O. Inputs are never mutated; every rule that changes a directive
returns a new object. Lines and characters are zero-based, as in LSP.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from ..model.directives import Attempt, Directive

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the LSP line terminators, nothing else


def _carries(value: str | None) -> bool:
    return value is not None and value != ""


def _copy(d: Directive, **changes) -> Directive:
    """A deep enough copy: the directive and its attempts are new objects, strings are shared."""
    attempts = changes.pop("attempts", d.attempts)
    fields = dict(id=d.id, rel=d.rel, line=d.line, character=d.character, request=d.request,
                  anchor_text=d.anchor_text, attached=d.attached, request_rev=d.request_rev,
                  parent_id=d.parent_id, state=d.state, created=d.created)
    fields.update(changes)
    fields["attempts"] = [Attempt(a.turn, a.request_rev, a.answer, a.feedback, a.patch,
                                  list(a.consumed)) for a in attempts]
    return Directive(**fields)


def _last(attempts: Iterable[Attempt]) -> Attempt | None:
    """The latest attempt: highest turn, and among equal turns the one recorded last."""
    best: Attempt | None = None
    for a in attempts:
        if best is None or a.turn >= best.turn:
            best = a
    return best


# -- (a) state ---------------------------------------------------------------------------------------

def recompute_state(d: Directive, *, running_turn: int | None) -> str:
    """The state that surviving attempts and the current request imply. First match wins."""
    if not d.attached:
        return "detached"
    if not d.request.strip():
        return "draft"
    last = _last(d.attempts)
    if running_turn is not None and last is not None and last.turn == running_turn:
        return "running"
    current = _last(a for a in d.attempts if a.request_rev == d.request_rev)
    if current is not None and _carries(current.patch):
        return "applied"
    if current is not None and _carries(current.answer):
        return "answered"
    return "ready"  # never attempted, attempted without result, or the request changed since


# -- (d) consumption and the wire ------------------------------------------------------------------

def consumed_subdirectives(d: Directive) -> set[str]:
    """Subdirective ids consumed by the directive's surviving attempts (consumption is derived)."""
    out: set[str] = set()
    for a in d.attempts:
        out.update(a.consumed)
    return out


def _all(directives: Mapping[str, Directive] | Iterable[Directive]) -> list[Directive]:
    return list(directives.values()) if isinstance(directives, Mapping) else list(directives)


def to_wire(d: Directive, uri: str,
            all_directives: Mapping[str, Directive] | Iterable[Directive]) -> dict:
    """The contract's `Directive` shape. Optional attempt fields are left out when absent."""
    consumed = consumed_subdirectives(d)
    subs = sorted((s for s in _all(all_directives) if s.parent_id == d.id and s.id != d.id),
                  key=lambda s: (s.created, s.id))
    attempts = []
    for a in sorted(d.attempts, key=lambda a: a.turn):  # stable: equal turns keep record order
        item: dict = {"turn": a.turn}
        for key in ("answer", "feedback", "patch"):
            value = getattr(a, key)
            if value is not None:
                item[key] = value
        attempts.append(item)
    return {
        "id": d.id,
        "uri": uri,
        "anchor": {"line": d.line, "character": d.character, "attached": d.attached},
        "request": d.request,
        "state": d.state,
        "attempts": attempts,
        "subdirectives": [{"id": s.id, "consumed": s.id in consumed} for s in subs],
    }


# -- (c) anchors -------------------------------------------------------------------------------------

def split_lines(text: str) -> list[str]:
    """LSP lines: split on \\r\\n, \\r and \\n only; a trailing break leaves a last, empty line."""
    return _LINE_BREAK.split(text)


def find_anchor_line(lines: list[str], line: int, anchor_text: str) -> int | None:
    """Where the anchor belongs in `lines`, or None when it cannot attach."""
    want = anchor_text.strip()
    if not want:  # an empty anchor attaches to its own line when that line exists, nowhere else
        return line if 0 <= line < len(lines) else None
    if 0 <= line < len(lines) and lines[line].strip() == want:
        return line
    matches = [i for i, text in enumerate(lines) if text.strip() == want]
    if not matches:
        return None
    return min(matches, key=lambda i: (abs(i - line), i))  # nearest; on a tie the earlier line


def reattach_anchor(d: Directive, text: str | None, *, running_turn: int | None = None) -> Directive:
    """A new directive whose anchor is checked against the restored text (None: the file is absent).

    Found: attached at that line (the character is kept), state recomputed. Not found: detached, with
    line and anchor text kept so a later restore can attach it again."""
    found = None if text is None else find_anchor_line(split_lines(text), d.line, d.anchor_text)
    if found is None:
        out = _copy(d, attached=False)
    else:
        out = _copy(d, attached=True, line=found, anchor_text=split_lines(text)[found])
    out.state = recompute_state(out, running_turn=running_turn)
    return out


# -- (b) rewind ----------------------------------------------------------------------------------------

def prune_for_rewind(directives: Mapping[str, Directive], *, discard_from_turn: int,
                     running_turn: int | None = None,
                     texts: Mapping[str, str | None] | None = None,
                     ) -> tuple[dict[str, Directive], list[dict]]:
    """New directives without the attempts of turns >= discard_from_turn, and the consequences.

    Every directive record survives with its request, anchor and parent: they are the user's. Dropped
    attempts take their answers, feedback, patches and consumption with them, so the subdirectives they
    consumed return. When `texts` (workspace path -> restored text, None for absent) names a directive's
    file, its anchor is reattached against that text too, so the candidate shows the final state.

    Consequences: `{id, attemptsDiscarded, stateAfter, subdirectivesReturned}` for each directive that
    lost an attempt or whose state changes, in id order (the order feeds the plan hash)."""
    after: dict[str, Directive] = {}
    consequences: list[dict] = []
    for key, d in directives.items():
        kept = [a for a in d.attempts if a.turn < discard_from_turn]
        new = _copy(d, attempts=kept)
        if texts is not None and d.rel in texts:
            new = reattach_anchor(new, texts[d.rel], running_turn=running_turn)
        new.state = recompute_state(new, running_turn=running_turn)
        after[key] = new
        lost = len(d.attempts) - len(kept)
        if lost or new.state != d.state:
            consequences.append({
                "id": d.id,
                "attemptsDiscarded": lost,
                "stateAfter": new.state,
                "subdirectivesReturned": sorted(consumed_subdirectives(d)
                                                - consumed_subdirectives(new)),
            })
    consequences.sort(key=lambda c: c["id"])
    return after, consequences
