"""The Anthropic Messages API, as far as Claude Code uses it: the request's conversation read as
`Item`s, and a scripted reply written as the streaming events (`message_start`,
`content_block_start`/`_delta`/`_stop` for text and `tool_use` blocks, `message_delta` with the
stop reason, `message_stop`)."""

from __future__ import annotations

import json

from .script import Item, Reply, call_id


def conversation(body: dict) -> list[Item]:
    out: list[Item] = []
    for n, msg in enumerate(body.get("messages") or []):
        role = msg.get("role")
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            kind = block.get("type")
            if kind == "text":
                out.append(Item(role, "text", text=block.get("text") or "", msg=n))
            elif kind == "tool_use":
                out.append(Item(role, "call", call_id=block.get("id") or "",
                                name=block.get("name") or "", msg=n))
            elif kind == "tool_result":
                out.append(Item(role, "result", call_id=block.get("tool_use_id") or "",
                                text=_result_text(block.get("content")), msg=n))
    return out


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def is_agent_loop(body: dict) -> bool:
    """The agent's own loop sends its tools; side requests (a title, a summary) send none."""
    return bool(body.get("tools"))


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def start(model: str, serial: int) -> bytes:
    return _event("message_start", {"type": "message_start", "message": {
        "id": f"msg_mock{serial}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})


def stream(reply: Reply, turn: int, step: int, model: str, serial: int) -> bytes:
    parts = [start(model, serial)]
    index = 0
    if reply.text:
        parts += [
            _event("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "text", "text": ""}}),
            _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": {"type": "text_delta", "text": reply.text}}),
            _event("content_block_stop", {"type": "content_block_stop", "index": index})]
        index += 1
    for i, c in enumerate(reply.calls):
        block = {"type": "tool_use", "id": call_id("toolu_", turn, step, i), "name": c.name,
                 "input": {}}
        parts += [
            _event("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": block}),
            _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(c.input)}}),
            _event("content_block_stop", {"type": "content_block_stop", "index": index})]
        index += 1
    parts += [
        _event("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 5}}),
        _event("message_stop", {"type": "message_stop"})]
    return b"".join(parts)


def error(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
