"""`$/progress` for the stdio client: begun, reported at most every PROGRESS_EVERY_SECONDS, ended.

A request's token comes with its params (`workDoneToken`); a background collection asks the client
for one first, and only when the client says it supports server-initiated progress.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Union

from lsprotocol import types

from .slices import SliceStats

if TYPE_CHECKING:
    from .server import TurnbackServer

log = logging.getLogger("turnback.lsp")

PROGRESS_EVERY_SECONDS = 0.2

Token = Union[str, int]
OnStep = Callable[[Any], None]


class Progress:
    def __init__(self, server: TurnbackServer) -> None:
        self.server = server
        self._tokens = itertools.count(1)

    def begin(self, token: Token | None, title: str) -> None:
        if token is not None:
            self.server.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=title, percentage=0))

    def report(self, token: Token | None, message: str) -> None:
        if token is not None:
            self.server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))

    def end(self, token: Token | None, message: str) -> None:
        if token is not None:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            self.server.work_done_progress.tokens.pop(token, None)

    async def server_token(self) -> Token | None:
        """A token for server-initiated progress, only when the client supports it."""
        if not self.server.client_supports("window.work_done_progress"):
            return None
        token = f"turnback-{os.getpid()}-{next(self._tokens)}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), timeout=2.0)
        except Exception as exc:
            log.info("client refused progress token %s: %s", token, exc)
            return None
        return token

    def job_reporter(self, token: Token | None) -> OnStep | None:
        """A job's steps as messages: files looked at and read, or a step that words itself."""
        if token is None:
            return None
        last = [0.0]

        def on_step(value: Any) -> None:
            now = time.monotonic()
            if now - last[0] < PROGRESS_EVERY_SECONDS:
                return
            last[0] = now
            walked, hashed = getattr(value, "walked", None), getattr(value, "hashed", None)
            if walked is not None:
                self.report(token, f"{walked} files looked at, {hashed} read")
            elif isinstance(getattr(value, "progress", None), str):  # a step that words itself
                self.report(token, value.progress)
        return on_step

    def collect_reporter(self, token: Token | None, stats: SliceStats) -> OnStep | None:
        if token is None:
            return None
        last = [0.0]

        def on_step(value: Any) -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_SECONDS:
                last[0] = now
                self.report(token, f"{stats.slices} slices" +
                            (f": {value}" if isinstance(value, str) else ""))
        return on_step


def token_of(params: Any) -> Token | None:
    if isinstance(params, dict):
        token = params.get("workDoneToken")
        if isinstance(token, (str, int)) and not isinstance(token, bool):
            return token
    return None


def without_token(params: Any) -> Any:
    if isinstance(params, dict) and "workDoneToken" in params:
        return {k: v for k, v in params.items() if k != "workDoneToken"}
    return params
