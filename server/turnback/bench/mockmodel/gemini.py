"""The Gemini API (`generateContent`, `streamGenerateContent?alt=sse`), as far as Gemini CLI uses it:
the request's `contents` read as `Item`s, and a scripted reply written as one response or as
server-sent chunks (text parts, `functionCall` parts, then `finishReason` and `usageMetadata`).

Gemini CLI also asks the model things of its own with no tools on offer (is the turn over, which
model to route to, is it looping): those get a JSON answer when the request asks for JSON (the
user speaks next, the default model, no loop), so its side checks take their quiet path."""

from __future__ import annotations

import json

from .script import Item, Reply, call_id


def conversation(body: dict) -> list[Item]:
    out: list[Item] = []
    for n, msg in enumerate(body.get("contents") or []):
        if not isinstance(msg, dict):
            continue
        role = "assistant" if msg.get("role") == "model" else "user"
        for part in msg.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str) and not part.get("thought"):
                out.append(Item(role, "text", text=part["text"], msg=n))
            elif isinstance(part.get("functionCall"), dict):
                fc = part["functionCall"]
                out.append(Item("assistant", "call", call_id=fc.get("id") or "",
                                name=fc.get("name") or "", msg=n))
            elif isinstance(part.get("functionResponse"), dict):
                fr = part["functionResponse"]
                out.append(Item("user", "result", call_id=fr.get("id") or "",
                                name=fr.get("name") or "",
                                text=json.dumps(fr.get("response")), msg=n))
    return out


def is_agent_loop(body: dict) -> bool:
    return bool(body.get("tools"))


def side_answer(body: dict) -> str:
    """The text of an answer to one of Gemini CLI's own questions (no tools on offer)."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") != "application/json":
        return "OK"
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    props = schema.get("properties") or {}
    answer: dict = {}
    for name, spec in props.items():
        kind = (spec or {}).get("type", "string")
        kind = kind.lower() if isinstance(kind, str) else "string"
        enum = (spec or {}).get("enum")
        if name == "next_speaker":
            answer[name] = "user"
        elif enum:
            answer[name] = enum[0]
        elif kind == "boolean":
            answer[name] = False
        elif kind in ("number", "integer"):
            answer[name] = (spec or {}).get("minimum", 1)
        else:
            answer[name] = "scripted"
    return json.dumps(answer)


def _usage() -> dict:
    return {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def _parts(reply: Reply, turn: int, step: int) -> list[dict]:
    parts: list[dict] = []
    if reply.text:
        parts.append({"text": reply.text})
    for i, c in enumerate(reply.calls):
        parts.append({"functionCall": {"id": call_id("gem_", turn, step, i), "name": c.name,
                                       "args": c.input}})
    return parts


def _chunk(parts: list[dict], model: str, serial: int, finish: str | None) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out = {"candidates": [candidate], "modelVersion": model, "responseId": f"mock{serial}"}
    if finish:
        out["usageMetadata"] = _usage()
    return out


def _sse(data: dict) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


def start(model: str, serial: int) -> bytes:
    return _sse(_chunk([{"text": ""}], model, serial, None))


def stream(reply: Reply, turn: int, step: int, model: str, serial: int) -> bytes:
    """A chunk a part, the last one with the finish reason (no empty text part: Gemini CLI joins
    every text of a turn into the answer its AfterAgent hook gets)."""
    parts = _parts(reply, turn, step) or [{"text": ""}]
    return b"".join([_sse(_chunk([p], model, serial, None)) for p in parts[:-1]]
                    + [_sse(_chunk(parts[-1:], model, serial, "STOP"))])


def whole(reply: Reply, turn: int, step: int, model: str, serial: int) -> bytes:
    """The same reply as one `generateContent` response."""
    return json.dumps(_chunk(_parts(reply, turn, step) or [{"text": ""}], model, serial,
                             "STOP")).encode()


def error(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"code": status, "message": message, "status": kind}}).encode()
