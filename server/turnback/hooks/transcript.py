"""Reading an agent's transcript file (Claude Code's JSON lines) for what hooks do not carry.

Each line is a record with `type` (`user`, `assistant`, `system`, ...), `uuid`, `parentUuid` and a
`message` whose `content` is a string or a list of parts (`text`, `tool_use`, `tool_result`). Claude
Code's own `/rewind` writes nothing when it happens: the next record simply names an earlier record as
its parent, and the abandoned records stay in the file. Only the tail of a long file is read.
"""

from __future__ import annotations

import json
import os

TAIL_BYTES = 1 << 20


def records(path: str | None, tail: int = TAIL_BYTES) -> list[dict]:
    if not path:
        return []
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > tail:
                f.seek(size - tail)
                f.readline()  # skip the cut line
            data = f.read()
    except OSError:
        return []
    out = []
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn last line while the agent is writing
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _text(rec: dict) -> str:
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


def is_prompt(rec: dict) -> bool:
    """A record the person typed (not a tool result fed back as a user message, not meta)."""
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isSidechain"):
        return False
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(p, dict) and p.get("type") == "tool_result" for p in content)


def last_assistant(recs: list[dict]) -> tuple[str | None, str | None]:
    """(uuid, text) of the conversation's end: the last assistant record, and the text of the
    assistant records since the last prompt."""
    uuid, texts = None, []
    for rec in recs:
        if rec.get("isSidechain"):
            continue
        if is_prompt(rec):
            texts = []
        elif rec.get("type") == "assistant":
            uuid = rec.get("uuid") or uuid
            t = _text(rec)
            if t:
                texts.append(t)
    return uuid, ("\n".join(texts) if texts else None)


def last_prompt(recs: list[dict], text: str | None = None) -> dict | None:
    """The newest prompt record (the newest one with that text, when given)."""
    for rec in reversed(recs):
        if is_prompt(rec) and (text is None or _text(rec).strip() == text.strip()):
            return rec
    return None


def helper_text(path: str | None) -> str:
    """A helper agent's retained transcript, as readable text: its prompts and answers in order."""
    lines = []
    for rec in records(path):
        t = _text(rec)
        if t and rec.get("type") in ("user", "assistant"):
            lines.append(f"[{rec['type']}] {t}")
    return "\n".join(lines)
