"""An answer encoded in slices: a big result (a Redo listing of every group, a session log) is turned
into JSON a piece at a time, giving the loop back between pieces, so its encoding never holds the
loop longer than a slice (the loop tracer saw one `json.dumps` of a 100-turn listing hold it for
13 to 29 ms of CPU). The text is the same as `json.dumps` of the whole with its default separators,
byte for byte (the lean command line matches the start of a begin's answer).

A value the plain encoder cannot write (a non-string key, an object) is left to the caller's own
path, which encodes it as it always did.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Callable

SLICE_SECONDS = 0.002  # encode this long, then let the loop run
DEPTH = 2  # the answer and its lists are written piece by piece; each item (a group, a turn) whole


class Encoded(str):
    """A result already written as JSON text."""


async def encoded(value: Any, *, ensure_ascii: bool = True,
                  default: Callable[[Any], Any] | None = None) -> Any:
    """`value` as `Encoded` JSON text, written in slices; `value` itself when it is not plain JSON."""
    parts: list[str] = []
    started = time.perf_counter()

    def dump(v: Any) -> str:
        return json.dumps(v, ensure_ascii=ensure_ascii, default=default)

    async def write(v: Any, depth: int) -> None:
        nonlocal started
        if depth < DEPTH and isinstance(v, dict) and v:
            for i, (k, x) in enumerate(v.items()):
                if not isinstance(k, str):
                    raise TypeError("a key that is not a string")
                parts.append(("{" if i == 0 else ", ") + dump(k) + ": ")
                await write(x, depth + 1)
            parts.append("}")
        elif depth < DEPTH and isinstance(v, (list, tuple)) and v:
            for i, x in enumerate(v):
                parts.append("[" if i == 0 else ", ")
                await write(x, depth + 1)
            parts.append("]")
        else:
            parts.append(dump(v))
            if time.perf_counter() - started > SLICE_SECONDS:
                await asyncio.sleep(0)
                started = time.perf_counter()

    try:
        await write(value, 0)
    except (TypeError, ValueError):
        return value
    return Encoded("".join(parts))


def response_text(msg_id: Any, result: Encoded) -> str:
    """The JSON-RPC response carrying an encoded result, as `json.dumps` would write it."""
    return '{"jsonrpc": "2.0", "id": %s, "result": %s}' % (json.dumps(msg_id), result)
