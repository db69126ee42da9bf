"""What the editor's own events capture: a save, a watched change, a file opened. Each is a job run
under the mutation lock, so saves are recorded in the order they arrived. An observer attached to
the owner passes them on instead: the owner captures what this editor saw, as it would its own."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Iterable

from lsprotocol import types

from ..errors import TurnbackError
from .slices import run_job

if TYPE_CHECKING:
    from .server import TurnbackServer

log = logging.getLogger("turnback.lsp")


async def capture_uris(server: TurnbackServer, uris: Iterable[str], phase: str,
                       by: str = "save") -> None:
    wb = server.wb
    if wb is None or server.closed:
        return
    uris = list(uris)
    if server.relay is not None and not server.relay.closed and not wb.is_owner:
        if by == "watch":
            server.relay.notify("workspace/didChangeWatchedFiles",
                                {"changes": [{"uri": u, "type": 2} for u in uris]})
        else:
            for uri in uris:
                server.relay.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        return
    rels = []
    for uri in uris:
        try:
            rels.append(wb.ws.to_rel(uri))
        except TurnbackError as exc:
            log.debug("not capturing %s: %s", uri, exc.message)
    if not rels:
        return
    async with server.lock:  # held throughout: saves are recorded in the order they arrived
        try:
            await run_job(wb.turns.capture_rels_job(rels, phase=phase, by=by))
        except Exception:
            log.exception("capture of %s failed", rels)
    server.kick_collection()


async def opened(server: TurnbackServer, uri: str, text: str | None) -> None:
    wb = server.wb
    if wb is None or server.closed:
        return
    try:
        rel = wb.ws.to_rel(uri)
    except TurnbackError as exc:
        log.debug("not capturing %s: %s", uri, exc.message)
        return
    async with server.lock:
        try:
            await run_job(wb.turns.opened_job(rel, text))
        except Exception:
            log.exception("capture of opened %s failed", rel)


async def register_watcher(server: TurnbackServer) -> None:
    """Ask the client to send `didChangeWatchedFiles` for the whole workspace."""
    root_uri = server.workbench().root.as_uri()
    pattern: Any
    if server.client_supports("workspace.did_change_watched_files.relative_pattern_support"):
        pattern = types.RelativePattern(base_uri=root_uri, pattern="**/*")
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
