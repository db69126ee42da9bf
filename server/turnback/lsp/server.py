"""The sidecar's dispatcher: the only module that registers pygls handlers.

Registration and dispatch only. Every contract method of `methods.py` is a request and a
`workspace/executeCommand` command; `call` finds the workbench, relays to the live owner when this
is an observer attached to one (relay.py), and hands the request to the runner of its `Kind`
(runners.py). Long work runs as workbench jobs advanced a slice at a time (slices.py), so reads are
answered between slices. The background work is a closed set of services (services/), started
from `initialized` and stopped from `shutdown`; stdio is `stdio.py`, the socket `sockets.py`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..capture import parallel
from ..errors import InvalidParams, TurnbackError
from ..hooks import after_rewind
from ..workbench import Options, Workbench
from . import editor, stalls
from .errors import NotInitialized, to_rpc
from .hookhost import METHOD as HOOK_METHOD
from .methods import METHODS, Kind, Method
from .preload import preload_job_modules
from .progress import Progress, without_token
from .encoding import encoded
from .protocol import TurnbackProtocol, converter_factory
from .reign import Reign
from .runners import RUNNERS
from .services import Service
from .services.collection import CollectionService
from .services.lease import LeaseService
from .services.listening import ListenerService
from .services.memory import IdleMemoryService
from .services.observer import ObserverService
from .services.spool import SpoolService
from .services.watcher import WatcherService

if TYPE_CHECKING:
    from .sockets import Listener

log = logging.getLogger("turnback.lsp")

LOCAL_ONLY = {"turnback/ownership/takeover", "turnback/daemon/stop"}  # about this process: never relayed
NOTIFICATIONS = {"status": "turnback/status", "epoch": "turnback/epoch",
                 "directives": "turnback/directives", "rewound": "turnback/rewound",
                 "recovered": "turnback/recovered"}


class TurnbackServer(LanguageServer):
    """The pygls server plus what the handlers share: the workbench, the lock, the services."""

    def __init__(self) -> None:
        super().__init__("turnback", __version__, protocol_cls=TurnbackProtocol,
                         converter_factory=converter_factory,
                         text_document_sync_kind=types.TextDocumentSyncKind.None_)
        self.wb: Workbench | None = None
        self.closed = False
        self.lock = asyncio.Lock()  # serialises every mutation of the session and store
        self.tasks: list[asyncio.Task[Any]] = []  # one-off work (registration, a reign's end)
        self.last_client_seen = time.monotonic()
        self.background = False    # a `serve --background` owner (daemon.py): stoppable by request
        self.relay: Any = None     # an observer's connection to the live owner (relay.py)
        self.stop_event: asyncio.Event | None = None
        self.stdin: asyncio.StreamReader | None = None  # the stdio reader (to end the session here)
        self.exit_status = 0       # a background owner's (daemon.py): 4 when it could not listen
        self.reign = Reign(self)   # how this process owns the store, and how that ends (reign.py)
        self.work_progress = Progress(self)
        self.collection = CollectionService(self)
        self.lease = LeaseService(self)
        self.idle_memory = IdleMemoryService(self)
        self.observer = ObserverService(self)
        self.spool = SpoolService(self)  # hook events no owner could take
        self.listening = ListenerService(self)
        self.watcher = WatcherService(self)
        self.services: tuple[Service, ...] = (self.collection, self.lease, self.idle_memory,
                                              self.observer, self.spool, self.listening,
                                              self.watcher)
        self.extra_methods: dict[str, Method] = {  # socket-only methods
            "turnback/daemon/stop": Method("turnback/daemon/stop", Kind.READ, self._stop_requested),
            HOOK_METHOD: Method(HOOK_METHOD, Kind.HOOK, None),  # an agent hook's whole event
        }

    # -- what the handlers and services share ---------------------------------------------------
    def workbench(self) -> Workbench:
        if self.wb is None or self.closed:
            raise NotInitialized("the server has not been initialized with a workspace yet (or it "
                                 "has shut down); send initialize first")
        return self.wb

    @property
    def listener(self) -> Listener | None:
        """The private socket while this server owns the store (services/listening.py)."""
        return self.listening.listener

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Out-of-band errors (an undecodable message, a failing notification handler) are logged;
        # requests already answer with their own error.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def forward(self, name: str, payload: dict[str, Any]) -> None:
        """A workbench event to every client: the editor on stdio and the socket's clients."""
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
        self.collection.kick()

    def on_clients_changed(self) -> None:  # sockets.Listener's
        self.listening.clients_changed()

    def client_supports(self, dotted: str) -> bool:
        try:
            return bool(get_capability(self.client_capabilities, dotted, False))
        except Exception:
            return False

    # -- dispatch -------------------------------------------------------------------------------
    async def call(self, spec: Method, params: Any) -> Any:
        self.reign.verify()
        relay = self.relay
        if relay is not None and not relay.closed and self.wb is not None and not self.wb.is_owner \
                and spec.name not in LOCAL_ONLY:
            from .relay import relayed_call

            answered, result = await relayed_call(self, spec, without_token(params))
            if answered:
                return result
        try:
            wb = self.workbench()
            wb.follow()  # an observer works from the owner's latest publication, not its own copy
            return await RUNNERS[spec.kind](self, spec, wb, params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise to_rpc(exc, spec.name) from None

    # -- services and reigns --------------------------------------------------------------------
    def start_services(self) -> None:
        """The background work of an opened workbench; a reign for an owner."""
        stalls.start_from_env(asyncio.get_running_loop())  # TURNBACK_LOOP_TRACE=MS, a diagnostic
        gc.freeze()  # the opened session's objects live as long as the server: keep them out of gc
        for service in self.services:
            service.start()
        if self.wb is not None and self.wb.is_owner:
            self.became_owner()

    def became_owner(self) -> None:
        """Serve as the owner: no line to another owner, a new reign, the services told."""
        self.observer.detach()
        self.listening.drop_superseded()
        self.reign.begin()
        for service in self.services:
            service.became_owner()

    def close_workbench(self) -> None:
        if self.wb is None or self.closed:
            return
        self.closed = True
        for task in self.tasks:
            task.cancel()
        for service in self.services:
            service.stop()
        self.reign.close_fds()
        if self.relay is not None:
            self.relay.close()
        try:
            self.wb.close()
        except Exception:
            log.exception("closing the workbench failed")

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
        if self.stdin is not None:
            self.stdin.feed_eof()  # the stdio session ends as if the editor had closed it

    def _stop_requested(self, wb: Workbench, params: Any) -> dict[str, Any]:
        if not self.background or self.stop_event is None:
            raise TurnbackError("this owner serves an editor over stdio; it stops when the editor "
                                "closes its turnback session", code="not-background")
        asyncio.get_running_loop().call_soon(self.stop_event.set)
        return {"stopping": True, "pid": os.getpid()}


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


def create_server() -> TurnbackServer:
    preload_job_modules()
    parallel.read_in_workers_from_the_first_miss()  # a sweep's reads off the loop
    server = TurnbackServer()

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
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
    async def initialized(params: types.InitializedParams) -> None:
        wb = server.wb
        if wb is None:
            return
        server.start_services()
        if not wb.is_owner:
            await server.observer.attach()
        else:
            wb.announce_recovery()  # what opening the store rolled back or finished, if anything
        wb.emit_status(force=True)
        server.kick_collection()
        if server.client_supports("workspace.did_change_watched_files.dynamic_registration"):
            server.tasks.append(asyncio.get_running_loop().create_task(
                editor.register_watcher(server)))

    @server.feature(types.SHUTDOWN)
    async def shutdown(params: None) -> None:
        async with server.lock:
            server.close_workbench()

    @server.feature(types.EXIT)
    def exit_(params: None) -> None:
        server.close_workbench()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams) -> None:
        await editor.opened(server, params.text_document.uri, params.text_document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
    async def did_save(params: types.DidSaveTextDocumentParams) -> None:
        await editor.capture_uris(server, [params.text_document.uri], "after")

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        pass

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched(params: types.DidChangeWatchedFilesParams) -> None:
        await editor.capture_uris(server, [c.uri for c in params.changes], "after", "watch")

    for spec in METHODS:
        _register(server, spec)
    return server


def _register(server: TurnbackServer, spec: Method) -> None:
    async def request(params: Any) -> Any:
        return await encoded(await server.call(spec, params))  # in slices (encoding.py)

    async def command(*args: Any) -> Any:
        if len(args) > 1:
            raise to_rpc(InvalidParams(f"{spec.command} takes one argument (the params object), "
                                       f"not {len(args)}"), spec.command)
        return await encoded(await server.call(spec, args[0] if args else {}))

    server.feature(spec.name)(request)
    server.command(spec.command)(command)
