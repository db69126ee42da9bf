"""The live sidecar's side of an agent hook: `turnback/hook/event` runs the hook's mapper here.

A hook process sends the agent's payload whole (hooks/fast.py), so an event costs one connection and
no compiling of the mapper. The mapper (`hooks.runtime.handle`) runs in a worker thread: the agent
record's file lock, transcript reads and the hook log all stay off the event loop. Every contract
call the mapper makes comes back to the loop as the same `TurnbackServer.call` a socket client's
request gets: the same mutation lock, the same session guard, the same errors. So an event mapped
here records exactly what the same event mapped in the hook process would.

The answer is what the hook prints and its exit status: `{exit, stdout, stderr}`.

Before it maps an event, the owner replays the hook spool (`hooks/drain.py`: events no owner could
take, in order), and it looks for one every few seconds as well (`spool_loop`). The worker threads
are daemon threads and every wait in them has a budget and watches for the sidecar stopping, so a
hook in flight never keeps a stopping owner alive; the event it carried is then in the spool.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import logging
import os
import threading
from pathlib import Path

from pygls.exceptions import JsonRpcException

from ..errors import InvalidParams, TurnbackError
from .sockets import BY_NAME

log = logging.getLogger("turnback.hooks")

METHOD = "turnback/hook/event"
CALL_TIMEOUT = 120.0  # seconds one contract call may take before the hook's event is given up
WAIT_STEP = 0.1       # how often a waiting call looks whether the sidecar is shutting down
HOOK_THREADS = 8      # events mapped at once; the others wait their turn (they queue on the record)
SPOOL_POLL_SECONDS = 2.0  # how often an owner looks for a spool no hook event made it drain
JOIN_WAIT_SECONDS = 1.0  # how long an event waits for a replay under way before joining the spool
DRAIN_LOCK_SECONDS = 1.0  # a replay waits this long for the agent record's lock, then tries later
_slots = threading.BoundedSemaphore(HOOK_THREADS)


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
        if _stopping(self.server, self.loop):
            raise PortError("the sidecar is shutting down", "shutting-down")
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
        import concurrent.futures

        from ..hooks.port import PortError

        waited = 0.0
        while True:
            try:
                return future.result(WAIT_STEP)
            except concurrent.futures.TimeoutError:
                waited += WAIT_STEP
            if _stopping(self.server, self.loop):
                future.cancel()
                raise PortError("the sidecar is shutting down", "shutting-down")
            if waited >= CALL_TIMEOUT:
                future.cancel()
                raise PortError(f"{method} took longer than {CALL_TIMEOUT:g} s", "timeout")

    def close(self) -> None:
        pass


def _stopping(server, loop) -> bool:
    return server.closed or loop.is_closed() or (
        server.stop_event is not None and server.stop_event.is_set())


async def handle_event(server, params) -> dict:
    """`{agent, payload}` (the payload as an object) or `{agent, payload64, cwd64, event?}` (its
    bytes, and the hook's own folder, base64-encoded: what hooks/fast.py sends); `eventId` is the
    event's id (an event is recorded once, however often it is sent); `hookParent` the hook
    process's parent pid (it leads to the agent's process: a killed agent's turn ends at once)."""
    from ..hooks.agents import ADAPTERS

    if not isinstance(params, dict):
        raise InvalidParams("turnback/hook/event needs an object {agent, payload}")
    agent = params.get("agent")
    if agent not in ADAPTERS:
        raise InvalidParams(f"unknown agent {agent!r}; one of {', '.join(sorted(ADAPTERS))}")
    event_id = params.get("eventId")
    if event_id is not None and not (isinstance(event_id, str) and 0 < len(event_id) <= 64):
        raise InvalidParams("eventId must be a string of 1 to 64 characters")
    body, raw, cwd = _payload(params)
    hook_parent = params.get("hookParent")
    if hook_parent is not None and (type(hook_parent) is not int or hook_parent <= 0):
        raise InvalidParams("hookParent must be a process id")
    wb = server.workbench()
    root, store = Path(wb.root), Path(wb.store.path)
    loop = asyncio.get_running_loop()
    waiting = not await drain_spool(server)  # what no owner could take comes first, in order

    def work() -> dict:
        from ..hooks.fast import cwd_of, locate
        from ..hooks import Missed
        from ..hooks.runtime import handle, undelivered

        place, refused = locate(cwd_of(raw, cwd))
        if place is None:
            if refused:
                log.warning("a hook event was refused: %s", refused)
            return {"exit": 0, "stdout": "", "stderr": ""}  # in no workspace turnback knows
        if Path(place[0]) != root.resolve():
            raise OtherWorkspace(f"the payload's folder is in {place[0]}, not in {root}",
                                 data={"workspace": place[0]})
        out, err = io.StringIO(), io.StringIO()
        if waiting:  # earlier events still wait in the spool: this one joins them, in order
            data = body if body is not None else json.dumps(raw).encode()
            code = undelivered(agent, raw, data, params.get("event"), event_id or os.urandom(8).hex(),
                               place, Missed("earlier events still wait in the spool", sent=False),
                               stderr=err)
        else:
            code = handle(agent, raw, body, root, store,
                          lambda config, record: OwnerPort(server, loop), out, err,
                          event_id=event_id, stop=lambda: _stopping(server, loop),
                          on_refused=lambda why: log.warning("a hook event was refused: %s", why),
                          hook_parent=hook_parent)
        return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    return await in_thread(work)


async def in_thread(fn):
    """Run `fn` on a daemon thread (at most HOOK_THREADS at once) and await its result. Daemon
    threads, so a stopping owner never waits for one: every wait inside has its own budget."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(setter, value) -> None:
        if not future.done():
            setter(value)

    def target() -> None:
        with _slots:
            try:
                result = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                _deliver(loop, settle, future.set_exception, exc)
            else:
                _deliver(loop, settle, future.set_result, result)

    threading.Thread(target=target, name="turnback-hook", daemon=True).start()
    return await future


def _deliver(loop, settle, setter, value) -> None:
    try:
        loop.call_soon_threadsafe(settle, setter, value)
    except RuntimeError:
        pass  # the loop closed: nobody waits for this answer any more


def _drain_gate(server) -> asyncio.Lock:
    gate = getattr(server, "_spool_gate", None)
    if gate is None:
        gate = server._spool_gate = asyncio.Lock()
    return gate


async def _released(gate: asyncio.Lock) -> None:
    async with gate:
        pass


async def drain_spool(server) -> bool:
    """Replay the store's hook spool, if there is one, before anything else is mapped; whether it
    is empty now (False: some events could not be recorded yet and wait, or a replay is under way,
    which will also take whatever joins the spool meanwhile)."""
    from ..agents import spool

    wb = server.wb
    if wb is None or server.closed or not wb.is_owner:
        return True
    store = Path(wb.store.path)
    gate = _drain_gate(server)
    if gate.locked():
        # A replay under way (a new owner's first look): an event that arrives meanwhile waits a
        # moment for it, then is recorded itself, in order, instead of joining the spool for the
        # next look (SPOOL_POLL_SECONDS later).
        try:
            await asyncio.wait_for(_released(gate), JOIN_WAIT_SECONDS)
        except asyncio.TimeoutError:
            pass
        return not spool.pending(store)
    async with gate:
        if not spool.pending(store):
            return True
        root, loop = Path(wb.root), asyncio.get_running_loop()

        def work() -> dict:
            from ..hooks.drain import drain
            from ..hooks.runtime import handle
            from ..agents.agentrecord import AgentRecord

            return drain(root, store, lambda config, record: OwnerPort(server, loop),
                         AgentRecord(store).log, handle=handle, stop=lambda: _stopping(server, loop),
                         lock_seconds=DRAIN_LOCK_SECONDS)

        try:
            done = await in_thread(work)
            log.info("hook spool of %s: %s", store, done)
        except Exception:
            log.exception("the hook spool of %s could not be replayed; it is kept", store)
        return not spool.pending(store)


async def spool_loop(server) -> None:
    """An owner's look for a spool every few seconds (a hook that found its owner stopped or its
    lock held leaves one), so what it holds is recorded even if no other hook event comes."""
    while not server.closed:
        await drain_spool(server)
        await asyncio.sleep(SPOOL_POLL_SECONDS)


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
