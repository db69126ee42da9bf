"""The effect buckets and the steps in them, in a person's words (docs/effects.md, "In words").

Pure functions, no I/O. A confirmation shows each bucket by its people's name, only when it holds a
step, and each step by what it did: the command a shell step ran, the tool and the file of a file
step, never its id alone. The contract's bucket keys stay in `Candidate.effects`; `Candidate.steps`
carries these descriptions so every client says the same thing.
"""

from __future__ import annotations

import re

from .partition import BUCKETS

# The seven buckets as a person reads them, in the order the confirmation shows them.
BUCKET_WORDS = {
    "restored": "Put back by this rewind",
    "droppedBeforeCrossing": "Held back and never sent: dropped",
    "crossedUncompensated": "Already left this machine; nothing undoes them",
    "crossedCompensated": "Left this machine; a later step makes up for them (not re-run)",
    "wouldCrossOnRewind": "Not undone: undoing them would itself leave this machine",
    "unrestored": "Changed this machine in a way the rewind cannot put back",
    "provablyEmpty": "Changed nothing",
}
assert tuple(BUCKET_WORDS) == BUCKETS

# The scope table's reason, appended by the hook mapper: "Bash: ls [scope none: 'ls' -> none (default)]"
_SCOPE_NOTE = re.compile(r"\s*\[scope [a-z]+: .*\]\s*$")
# "Bash: git push origin main" (tool name, colon, the command)
_SHELL = re.compile(r"^(?P<tool>[A-Za-z_][\w.-]*): (?P<command>.+)$", re.S)


def step_words(step) -> str:
    """What one step did, in words: `ran “git push origin main”`, `Write src/app.py`, or its kind."""
    summary = _SCOPE_NOTE.sub("", step.summary or "").strip()
    if step.kind == "shell":
        m = _SHELL.match(summary)
        command = m.group("command") if m else summary
        return f"ran \u201c{command}\u201d" if command else "ran a shell command (not recorded)"
    if summary:
        return summary
    what = step.kind.replace("-", " ")
    return what + (" " + ", ".join(step.rels) if step.rels else "")


def describe(steps, buckets: dict[str, list[str]]) -> list[dict]:
    """`Candidate.steps`: every discarded step with its bucket and what it did, in log order."""
    where = {sid: name for name, ids in buckets.items() for sid in ids}
    return [{"id": s.id, "turn": s.turn, "kind": s.kind, "scope": s.scope, "what": step_words(s),
             "paths": list(s.rels), "bucket": where.get(s.id)} for s in steps]


def effect_words() -> dict[str, str]:
    """`Candidate.effectWords`: every bucket's people's name, in the confirmation's order; clients
    show these and keep their own only for an older server."""
    return dict(BUCKET_WORDS)


def shown_buckets(buckets: dict[str, list[str]]) -> list[tuple[str, str, list[str]]]:
    """(key, people's name, step ids) of the buckets that hold a step, in the confirmation's order."""
    return [(b, BUCKET_WORDS[b], buckets[b]) for b in BUCKETS if buckets.get(b)]
