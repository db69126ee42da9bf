"""`turnback serve`: the sidecar on stdin/stdout until the client says exit (or closes the pipe)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading

from ..store import fs
from .server import TurnbackServer, create_server

log = logging.getLogger("turnback.lsp")


def serve() -> None:
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("TURNBACK_LOG", "WARNING").upper(),
                        format="turnback %(levelname)s %(name)s: %(message)s")
    fs.install_from_env()  # TURNBACK_CRASH_AT / TURNBACK_FAIL_AT, for crash tests
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


async def _serve_stdio(server: TurnbackServer) -> None:
    from pygls.io_ import StdoutWriter, run_async

    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=1 << 26)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), sys.stdin.buffer)
    except ValueError as exc:
        raise _NotAPipe() from exc
    server.stdin = stream
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        await run_async(stop_event=server._stop_event, reader=_PipeReader(stream),
                        protocol=server.protocol, logger=log,
                        error_handler=server.report_server_error)
    finally:
        server.shutdown()
