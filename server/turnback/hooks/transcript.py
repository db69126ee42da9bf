"""What the hooks read in an agent's transcript beyond a turn's end (agents/agenttranscript.py): the
newest prompt (Claude Code's own `/rewind` is seen in its parent) and a helper agent's transcript.
"""

from __future__ import annotations

from ..agents.agenttranscript import is_prompt, read, text_of

records = read


def last_prompt(recs: list[dict], text: str | None = None) -> dict | None:
    """The newest prompt record (the newest one with that text, when given)."""
    for rec in reversed(recs):
        if is_prompt(rec) and (text is None or text_of(rec).strip() == text.strip()):
            return rec
    return None


def helper_text(path: str | None) -> str:
    """A helper agent's retained transcript, as readable text: its prompts and answers in order."""
    lines = []
    for rec in read(path):
        t = text_of(rec)
        if t and rec.get("type") in ("user", "assistant"):
            lines.append(f"[{rec['type']}] {t}")
    return "\n".join(lines)
