"""The hook path: `turnback turn …` through the live owner with the standard library only.

`cli/fast.py` sends the commands agent hooks run here, before argparse or the store is imported;
they print exactly what `commands.py` prints, with the same exit statuses (tests/live compares the
two). When no owner answers, `run` returns None and the full command line takes over. Every other
command reaches the owner through `commands.py` and the stand-in of `cli/owner.py`.
"""

from __future__ import annotations

import json
import os
import sys

from ..errors import InvalidParams, NotFound, NotOwner, TurnbackError, UnknownTurn
from ..remote import client
from .turnwire import file_uri  # one definition: the lean path of turnwire.py needs it too

# The same numbers as cli/main.py (importing it would import argparse on the hook path).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_OWNER = 0, 1, 2, 3
CODE_CLASSES = {"not-owner": NotOwner, "invalid-params": InvalidParams, "unknown-turn": UnknownTurn,
                "not-found": NotFound}


class Remote:
    """One command's view of the owner: calls, rendering, printing (the Context's own streams)."""

    def __init__(self, args, socket: str, stdout=None, stderr=None, stdin=None):
        self.args = args
        self.socket = socket
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.stdin = stdin or sys.stdin
        self.json = bool(getattr(args, "json", False))
        self._info: dict | None = None

    def call(self, method: str, params: dict | None = None, timeout: float = 600.0) -> dict:
        try:
            return client.call(self.args.workspace or os.getcwd(), method, params or {},
                               store=self.args.store, timeout=timeout)
        except client.RemoteError as exc:
            if exc.code == "unresponsive":  # the full command line decides (cli/owner.py)
                raise client.NoOwner(exc.message) from None
            cls = CODE_CLASSES.get(exc.code, TurnbackError)
            raise cls(exc.message, code=exc.code, data=exc.data) from None

    def info(self) -> dict:
        if self._info is None:
            self._info = self.call("turnback/session/info")
        return self._info

    def renderer(self):
        from pathlib import Path

        from .render import Renderer

        return Renderer(Path(self.info()["workspace"]).as_uri())

    def uri(self, path: str) -> str:
        """A PATH from the command line as a file URI; outside the workspace it is refused, as the
        direct path refuses it, before anything is sent."""
        absolute = os.path.abspath(path)
        roots = {os.path.abspath(self.args.workspace or os.getcwd()), self.info()["workspace"]}
        roots |= {os.path.realpath(r) for r in roots}
        if not any(absolute.startswith(r.rstrip("/") + "/") for r in roots):
            raise TurnbackError(f"{absolute!r} is outside the workspace {self.info()['workspace']!r}",
                                code="outside-workspace", data={"ref": absolute})
        return file_uri(absolute)

    def running(self, given: int | None) -> int:
        if given is not None:
            return given
        running = self.info().get("running")
        if running is None:
            raise TurnbackError("no turn is running; give --turn N or begin one with "
                                "`turnback turn begin`", code="no-turn-running")
        return running

    def print(self, *lines: str) -> None:
        for line in lines:
            print(line, file=self.stdout)

    def emit(self, document) -> None:
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str), file=self.stdout)


# -- turns --------------------------------------------------------------------------------------
def turn_begin(r: Remote) -> int:
    a = r.args
    params = {"kind": a.kind or ("directive" if a.directive else "chat"), "prompt": a.prompt}
    if a.directive:
        params["directiveId"] = a.directive
    result = r.call("turnback/turn/begin", params)
    r.emit(result) if r.json else r.print(str(result["turn"]))
    return EXIT_OK


def turn_capture(r: Remote) -> int:
    uris = [r.uri(p) for p in r.args.paths]
    result = r.call("turnback/turn/capture", {"uris": uris, "phase": r.args.phase})
    if r.json:
        r.emit(result)
        return EXIT_OK
    r.print(*r.renderer().captured(result))
    return EXIT_OK


def turn_step(r: Remote) -> int:
    a = r.args
    if a.inverse_scope is not None and a.inverse_kind is None:
        raise InvalidParams("--inverse-scope needs --inverse-kind")
    params = {"turn": r.running(a.turn), "kind": a.kind}
    for key, value in (("scope", a.scope), ("summary", a.summary), ("result", a.result),
                       ("compensates", a.compensates or None)):
        if value is not None:
            params[key] = value
    if a.paths:
        params["uris"] = [r.uri(p) for p in a.paths]
    if a.inverse_kind is not None:
        params["inverse"] = {"kind": a.inverse_kind, "scope": a.inverse_scope or "unknown"}
    if a.held:
        params["held"] = True
    result = r.call("turnback/turn/step", params)
    r.emit(result) if r.json else r.print(result["stepId"])
    return EXIT_OK


def turn_respond(r: Remote) -> int:
    a = r.args
    result = r.call("turnback/turn/respond", {"turn": r.running(a.turn), "text": a.text,
                                              "final": bool(a.final)})
    if r.json:
        r.emit(result)
    return EXIT_OK


def turn_settle(r: Remote) -> int:
    n = r.running(r.args.turn)
    status = "cancelled" if r.args.cancelled else "settled"
    result = r.call("turnback/turn/settle", {"turn": n, "status": status})
    if r.json:
        r.emit(result)
    else:
        head = result.get("headSeq")
        r.print(f"turn {n} {status}" + (f"; published head {head}" if head is not None else ""))
    return EXIT_OK


COMMANDS: dict = {}  # every other command runs commands.py against cli/owner.py's stand-in
TURN = {"begin": turn_begin, "capture": turn_capture, "step": turn_step, "respond": turn_respond,
        "settle": turn_settle}


def handler(args):
    """The remote version of the command `args` names, or None (serve, demo, bench, fsck: local)."""
    if args.command == "turn":
        return TURN.get(getattr(args, "turn_command", None))
    return COMMANDS.get(args.command)


def live_socket(args) -> str | None:
    """The live owner's socket for these arguments' workspace and store, or None."""
    try:
        return client.owner_socket(args.workspace or os.getcwd(), args.store)
    except client.RemoteError as exc:
        raise TurnbackError(exc.message, code=exc.code, data=exc.data) from None


def run(args, *, stdout=None, stderr=None, stdin=None) -> int | None:
    """Run the command through the live owner; None when there is none (take the direct path).
    Raises TurnbackError (with the owner's `data.code`) for an error reply."""
    fn = handler(args)
    if fn is None:
        return None
    socket = live_socket(args)
    if socket is None:
        return None
    try:
        return fn(Remote(args, socket, stdout, stderr, stdin))
    except client.NoOwner:
        return None  # the owner went away between the look and the call: the direct path decides
