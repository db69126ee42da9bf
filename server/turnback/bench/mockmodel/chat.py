"""The OpenAI Chat Completions API (`/v1/chat/completions`), as OpenAI-compatible providers speak it
(OpenCode's `@ai-sdk/openai-compatible`): the request's `messages` read as `Item`s, and a scripted
reply written as streamed `chat.completion.chunk`s (content deltas, `tool_calls` deltas, a
`finish_reason`, usage, then `[DONE]`), or as one `chat.completion` when not streamed."""

from __future__ import annotations

import json
import time

from .script import Item, Reply, call_id


def _texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p.get("text") for p in content if isinstance(p, dict)
                and isinstance(p.get("text"), str)]
    return []


def conversation(body: dict) -> list[Item]:
    out: list[Item] = []
    for n, msg in enumerate(body.get("messages") or []):
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "assistant":
            out += [Item("assistant", "text", text=t, msg=n) for t in _texts(msg.get("content"))]
            for tc in msg.get("tool_calls") or []:
                fn = tc.get("function") or {}
                out.append(Item("assistant", "call", call_id=tc.get("id") or "",
                                name=fn.get("name") or "", msg=n))
        elif role == "tool":
            out.append(Item("user", "result", call_id=msg.get("tool_call_id") or "",
                            text="".join(_texts(msg.get("content"))), msg=n))
        elif role == "user":
            out += [Item("user", "text", text=t, msg=n) for t in _texts(msg.get("content"))]
        # system and developer messages are the agent's instructions, not the conversation
    return out


def is_agent_loop(body: dict) -> bool:
    return bool(body.get("tools"))


def _chunk(serial: int, model: str, delta: dict, finish: str | None = None) -> dict:
    return {"id": f"chatcmpl-mock{serial}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _sse(data) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def _calls(reply: Reply, turn: int, step: int) -> list[dict]:
    return [{"id": call_id("call_", turn, step, i), "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.input)}}
            for i, c in enumerate(reply.calls)]


def start(model: str, serial: int) -> bytes:
    return _sse(_chunk(serial, model, {"role": "assistant", "content": ""}))


def stream(reply: Reply, turn: int, step: int, model: str, serial: int) -> bytes:
    parts = [start(model, serial)]
    if reply.text:
        parts.append(_sse(_chunk(serial, model, {"content": reply.text})))
    for i, tc in enumerate(_calls(reply, turn, step)):
        parts.append(_sse(_chunk(serial, model, {"tool_calls": [{"index": i, **tc}]})))
    done = _chunk(serial, model, {}, "tool_calls" if reply.calls else "stop")
    done["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    parts += [_sse(done), _sse("[DONE]")]
    return b"".join(parts)


def whole(reply: Reply, turn: int, step: int, model: str, serial: int) -> bytes:
    message: dict = {"role": "assistant", "content": reply.text or ""}
    if reply.calls:
        message["tool_calls"] = _calls(reply, turn, step)
    return json.dumps({"id": f"chatcmpl-mock{serial}", "object": "chat.completion",
                       "created": int(time.time()), "model": model,
                       "choices": [{"index": 0, "message": message,
                                    "finish_reason": "tool_calls" if reply.calls else "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                 "total_tokens": 15}}).encode()


def error(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"type": kind, "message": message, "code": kind}}).encode()
