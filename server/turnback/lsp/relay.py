"""An observer's line to the live owner: the second editor is a client of the one sidecar too.

An editor whose `turnback serve` finds the store owned (by the background owner, or another editor)
would otherwise be a read-only observer. While the owner answers on its socket, this server keeps one
connection to it: every contract request is forwarded and answered by the owner, and the owner's
notifications reach this editor. When the owner goes away the connection closes: the server takes the
store over at once (the normal open-and-recover path) and answers the request itself when that
cannot apply it twice (`answer_after_loss`). An owner that holds its socket but cannot answer (it is
stopped, or wedged) is given up the way the thin client gives it up (`remote/client.py`): the line
closes and the editor is a plain observer until the owner answers again or is gone.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import time

from pygls.exceptions import JsonRpcException

from ..errors import TurnbackError
from ..remote.client import POLL_SECONDS, PROBE_SECONDS, STALL_SECONDS, STOPPED_SECONDS, frame
from ..remote.wire import peer, stopped
from .methods import Kind

log = logging.getLogger("turnback.relay")

# Requests the new owner may run again when the old one died with them unanswered: reads, and
# mutations whose own checks make a second application impossible (a plan hash, a running turn,
# a capture of what is on disk now). An append (a step, a response) might have been recorded by
# the owner that died: it is answered `owner-gone` instead, never applied twice.
RERUN_SAFE = {"turnback/turn/begin", "turnback/turn/settle", "turnback/turn/capture",
              "turnback/workflow/set", "turnback/rewind/prepare", "turnback/rewind/commit",
              "turnback/redo/prepare", "turnback/redo/commit", "turnback/fork/prepare",
              "turnback/fork/confirm", "turnback/recovery/resolve"}


NOTIFICATIONS = ("turnback/status", "turnback/epoch", "turnback/directives")


class RelayGone(Exception):
    """The owner's connection closed; the caller answers locally."""


async def attach(server) -> None:
    """Connect an observer to the live owner's socket, when there is one (never its own)."""
    from ..remote.client import NoOwner, RemoteError, owner_socket

    if os.environ.get("TURNBACK_ATTACH", "on") == "off":
        return  # stay a plain read-only observer (tests of the observer itself)
    try:  # a thread: a full listen queue holds a connect for a while
        path = await asyncio.to_thread(owner_socket, server.wb.root, str(server.wb.store.path))
    except (NoOwner, RemoteError) as exc:
        log.warning("not attaching to the owner: %s", exc)
        return
    if path is None or server.closed or server.wb.is_owner:
        return
    relay = Relay(lambda method, params: _relayed(server, relay, method, params))
    try:
        await relay.open(path)
    except OSError as exc:
        log.info("could not attach to the owner at %s: %s", path, exc)
        return
    server.relay = relay
    server.wb.live["attachedTo"] = path
    log.info("attached to the owner at %s: requests go there", path)
    try:
        status = await relay.request("turnback/session/status", {})
        _relayed(server, relay, "turnback/status", status)
    except Exception:
        pass


def _relayed(server, relay: "Relay", method: str, params) -> None:
    """The owner's notifications reach this editor. One that says it is no owner any more
    (superseded) ends the line: the next poll finds the real owner."""
    if server.closed or method not in NOTIFICATIONS:
        return
    if method == "turnback/status" and isinstance(params, dict) \
            and params.get("ownership") == "observer":
        relay.close()
        server.wb.live.pop("attachedTo", None)
    try:
        if server.protocol.writer is not None:
            server.protocol.notify(method, params)
    except Exception:
        log.exception("could not relay %s", method)


async def relayed_call(server, spec, params) -> tuple[bool, object]:
    """(True, result) when the owner answered; (False, None) when the request is to be answered
    here. An owner that went away mid-request: the store is taken over first (`answer_after_loss`
    says whether this server may run it again). An owner that answers `not-owner` was superseded:
    the line goes, and the request (never applied there) is asked again of the real owner."""
    from .errors import to_rpc

    for _attempt in range(2):
        relay = server.relay
        if relay is None or relay.closed:
            break
        try:
            return True, await relay.request(spec.name, params)
        except RelayGone:
            await server.observer.take_over_now()
            answer_after_loss(server, spec)
            return False, None
        except JsonRpcException as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            gone = data.get("code") == "not-owner" and (data.get("owner") or {}).get("pid") \
                != relay.owner_pid
            if not gone:
                raise to_rpc(exc, spec.name) from None
            relay.close()
            server.wb.live.pop("attachedTo", None)
            if await server.observer.take_over_now():
                return False, None
            await attach(server)
        except Exception as exc:
            raise to_rpc(exc, spec.name) from None
    return False, None


def answer_after_loss(server, spec) -> None:
    """After the owner vanished mid-request and this server tried to take over: return to answer
    it here, or raise when running it here might apply it twice."""
    wb = server.wb
    if spec.kind in (Kind.READ, Kind.READ_JOB, Kind.COLLECT) or spec.name in RERUN_SAFE or not wb.is_owner:
        return  # an observer's answer (not-owner for a mutation) says where things stand
    raise TurnbackError(f"the owner went away while it handled {spec.name}; this editor owns the "
                        "store now, but cannot tell whether that request was recorded: look at "
                        "the session (turnback/session/log) before sending it again",
                        code="owner-gone", data={"ownership": "owner", "method": spec.name})


class Relay:
    def __init__(self, on_notification):
        self.on_notification = on_notification
        self.pending: dict[int, asyncio.Future] = {}
        self.ids = itertools.count(1)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task | None = None
        self.watchdog: asyncio.Task | None = None
        self.closed = False
        self.owner_pid: int | None = None
        self.heard = time.monotonic()

    async def open(self, path: str) -> None:
        self.reader, self.writer = await asyncio.open_unix_connection(path, limit=1 << 26)
        sock = self.writer.get_extra_info("socket")
        who = peer(sock) if sock is not None else None
        if who is not None and (who[1] != os.getuid() or who[0] == os.getpid()):
            self.writer.close()
            self.closed = True
            raise OSError(f"the process on {path} (pid {who[0]}, user {who[1]}) is not another "
                          "owner of this user's")
        self.owner_pid = who[0] if who is not None else None
        loop = asyncio.get_running_loop()
        self.task = loop.create_task(self._read())
        self.watchdog = loop.create_task(self._watch())

    async def request(self, method: str, params) -> object:
        if self.closed:
            raise RelayGone()
        msg_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        if not self.pending:
            self.heard = time.monotonic()  # silence counts from the first request waiting
        self.pending[msg_id] = future
        try:
            self.writer.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method,
                                     "params": params}))
            reply = await future
        except asyncio.CancelledError:
            if not self.closed:
                self.writer.write(frame({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                         "params": {"id": msg_id}}))
            raise
        finally:
            self.pending.pop(msg_id, None)
        if "error" in reply:
            err = reply["error"] or {}
            raise JsonRpcException(code=err.get("code", -32603), message=err.get("message", ""),
                                   data=err.get("data"))
        return reply.get("result")

    def notify(self, method: str, params) -> None:
        if not self.closed:
            self.writer.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def _watch(self) -> None:
        """Give the owner up when it cannot answer: stopped for STOPPED_SECONDS, or silent for
        STALL_SECONDS with requests waiting and no answer to a status question within
        PROBE_SECONDS."""
        stopped_since = None
        while not self.closed:
            await asyncio.sleep(POLL_SECONDS)
            if not self.pending:
                stopped_since = None
                continue
            now = time.monotonic()
            if self.owner_pid is not None and stopped(self.owner_pid):
                stopped_since = stopped_since or now
                if now - stopped_since >= STOPPED_SECONDS:
                    log.warning("the owner (pid %s) is stopped: not waiting for it", self.owner_pid)
                    self.close()
                continue
            stopped_since = None
            if now - self.heard < STALL_SECONDS:
                continue
            try:
                await asyncio.wait_for(self.request("turnback/session/status", {}), PROBE_SECONDS)
            except (asyncio.TimeoutError, RelayGone):
                log.warning("the owner (pid %s) answers nothing: not waiting for it", self.owner_pid)
                self.close()
            except Exception:
                pass  # an error answer is an answer: it is alive

    async def _read(self) -> None:
        try:
            while True:
                length = None
                while True:
                    line = await self.reader.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None:
                    return
                message = json.loads(await self.reader.readexactly(length))
                self.heard = time.monotonic()
                if "id" in message and "method" not in message:
                    future = self.pending.get(message["id"])
                    if future is not None and not future.done():
                        future.set_result(message)
                elif isinstance(message.get("method"), str):
                    self.on_notification(message["method"], message.get("params"))
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
            log.info("the owner's connection broke: %s", exc)
        finally:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self.pending.values():
            if not future.done():
                future.set_exception(RelayGone())
        if self.writer is not None:
            self.writer.close()
        for task in (self.task, self.watchdog):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
