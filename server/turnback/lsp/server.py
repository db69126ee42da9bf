"""`turnback serve`: the sidecar on stdio. The only module that registers pygls handlers.

Handlers are thin: they find the workbench, take the mutation lock when the call mutates, and hand
the contract's params dict to the workbench (the table is in `methods.py`). Long work (the sweeps of
turn begin and settle, collection) runs as workbench jobs advanced a slice at a time (`slices.py`),
so reads are answered between slices. Background tasks: lease renewal, observer take-over polling,
and the collection loop.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import os
import sys
import time
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..capture import parallel
from ..capture.ignore import IgnoreRules
from ..capture.watcher import Watcher  # imported here: compiling it on the loop held requests 14 ms
from ..errors import InvalidParams, NotOwner, TurnbackError
from ..hooks import after_rewind
from ..store import fsio, memory, waiting, zstdctx
from ..workbench import Options, Workbench
from ..workbench.collection import pack_all
from ..workbench.ownership import resign
from .errors import NotInitialized, to_rpc
from . import stalls
from .hookhost import METHOD as HOOK_METHOD
from .hookhost import handle_event, spool_loop
from .methods import METHODS, Method
from .protocol import TurnbackProtocol, converter_factory
from .reign import Reign
from .slices import Gate, SliceStats, cycles_deferred, reclaim_frozen, run_job

log = logging.getLogger("turnback.lsp")

OBSERVER_POLL_SECONDS = 1.0
GUARD_SECONDS = 1.0  # how often an owner looks at its folders' identity (and renews when due)
LOCAL_ONLY = {"turnback/ownership/takeover", "turnback/daemon/stop"}  # about this process: never relayed
COLLECT_IDLE_SECONDS = 1.0
RECLAIM_QUIET_SECONDS = 60  # this long with no mutation: time for one full gc pass (slices.py)
PROGRESS_EVERY_SECONDS = 0.2
NOTIFICATIONS = {"status": "turnback/status", "epoch": "turnback/epoch",
                 "directives": "turnback/directives", "rewound": "turnback/rewound",
                 "recovered": "turnback/recovered"}


class TurnbackServer(LanguageServer):
    """The pygls server plus the few things the handlers share: the workbench, the lock, the tasks."""

    def __init__(self) -> None:
        super().__init__("turnback", __version__, protocol_cls=TurnbackProtocol,
                         converter_factory=converter_factory,
                         text_document_sync_kind=types.TextDocumentSyncKind.None_)
        self.wb: Workbench | None = None
        self.closed = False
        self.lock = asyncio.Lock()          # serialises every mutation of the session and store
        self.collect_lock = asyncio.Lock()  # one collection at a time (background or requested)
        self.collect_wake = asyncio.Event()
        self.tasks: list[asyncio.Task] = []
        self._tokens = itertools.count(1)
        self.listener = None       # the private socket (sockets.Listener) while this server owns
        self.extra_methods: dict[str, Method] = {}  # socket-only methods (the daemon's stop)
        self.last_client_seen = time.monotonic()
        self.background = False    # a `serve --background` owner (daemon.py): stoppable by request
        self.relay = None          # an observer's connection to the live owner (relay.py)
        self.stop_event: asyncio.Event | None = None
        self.reign = Reign(self)   # how this process owns the store, and how that ends (reign.py)
        self._stdin = None         # the stdio reader (to end the session from here)
        self.exit_status = 0       # a background owner's (daemon.py): 4 when it could not listen
        self.extra_methods["turnback/daemon/stop"] = Method("turnback/daemon/stop", "read",
                                                            self._stop_requested)
        # an agent hook's whole event, mapped here (hookhost.py); socket clients only
        self.extra_methods[HOOK_METHOD] = Method(HOOK_METHOD, "hook", None)

    # -- plumbing -------------------------------------------------------------------------------
    def workbench(self) -> Workbench:
        if self.wb is None or self.closed:
            raise NotInitialized("the server has not been initialized with a workspace yet (or it "
                                 "has shut down); send initialize first")
        return self.wb

    def report_server_error(self, error, source):
        # Out-of-band errors (an undecodable message, a failing notification handler) are logged;
        # requests already answer with their own error.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def forward(self, name: str, payload: dict) -> None:
        method = NOTIFICATIONS.get(name)
        if method is None or self.closed:
            return
        if self.relay is not None and not self.relay.closed:
            return  # an observer attached to the owner: the owner's own notifications go out
        try:
            if self.protocol.writer is not None:
                self.protocol.notify(method, payload)
        except Exception:  # a broken pipe must not break the workbench operation that emitted
            log.exception("could not send %s", method)
        if self.listener is not None:
            self.listener.broadcast(method, payload)
        if name == "status" and payload.get("ownership") == "observer" and self.reign.holder \
                is not None and self.reign.ended is None:
            self.reign.lost()  # told first (above), then the listener goes

    def kick_collection(self) -> None:
        self.collect_wake.set()

    def client_supports(self, dotted: str) -> bool:
        try:
            return bool(get_capability(self.client_capabilities, dotted, False))
        except Exception:
            return False

    # -- progress -------------------------------------------------------------------------------
    def progress_begin(self, token, title: str) -> None:
        if token is not None:
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, percentage=0))

    def progress_report(self, token, message: str) -> None:
        if token is not None:
            self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))

    def progress_end(self, token, message: str) -> None:
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            self.work_done_progress.tokens.pop(token, None)

    async def server_token(self):
        """A token for server-initiated progress, only when the client supports it."""
        if not self.client_supports("window.work_done_progress"):
            return None
        token = f"turnback-{os.getpid()}-{next(self._tokens)}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), timeout=2.0)
        except Exception as exc:
            log.info("client refused progress token %s: %s", token, exc)
            return None
        return token

    # -- running contract methods ---------------------------------------------------------------
    async def call(self, spec: Method, params: Any):
        self.reign.verify()
        relay = self.relay
        if relay is not None and not relay.closed and self.wb is not None and not self.wb.is_owner \
                and spec.name not in LOCAL_ONLY:
            from .relay import relayed_call

            answered, result = await relayed_call(self, spec, _without_token(params))
            if answered:
                return result
        was_owner = self.wb is not None and self.wb.is_owner
        try:
            wb = self.workbench()
            wb.follow()  # an observer works from the owner's latest publication, not its own copy
            if spec.kind == "read":
                return spec.call(wb, params)
            if spec.kind == "hook":  # its own calls come back through here, each guarded
                return await handle_event(self, params)
            if spec.kind != "read-job":  # a read in slices may read a frozen or parked session
                wb.sessions.guard(params)  # a mutation aimed at a frozen or parked session is refused
            if spec.kind == "mutate":
                async with self.lock:
                    result = spec.call(wb, params)
                if not was_owner and wb.is_owner:  # a confirmed takeover: serve as the owner now
                    self.became_owner()
                self.kick_collection()
                return result
            if spec.kind in ("job", "read-job"):
                token = _token(params)
                async with self.lock:
                    job = spec.call(wb, params)
                    self.progress_begin(token, spec.title)
                    try:
                        result = await run_job(job, on_step=self._reporter(token),
                                               gate=Gate.for_method(spec.name))
                    finally:
                        self.progress_end(token, "done")
                self.kick_collection()
                return result
            if spec.kind == "collect":
                if not isinstance(params, (dict, type(None))):
                    raise InvalidParams(f"params must be an object, not {type(params).__name__}")
                return await self.collect(_token(params), params=params)
            raise AssertionError(f"unknown method kind {spec.kind}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise to_rpc(exc, spec.name) from None

    def _reporter(self, token):
        if token is None:
            return None
        last = [0.0]

        def on_step(value):
            now = time.monotonic()
            if now - last[0] < PROGRESS_EVERY_SECONDS:
                return
            last[0] = now
            walked, hashed = getattr(value, "walked", None), getattr(value, "hashed", None)
            if walked is not None:
                self.progress_report(token, f"{walked} files looked at, {hashed} read")
            elif isinstance(getattr(value, "progress", None), str):  # a step that words itself
                self.progress_report(token, value.progress)
        return on_step

    # -- collection -----------------------------------------------------------------------------
    async def collect(self, token=None, *, background: bool = False, params=None) -> dict:
        wb = self.workbench()
        if not wb.is_owner:
            owner = wb.owner_info()
            raise NotOwner(f"this server is a read-only observer; process {owner.get('pid')} on "
                           f"{owner.get('host')} owns the store and collects it",
                           data={"owner": {"pid": owner.get("pid"), "host": owner.get("host")}})
        feature = wb.collection
        async with self.collect_lock:
            if not hasattr(feature, "job"):
                if hasattr(feature, "run") and not background:
                    async with self.lock:
                        return feature.run(dict(params or {}))
                log.info("collection is not available in this build; nothing collected")
                return {"headsRetired": 0, "objectsDeleted": 0, "bytesFreed": 0, "bytesKept": 0,
                        "slices": 0, "maxSliceMs": 0.0, "available": False}
            stats = SliceStats()
            started = time.monotonic()
            self.progress_begin(token, "turnback: collecting unreferenced data")
            wb.collecting = True
            wb.emit_status()
            try:
                async with self.lock:
                    job = feature.job(**pack_all(params))
                # budget 0: the collector times its own slices; joining two of them held the loop 20 ms
                with cycles_deferred():
                    result = await run_job(job, lock=self.lock, stats=stats, budget=0.0,
                                           on_step=self._collect_reporter(token, stats))
            finally:
                wb.collecting = False
                if not self.closed:
                    wb.emit_status()
                self.progress_end(token, "collection finished")
            result = dict(result or {})
            result.setdefault("slices", stats.slices)
            result.setdefault("maxSliceMs", round(stats.max_slice_ms, 3))
            log.info("collection finished in %.1f ms: %s", (time.monotonic() - started) * 1000, result)
            return result

    def _collect_reporter(self, token, stats: SliceStats):
        if token is None:
            return None
        last = [0.0]

        def on_step(value):
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_SECONDS:
                last[0] = now
                self.progress_report(token, f"{stats.slices} slices" +
                                     (f": {value}" if isinstance(value, str) else ""))
        return on_step

    async def collection_loop(self) -> None:
        quiet = 0  # seconds in a row with nothing to collect and no mutation
        while not self.closed:
            try:
                await asyncio.wait_for(self.collect_wake.wait(), timeout=COLLECT_IDLE_SECONDS)
                quiet = 0
            except asyncio.TimeoutError:
                quiet += 1
                if quiet >= RECLAIM_QUIET_SECONDS and not self.lock.locked():
                    reclaim_frozen()  # once per deferred job: the garbage cycles it left frozen
            self.collect_wake.clear()
            wb = self.wb
            if (wb is None or self.closed or not wb.is_owner or not hasattr(wb.collection, "job")
                    or not getattr(wb.collection, "pending", False)):
                continue
            try:
                token = await self.server_token()
                await self.collect(token, background=True)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background collection failed; it will be retried")
            await asyncio.sleep(COLLECT_IDLE_SECONDS)  # coalesce triggers; never spin

    async def lease_loop(self) -> None:
        """Renew the lease on time, and look every GUARD_SECONDS whether the folders this owner
        opened are still where it opened them (a renamed workspace ends the reign: reign.py)."""
        period = max(0.5, self.wb.options.lease_ttl / 3.0)
        renewed = time.monotonic()
        while not self.closed:
            await asyncio.sleep(min(GUARD_SECONDS, period))
            wb = self.wb
            if self.closed or not wb.is_owner:
                renewed = time.monotonic()
                continue
            if self.reign.moved():
                wb.book.lose_ownership()  # says so (status), and the reign ends as moved
                continue
            if time.monotonic() - renewed < period:
                self.reign.verify()  # a takeover is noticed within a second, requests or not
                self.reign.guard_socket()
                continue
            try:
                await self.renew_off_the_loop(wb)
            except Exception as exc:
                log.error("could not renew ownership of the store: %s", exc)
                if not self.closed:
                    wb.emit_status()
            renewed = time.monotonic()
            self.give_back_idle_memory()

    async def renew_off_the_loop(self, wb) -> None:
        """The renewal writes the lease record (a temp file, its fsync, a rename, under the lease's
        lock) on a helper thread: on a disk whose journal was busy one such rename held the loop
        346 ms (3 December), none of it CPU. The record is the lease's own (a takeover or a close
        meets it under the same lock); a lease found lost is handled back here, on the loop."""
        owner = wb.book.owner
        if owner is None:
            return
        try:
            await asyncio.to_thread(owner.renew)
        except NotOwner:
            if not self.closed and wb.book.owner is owner:
                wb.book.lose_ownership()  # an observer now, and it says so
            raise

    def give_back_idle_memory(self) -> int:
        """The pack blocks kept for the next read (up to 16 MiB an owner held between turns) and
        the zstd contexts kept for the next compression (9.8 MiB a block's) go once none was used
        for a while; the bytes given back. On the loop: dropping a few big buffers, each returned
        to the system as it is freed."""
        freed = zstdctx.drop_idle()
        packs = getattr(getattr(self.wb.store, "objects", None), "packs", None)
        try:
            if packs is not None:
                freed += packs.drop_cache_if_idle()
        except Exception:  # noqa: BLE001 - memory, not state: the next renewal tries again
            log.exception("could not drop the idle pack cache")
        codec = getattr(getattr(self.wb, "book", None), "codec", None)
        parsed = getattr(codec, "parsed", None)
        if parsed is not None and parsed.drop_if_idle():  # decoded shards and turns (parsed.py)
            freed = freed or 1
        if freed:  # once an idle spell begins: what the heap kept of the last turn goes back too
            waiting.in_thread(memory.give_back)
        return freed

    async def observer_loop(self) -> None:
        wb = self.wb
        while not self.closed:
            await asyncio.sleep(OBSERVER_POLL_SECONDS)
            if self.closed or wb.is_owner or self.reign.ended == "moved" or self.background:
                continue  # a background owner that is no owner any more is leaving (reign.py)
            if self.relay is not None and not self.relay.closed:
                continue  # the owner answers (relay.py): there is nothing to take over
            if time.monotonic() >= self.reign.retry_at:
                await self.take_over_now()
            if not wb.is_owner and not self.closed:
                async with self.lock:
                    try:
                        wb.follow()  # the owner's new gaps and heads reach this client too
                        wb.emit_status()
                    except Exception:
                        log.exception("could not follow the owner")
            if not wb.is_owner and (self.relay is None or self.relay.closed):
                await self.attach_to_owner()

    async def take_over_now(self) -> bool:
        """Own the store if its owner is gone (the normal open-and-recover path); True if owner."""
        wb = self.wb
        if wb is None or self.closed or self.reign.ended == "moved":
            return False
        async with self.lock:
            if wb.is_owner:
                return True
            try:
                if not wb.try_take_over():
                    return False
            except Exception:
                log.exception("could not take over the store")
                return False
            log.info("the owner went away; this server now owns the store")
            self.became_owner()
            return True

    def became_owner(self) -> None:
        """Serve as the owner: a new reign, the socket, the watcher, no line to another owner."""
        if self.relay is not None:
            self.relay.close()
            self.relay = None
            self.wb.live.pop("attachedTo", None)
        if self.listener is not None and self.listener.superseded:
            self.listener.close(store_too=False)  # the clients of the earlier reign
            self.listener = None
        self.reign.begin()
        self.kick_collection()
        self.tasks.append(asyncio.get_running_loop().create_task(self.start_listening()))
        self.start_watcher()

    async def attach_to_owner(self) -> None:
        """An observer connects to the live owner's socket, when there is one, and relays."""
        from .relay import attach

        await attach(self)

    # -- captures from editor events ------------------------------------------------------------
    async def capture_uris(self, uris, phase: str, by: str = "save") -> None:
        wb = self.wb
        if wb is None or self.closed:
            return
        if self.relay is not None and not self.relay.closed and not wb.is_owner:
            if by == "watch":  # the owner captures what this editor saw, as it would its own
                self.relay.notify("workspace/didChangeWatchedFiles",
                                  {"changes": [{"uri": u, "type": 2} for u in uris]})
            else:
                for uri in uris:
                    self.relay.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            return
        rels = []
        for uri in uris:
            try:
                rels.append(wb.ws.to_rel(uri))
            except TurnbackError as exc:
                log.debug("not capturing %s: %s", uri, exc.message)
        if not rels:
            return
        async with self.lock:  # held throughout: saves are recorded in the order they arrived
            try:
                await run_job(wb.turns.capture_rels_job(rels, phase=phase, by=by))
            except Exception:
                log.exception("capture of %s failed", rels)
        self.kick_collection()

    async def opened(self, uri: str, text: str | None) -> None:
        wb = self.wb
        if wb is None or self.closed:
            return
        try:
            rel = wb.ws.to_rel(uri)
        except TurnbackError as exc:
            log.debug("not capturing %s: %s", uri, exc.message)
            return
        async with self.lock:
            try:
                await run_job(wb.turns.opened_job(rel, text))
            except Exception:
                log.exception("capture of opened %s failed", rel)

    def superseded_error(self) -> TurnbackError:
        return self.reign.error()

    def tell_and_stop(self, message: str) -> None:
        """Say why to every client, then end this process's session (the workspace moved)."""
        try:
            if self.protocol.writer is not None:
                self.protocol.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(
                    type=types.MessageType.Error, message=message))
        except Exception:
            log.exception("could not tell the editor")
        self.close_workbench()
        if self.stop_event is not None:
            self.stop_event.set()
        if self._stdin is not None:
            self._stdin.feed_eof()  # the stdio session ends as if the editor had closed it

    def _stop_requested(self, wb, params) -> dict:
        if not self.background or self.stop_event is None:
            raise TurnbackError("this owner serves an editor over stdio; it stops when the editor "
                                "closes its turnback session", code="not-background")
        asyncio.get_running_loop().call_soon(self.stop_event.set)
        return {"stopping": True, "pid": os.getpid()}

    # -- lifecycle ------------------------------------------------------------------------------
    def start_tasks(self) -> None:
        """The background work of an opened workbench: collection, lease renewal, take-over polling,
        and (for an owner) the private socket."""
        loop = asyncio.get_running_loop()
        stalls.start_from_env(loop)  # TURNBACK_LOOP_TRACE=MS: a diagnostic, off by default
        gc.freeze()  # the opened session's objects live as long as the server: keep them out of gc
        self.tasks += [loop.create_task(self.collection_loop()),
                       loop.create_task(self.lease_loop()),
                       loop.create_task(self.observer_loop()),
                       loop.create_task(spool_loop(self))]  # hook events no owner could take
        if self.wb.is_owner:
            self.became_owner()

    def start_watcher(self) -> None:
        """The owner watches the workspace, so its sweeps read only what may have changed."""
        wb = self.wb
        if (wb.rules is None or getattr(wb, "watcher", None) is not None
                or os.environ.get("TURNBACK_WATCHER", "on") == "off"):
            return
        watcher = Watcher(wb.ws, IgnoreRules(wb.ws))  # its own rules: it runs on its own thread
        watcher.start()
        wb.watcher = watcher

    def stop_watcher(self) -> None:
        watcher = getattr(self.wb, "watcher", None)
        if watcher is not None:
            self.wb.watcher = None
            watcher.close()

    async def start_listening(self) -> None:
        """Listen on the private socket; a refusal (an unsafe path) is logged, the server goes on."""
        from .sockets import Listener

        if self.listener is not None or self.closed or not self.wb.is_owner:
            return
        listener = Listener(self, str(self.wb.store.path))
        try:
            path = await listener.start()
        except Exception as exc:
            log.error("not listening on a socket: %s", exc)
            self.wb.live["socketError"] = str(exc)
            await self.cannot_serve(exc)
            return
        if self.closed or not self.wb.is_owner:
            listener.close()
            return
        self.listener = listener
        self.wb.listener = listener  # session/info reports its budgets (methods.py)
        self.wb.live["socket"] = path
        self.wb.live.pop("socketError", None)
        self.reign.listening()
        self.on_clients_changed()

    async def cannot_serve(self, exc: Exception) -> None:
        """An owner nobody else can reach must not keep the lease: the background owner releases it
        and leaves; an editor's sidecar releases it and serves its editor as an observer, trying
        again later (hooks and commands meanwhile open the store themselves)."""
        async with self.lock:
            self.reign.resign()
            self.stop_watcher()
            if self.listener is not None:  # what is left of a socket it can no longer trust
                self.listener.close(store_too=False)
                self.listener = None
                self.wb.live["socket"] = None
            try:
                resign(self.wb)
            except Exception:
                log.exception("could not give up the store's ownership")
        if self.background and self.stop_event is not None:
            self.exit_status = 4
            self.stop_event.set()

    def on_clients_changed(self) -> None:
        self.last_client_seen = time.monotonic()
        if self.wb is not None and self.listener is not None:
            self.wb.live["clients"] = len(self.listener.connections)

    def close_workbench(self) -> None:
        if self.wb is None or self.closed:
            return
        self.closed = True
        for task in self.tasks:
            task.cancel()
        if self.listener is not None:
            self.listener.close(store_too=self.reign.ended != "moved")
            self.listener = None
            self.wb.live["socket"] = None
        self.stop_watcher()
        self.reign.close_fds()
        if self.relay is not None:
            self.relay.close()
        try:
            self.wb.close()
        except Exception:
            log.exception("closing the workbench failed")


def _without_token(params):
    if isinstance(params, dict) and "workDoneToken" in params:
        return {k: v for k, v in params.items() if k != "workDoneToken"}
    return params


def _token(params):
    if isinstance(params, dict):
        token = params.get("workDoneToken")
        if isinstance(token, (str, int)) and not isinstance(token, bool):
            return token
    return None


def _root_of(params: types.InitializeParams) -> str:
    uri = params.root_uri
    if not uri and params.workspace_folders:
        uri = params.workspace_folders[0].uri
    if uri:
        path = to_fs_path(uri)
        if not path or not uri.lower().startswith("file:"):
            raise InvalidParams(f"the workspace {uri!r} is not a file URI on this machine")
        return path
    if params.root_path:
        return params.root_path
    raise InvalidParams("initialize needs a workspace: send rootUri or workspaceFolders")


# What a serving owner's jobs import on first use (the command line keeps them lazy, for its start):
# imported before the loop runs, since compiling them inside a job held the loop. Without cached
# bytecode the collector's first run compiled `collect` and `store.fsck` on the loop (70 ms), and
# the busy window's p99 was 22 to 30 ms against 9 to 13 ms with them compiled (docs/performance.md).
JOB_MODULES = (
    "turnback.capture.sweep",  # every sweep
    "turnback.collect",  # the collector, its fsck checks and its repack
    "turnback.hooks.agents", "turnback.hooks.drain", "turnback.hooks.fast",
    "turnback.hooks.port", "turnback.hooks.runtime",  # the hook events an owner is sent
    "turnback.store.agentrecord",  # a turn's agent record
    "turnback.travel.disk", "turnback.travel.recovered",  # an opened file; a recovery's notice
)


def preload_job_modules() -> None:
    import importlib

    for name in JOB_MODULES:
        importlib.import_module(name)


def create_server() -> TurnbackServer:
    preload_job_modules()
    parallel.read_in_workers_from_the_first_miss()  # a sweep's reads off the loop
    server = TurnbackServer()

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams):
        if server.wb is not None:
            raise to_rpc(TurnbackError("the server is already initialized", code="invalid-request"))
        try:
            root = _root_of(params)
            options = Options.from_init(params.initialization_options)
            if not os.path.isdir(root):
                raise InvalidParams(f"the workspace folder {root} does not exist")
            server.wb = Workbench.open(root, options)
        except Exception as exc:
            raise to_rpc(exc, "initialize") from None
        server.wb.events.subscribe(server.forward)
        after_rewind.attach(server.wb, background=True)  # [hooks] after-rewind, off the loop
        log.info("workspace %s opened as %s", root, server.wb.info()["ownership"])

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams):
        wb = server.wb
        if wb is None:
            return
        loop = asyncio.get_running_loop()
        server.start_tasks()
        if not wb.is_owner:
            await server.attach_to_owner()
        else:
            wb.announce_recovery()  # what opening the store rolled back or finished, if anything
        wb.emit_status(force=True)
        server.kick_collection()
        if server.client_supports("workspace.did_change_watched_files.dynamic_registration"):
            server.tasks.append(loop.create_task(register_watcher(server)))

    @server.feature(types.SHUTDOWN)
    async def shutdown(params):
        async with server.lock:
            server.close_workbench()

    @server.feature(types.EXIT)
    def exit_(params):
        server.close_workbench()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams):
        await server.opened(params.text_document.uri, params.text_document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
    async def did_save(params: types.DidSaveTextDocumentParams):
        await server.capture_uris([params.text_document.uri], "after")

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams):
        pass

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched(params: types.DidChangeWatchedFilesParams):
        await server.capture_uris([c.uri for c in params.changes], "after", "watch")

    for spec in METHODS:
        _register(server, spec)
    return server


def _register(server: TurnbackServer, spec: Method) -> None:
    async def request(params):
        return await server.call(spec, params)

    async def command(*args):
        if len(args) > 1:
            raise to_rpc(InvalidParams(f"{spec.command} takes one argument (the params object), "
                                       f"not {len(args)}"), spec.command)
        return await server.call(spec, args[0] if args else {})

    server.feature(spec.name)(request)
    server.command(spec.command)(command)


async def register_watcher(server: TurnbackServer) -> None:
    wb = server.wb
    root_uri = wb.root.as_uri()
    if server.client_supports("workspace.did_change_watched_files.relative_pattern_support"):
        pattern: Any = types.RelativePattern(base_uri=root_uri, pattern="**/*")
    else:
        pattern = "**/*"
    registration = types.Registration(
        id="turnback-workspace-watcher", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=pattern)]))
    try:
        await asyncio.wait_for(server.client_register_capability_async(
            types.RegistrationParams(registrations=[registration])), timeout=10.0)
        log.info("registered a file watcher for %s", root_uri)
    except Exception as exc:
        log.warning("the client did not register the file watcher: %s", exc)


def serve() -> None:
    """Run the sidecar on stdin/stdout until the client says exit (or closes the pipe)."""
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("TURNBACK_LOG", "WARNING").upper(),
                        format="turnback %(levelname)s %(name)s: %(message)s")
    fsio.install_from_env()  # TURNBACK_CRASH_AT / TURNBACK_FAIL_AT, for crash tests
    server = create_server()
    try:
        try:
            asyncio.run(_serve_stdio(server))
        except _NotAPipe:
            server.start_io()  # stdin is a regular file: pygls's own (threaded) reader copes
        except (KeyboardInterrupt, SystemExit, BrokenPipeError):
            pass
    finally:
        server.close_workbench()


class _NotAPipe(Exception):
    pass


class _PipeReader:
    """stdin as the event loop's own pipe reader. pygls's default reader asks a thread pool for
    every header line and body, one loop round trip each; while a collection keeps the loop busy in
    10 ms slices, those round trips queued requests behind whole collections. Read by the selector,
    a message arrives in one step."""

    def __init__(self, stream: asyncio.StreamReader):
        self.stream = stream

    async def readline(self) -> bytes:
        return await self.stream.readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError:
            return b""  # the client went away mid-message


async def _serve_stdio(server) -> None:
    import threading

    from pygls.io_ import StdoutWriter, run_async

    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=1 << 26)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), sys.stdin.buffer)
    except ValueError as exc:
        raise _NotAPipe() from exc
    server._stdin = stream
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        await run_async(stop_event=server._stop_event, reader=_PipeReader(stream),
                        protocol=server.protocol, logger=log,
                        error_handler=server.report_server_error)
    finally:
        server.shutdown()
