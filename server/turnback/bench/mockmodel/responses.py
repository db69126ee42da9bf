"""The OpenAI Responses API, as far as Codex uses it: the request's `input` items read as `Item`s,
and a scripted reply written as the streaming events (`response.created`,
`response.output_item.added`/`.done` for messages, `function_call` and `custom_tool_call` items,
`response.output_text.delta`, `response.completed` with usage)."""

from __future__ import annotations

import json
import time

from .script import Item, Reply, call_id

CALL_KINDS = ("function_call", "custom_tool_call", "local_shell_call")
RESULT_KINDS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def conversation(body: dict) -> list[Item]:
    out: list[Item] = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for n, it in enumerate(items or []):
        kind = it.get("type", "message")
        if kind in ("message", "agent_message"):
            # agent_message: what a parent agent sends a helper it spawned (Codex's collaboration
            # tools); the task itself rides in an `encrypted_content` part, plain text off OpenAI
            role = "user" if kind == "agent_message" else it.get("role") or "user"
            content = it.get("content")
            if isinstance(content, str):
                content = [{"type": "input_text", "text": content}]
            for part in content or []:
                if isinstance(part, dict):
                    text = part.get("text", part.get("encrypted_content"))
                    if isinstance(text, str):
                        out.append(Item(role, "text", text=text, msg=n))
        elif kind in CALL_KINDS:
            out.append(Item("assistant", "call", call_id=it.get("call_id") or "",
                            name=it.get("name") or "", msg=n))
        elif kind in RESULT_KINDS:
            output = it.get("output")
            out.append(Item("user", "result", call_id=it.get("call_id") or "",
                            text=output if isinstance(output, str) else json.dumps(output), msg=n))
    return out


def is_agent_loop(body: dict) -> bool:
    return bool(body.get("tools"))


def _event(data: dict, seq: list[int]) -> bytes:
    data = {**data, "sequence_number": seq[0]}
    seq[0] += 1
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _response(serial: int, model: str, status: str, output: list) -> dict:
    return {"id": f"resp_mock{serial}", "object": "response", "created_at": int(time.time()),
            "status": status, "model": model, "output": output}


def start(model: str, serial: int, seq: list[int] | None = None) -> bytes:
    seq = [0] if seq is None else seq
    return _event({"type": "response.created",
                   "response": _response(serial, model, "in_progress", [])}, seq)


def stream(reply: Reply, turn: int, step: int, model: str, serial: int) -> bytes:
    seq = [0]
    parts = [start(model, serial, seq)]
    output = []
    if reply.text:
        msg_id = f"msg_mock{serial}"
        added = {"type": "message", "id": msg_id, "status": "in_progress", "role": "assistant",
                 "content": []}
        done = {**added, "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        parts += [
            _event({"type": "response.output_item.added", "output_index": len(output),
                    "item": added}, seq),
            _event({"type": "response.output_text.delta", "item_id": msg_id,
                    "output_index": len(output), "content_index": 0, "delta": reply.text}, seq),
            _event({"type": "response.output_item.done", "output_index": len(output),
                    "item": done}, seq)]
        output.append(done)
    for i, c in enumerate(reply.calls):
        cid = call_id("call_", turn, step, i)
        if c.freeform:
            item = {"type": "custom_tool_call", "id": f"ctc_{cid}", "status": "completed",
                    "call_id": cid, "name": c.name, "input": c.input.get("input", "")}
        else:
            item = {"type": "function_call", "id": f"fc_{cid}", "status": "completed",
                    "call_id": cid, "name": c.name, "arguments": json.dumps(c.input)}
            if c.namespace:
                item["namespace"] = c.namespace
        parts += [
            _event({"type": "response.output_item.added", "output_index": len(output),
                    "item": {**item, "status": "in_progress"}}, seq),
            _event({"type": "response.output_item.done", "output_index": len(output),
                    "item": item}, seq)]
        output.append(item)
    done = _response(serial, model, "completed", output)
    done["usage"] = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                     "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": 15}
    parts.append(_event({"type": "response.completed", "response": done}, seq))
    return b"".join(parts)


def error(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"type": kind, "message": message, "code": kind}}).encode()
