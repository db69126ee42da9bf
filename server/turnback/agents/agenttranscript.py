"""Reading an agent's own transcript (Claude Code's JSON lines): the records that start and end a turn.

Each line is a record with `type` (`user`, `assistant`, `system`, ...), `uuid`, `parentUuid` (or
`logicalParentUuid` after a compaction) and a `message` whose `content` is a string or a list of
parts (`text`, `tool_use`, `tool_result`). A prompt's record carries its `promptId` (the `prompt_id`
every hook payload of that prompt carries). Claude Code's own `/rewind` and `--resume-session-at`
write nothing when they happen: the next record names an earlier one as its parent, and the
abandoned records stay in the file, so "the last record" is not "the end of turn k".

The end of turn k is found from its prompt's record: among the assistant records whose nearest
prompt ancestor is that record (so never a record before the prompt, never one of another branch
or of a later turn), the one carrying the turn's answer. Used by the hooks (at each Stop) and by the
workbench (lazily, when a rewind needs a resume point the Stop could not find yet).

Standard library only.
"""

from __future__ import annotations

import json
import os
import time

TAIL_BYTES = 1 << 20  # what a hook reads of a long transcript
WHOLE_LIMIT = 64 << 20  # what a hook reads at most to resolve an older turn's end (off the loop)
RESUME_WAIT = 0.25  # seconds a Stop waits at most for the turn's last record (hooks/config.py)
RESUME_POLL = 0.025


def read(path: str | None, tail: int = TAIL_BYTES) -> list[dict]:
    """The records of the transcript's last `tail` bytes; [] when it cannot be read. A torn last
    line (the agent is writing) and lines that are not records are skipped."""
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
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def copilot_answer(records: list[dict], prompt_digest: str | None) -> str | None:
    """Copilot CLI's session transcript (`session-state/SESSION/events.jsonl`, which its agentStop
    names; the payload carries no answer): the last `assistant.message` text after the last
    `user.message`, when that message is the turn's prompt. Copilot writes the file behind its
    hooks, so at agentStop it may still end at the turn before: then None, never that one's."""
    answer = None
    for rec in reversed(records):
        data = rec.get("data") if isinstance(rec.get("data"), dict) else {}
        content = data.get("content")
        if rec.get("type") == "user.message":
            return answer if isinstance(content, str) and digest(content) == prompt_digest else None
        if answer is None and rec.get("type") == "assistant.message" and isinstance(content, str) \
                and content.strip():
            answer = content
    return None


def size_of(path: str | None) -> int | None:
    try:
        return os.stat(path).st_size if path else None
    except OSError:
        return None


def text_of(rec: dict) -> str:
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _parts(rec: dict) -> list:
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


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


def has_tool_use(rec: dict) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "tool_use" for p in _parts(rec))


def _parent(rec: dict):
    return rec.get("parentUuid") or rec.get("logicalParentUuid")


def digest(text: str | None) -> str:
    """A prompt's text, kept short: what finds its record when it carries no prompt id."""
    import hashlib

    return hashlib.sha256((text or "").strip().encode("utf-8", "replace")).hexdigest()[:20]


def find_prompt(recs: list[dict], *, prompt_id: str | None = None, uuid: str | None = None,
                text: str | None = None, text_digest: str | None = None) -> dict | None:
    """The prompt record of a turn: by its uuid, else by the prompt id it carries, else the newest
    prompt record with that text (or that text's `digest`)."""
    if uuid:
        for rec in recs:
            if rec.get("uuid") == uuid:
                return rec
    if prompt_id:
        for rec in recs:
            if rec.get("promptId") == prompt_id and is_prompt(rec):
                return rec
    if text is not None or text_digest:
        want = digest(text) if text is not None else text_digest
        for rec in reversed(recs):
            if is_prompt(rec) and digest(text_of(rec)) == want:
                return rec
    return None


def turn_records(recs: list[dict], prompt: dict) -> list[dict]:
    """The main-thread records whose nearest prompt ancestor is `prompt`, in file order (a later
    prompt, and what follows it, is another turn's)."""
    by_uuid = {r.get("uuid"): r for r in recs if r.get("uuid")}
    start = prompt.get("uuid")
    owner: dict = {}  # record -> the prompt that began its turn (memo for the walks up)
    out = []
    for rec in recs:
        u = rec.get("uuid")
        if not u or rec.get("isSidechain"):
            continue
        if u == start or is_prompt(rec):
            owner[u] = u
            continue
        chain, cur, found = [u], by_uuid.get(_parent(rec) or ""), None
        while cur is not None and len(chain) < 100000:
            cu = cur.get("uuid")
            if cu in owner:
                found = owner[cu]
                break
            if is_prompt(cur):
                found = owner[cu] = cu
                break
            chain.append(cu)
            cur = by_uuid.get(_parent(cur) or "")
        for cu in chain:
            owner[cu] = found
        if found == start:
            out.append(rec)
    return out


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def turn_end(recs: list[dict], prompt: dict, answer: str | None = None) -> dict | None:
    """The record that ended the turn begun by `prompt`: its newest assistant record, when that one
    has text, asks for no tool and (given the turn's answer, from the `Stop` payload) carries that
    answer. None when the transcript does not hold it (yet): never an earlier record, which would
    cut the turn (resumed there, the model meets a tool call without its result)."""
    mine = [r for r in turn_records(recs, prompt) if r.get("type") == "assistant"]
    if not mine:
        return None
    last = mine[-1]
    text = _norm(text_of(last))
    if not text or has_tool_use(last):
        return None
    if answer and not same_answer(text, answer):
        return None  # an earlier message of the turn: its answer is not written yet
    return last


def same_answer(text: str, answer: str, *, tail: int = 500) -> bool:
    """Whether a record's text is (the end of) the answer: the last block of a message is its own
    record, and the answer may be kept clipped to its tail."""
    t, w = _norm(text), _norm(answer)
    k = min(len(t), len(w), tail)
    return k > 0 and t[-k:] == w[-k:]


def answer_of(recs: list[dict], prompt: dict | None) -> str | None:
    """The text of the turn's assistant records, for agents whose Stop carries no answer."""
    if prompt is None:
        return None
    texts = [text_of(r) for r in turn_records(recs, prompt) if r.get("type") == "assistant"]
    texts = [t for t in texts if t]
    return "\n".join(texts) if texts else None


def resolve(path: str | None, *, prompt_id=None, prompt_uuid=None, prompt_text=None,
            prompt_digest=None, answer=None, whole: bool = True) -> tuple[dict | None, dict | None]:
    """(prompt record, end record) of a turn from the transcript file, either possibly None. The
    tail is read first; with `whole`, up to WHOLE_LIMIT when the prompt is further back."""
    which = {"prompt_id": prompt_id, "uuid": prompt_uuid, "text": prompt_text,
             "text_digest": prompt_digest}
    recs = read(path, TAIL_BYTES)
    prompt = find_prompt(recs, **which)
    if prompt is None and whole and (size_of(path) or 0) > TAIL_BYTES:
        recs = read(path, WHOLE_LIMIT)  # the prompt is further back than the tail
        prompt = find_prompt(recs, **which)
    if prompt is None:
        return None, None
    return prompt, turn_end(recs, prompt, answer)


_pause = time.sleep  # the wait between two looks (tests put a gate here)


def wait_for_end(path: str | None, *, wait: float = RESUME_WAIT, clock=time.monotonic,
                 **turn) -> tuple[dict | None, dict | None, float]:
    """`resolve`, retried while the transcript grows for at most `wait` seconds: at a Stop, Claude
    Code has often not yet written the turn's last record. Returns (prompt, end, seconds waited)."""
    start = clock()
    prompt, end = resolve(path, **turn)
    seen = size_of(path)
    while end is None and clock() - start < wait:
        _pause(RESUME_POLL)
        now = size_of(path)
        if now == seen:
            continue
        seen = now
        prompt, end = resolve(path, **turn)
    return prompt, end, clock() - start
