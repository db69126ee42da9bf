"""The live sidecar's side of an agent hook: `turnback/hook/event` runs the hook's mapper here.

A hook process sends the agent's payload whole (hooks/fast.py), so an event costs one connection and
no compiling of the mapper. The mapper (`hooks.runtime.handle`) runs in a worker thread: the agent
record's file lock, transcript reads and the hook log all stay off the event loop. Every contract
call the mapper makes comes back to the loop as the same `TurnbackServer.call` a socket client's
request gets: the same mutation lock, the same session guard, the same errors. So an event mapped
here records exactly what the same event mapped in the hook process would.

The answer is what the hook prints and its exit status: `{exit, stdout, stderr}`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import io
import json
import os
from pathlib import Path

from pygls.exceptions import JsonRpcException

from ..errors import InvalidParams, TurnbackError
from .sockets import BY_NAME

METHOD = "turnback/hook/event"
CALL_TIMEOUT = 120.0  # seconds one contract call may take before the hook's event is given up
WAIT_STEP = 0.5       # how often a waiting call looks whether the sidecar is shutting down
HOOK_THREADS = 8      # events mapped at once; the others wait their turn (they queue on the record)
_pool: concurrent.futures.ThreadPoolExecutor | None = None


class OwnerPort:
    """The mapper's port inside the owner: contract calls sent to the loop from the worker thread."""

    name = "owner"

    def __init__(self, server, loop: asyncio.AbstractEventLoop):
        self.server = server
        self.loop = loop

    def call(self, method: str, params: dict) -> dict:
        from ..hooks.port import PortError

        spec = BY_NAME.get(method)
        if spec is None:
            raise PortError(f"turnback has no method {method}", "method-not-found")
        future = asyncio.run_coroutine_threadsafe(self.server.call(spec, params), self.loop)
        try:
            result = self._wait(future, method)
        except JsonRpcException as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            raise PortError(str(exc.message), str(data.get("code", "internal")), data) from None
        # What a socket client would have read: plain JSON values, never the workbench's own objects.
        result = json.loads(json.dumps(result, ensure_ascii=False, default=str))
        return result if isinstance(result, dict) else {"value": result}

    def _wait(self, future, method: str):
        """The call's result; given up when the sidecar shuts down or the call takes too long."""
        from ..hooks.port import PortError

        waited = 0.0
        while True:
            try:
                return future.result(WAIT_STEP)
            except concurrent.futures.TimeoutError:
                waited += WAIT_STEP
            if self.server.closed or self.loop.is_closed():
                future.cancel()
                raise PortError("the sidecar is shutting down", "shutting-down")
            if waited >= CALL_TIMEOUT:
                future.cancel()
                raise PortError(f"{method} took longer than {CALL_TIMEOUT:g} s", "timeout")

    def close(self) -> None:
        pass


async def handle_event(server, params) -> dict:
    """`{agent, payload}` (the payload as an object) or `{agent, payload64, cwd64, event?}` (its
    bytes, and the hook's own folder, base64-encoded: what hooks/fast.py sends)."""
    from ..hooks.agents import ADAPTERS

    if not isinstance(params, dict):
        raise InvalidParams("turnback/hook/event needs an object {agent, payload}")
    agent = params.get("agent")
    if agent not in ADAPTERS:
        raise InvalidParams(f"unknown agent {agent!r}; one of {', '.join(sorted(ADAPTERS))}")
    body, raw, cwd = _payload(params)
    wb = server.workbench()
    root, store = Path(wb.root), Path(wb.store.path)
    loop = asyncio.get_running_loop()

    def work() -> dict:
        from ..hooks.fast import cwd_of, find_workspace
        from ..hooks.runtime import handle

        place = find_workspace(cwd_of(raw, cwd))
        if place is None:
            return {"exit": 0, "stdout": "", "stderr": ""}  # in no workspace turnback knows
        if Path(place[0]) != root.resolve():
            raise OtherWorkspace(f"the payload's folder is in {place[0]}, not in {root}",
                                 data={"workspace": place[0]})
        out, err = io.StringIO(), io.StringIO()
        code = handle(agent, raw, body, root, store,
                      lambda config, record: OwnerPort(server, loop), out, err)
        return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    return await loop.run_in_executor(_executor(), work)


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    """The hooks' own threads: one waiting on the agent record's lock never holds up other work."""
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(HOOK_THREADS, thread_name_prefix="turnback-hook")
    return _pool


def _payload(params: dict):
    """(the payload's bytes or None, the payload parsed (None if not JSON), the hook's folder)."""
    from ..hooks.fast import parse

    if "payload" in params:
        if not isinstance(params["payload"], dict):
            raise InvalidParams("payload must be an object (the agent's hook payload)")
        return None, params["payload"], None
    try:
        body = base64.b64decode(params.get("payload64") or "", validate=True)
        cwd = os.fsdecode(base64.b64decode(params.get("cwd64") or "", validate=True)) or None
    except (binascii.Error, TypeError, ValueError):
        raise InvalidParams("payload64 and cwd64 must be base64 text") from None
    event = params.get("event")
    if event is not None and not isinstance(event, str):
        raise InvalidParams("event must be a string")
    return body, parse(body, event), cwd


class OtherWorkspace(TurnbackError):
    code = "other-workspace"
