"""The command line through the live owner: each command as requests over the private socket.

When a sidecar owns the store and listens, a command never opens the store itself: it asks the owner,
and prints exactly what the direct path (`commands.py`) prints, with the same exit statuses. When no
owner answers, `run` returns None and the caller takes the direct path. Import-light on purpose:
the standard library and `remote.client` only, `render.py` when text is printed.
"""

from __future__ import annotations

import json
import os
import sys

from ..errors import InvalidParams, NotFound, NotOwner, TurnbackError, UnknownTurn
from ..remote import client

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

    def decide(self, yes: bool, question: str) -> bool:
        if yes:
            return True
        if self.json:
            return False
        try:
            if not (self.stdin.isatty() and self.stdout.isatty()):
                return False
            print(f"{question} Type yes to confirm: ", end="", file=self.stdout, flush=True)
            return self.stdin.readline().strip().lower() in ("yes", "y")
        except (AttributeError, ValueError, OSError, EOFError):
            return False


_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def file_uri(absolute: str) -> str:
    """`Path(absolute).as_uri()` without importing pathlib and urllib (the hook path)."""
    return "file://" + "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in os.fsencode(absolute))


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
    ren = r.renderer()
    for c in result["captured"]:
        image = "(absent)" if c.get("absent") else (c.get("digest") or "no image")[:8]
        name = c.get("checkpoint")
        r.print(f"{ren.path(c)}  {image}  " + (f"checkpoint {name}" if name else "(no change recorded)"))
    for g in result["gaps"]:
        r.print(f"gap: {ren.gap(g)}")
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


# -- reporting ----------------------------------------------------------------------------------
def log(r: Remote) -> int:
    result = r.call("turnback/session/log")
    if r.json:
        r.emit(result)
        return EXIT_OK
    info = r.info()
    r.print(*r.renderer().log(result, info))
    if info.get("liveGaps"):
        r.print(f"live gaps: {info['liveGaps']} (see `turnback info`)")
    return EXIT_OK


def info(r: Remote) -> int:
    result = r.info()
    if r.json:
        r.emit(result)
        return EXIT_OK
    ren = r.renderer()
    r.print(*ren.info(result))
    for g in r.call("turnback/session/status").get("gaps", []):
        r.print(f"  gap: {ren.gap(g)}")
    return EXIT_OK


# -- rewind and redo ----------------------------------------------------------------------------
def _boundary(r: Remote) -> dict:
    a = r.args
    if a.after_response is not None:
        return {"kind": "afterResponse", "turn": a.after_response}
    if a.before_prompt is not None:
        if a.turn is not None:
            raise InvalidParams("--turn goes with --before-directive only")
        return {"kind": "beforePrompt", "turn": a.before_prompt}
    did, turn = a.before_directive, a.turn
    if turn is None:
        turns = r.call("turnback/session/log")["turns"]
        attempts = [t["turn"] for t in turns if t.get("directiveId") == did]
        if not attempts:
            known = {d["id"] for d in r.call("turnback/directive/list").get("directives", [])}
            if did not in known:
                raise NotFound(f"no directive {did!r} in this session", data={"directiveId": did})
            raise UnknownTurn(f"directive {did} has no attempt turn to rewind before",
                              data={"directiveId": did})
        turn = attempts[-1]
    return {"kind": "beforeDirectiveAttempt", "directiveId": did, "turn": turn}


def rewind(r: Remote) -> int:
    from .render import step_index

    boundary = _boundary(r)
    candidate = r.call("turnback/rewind/prepare", {"boundary": boundary})
    if not r.json:
        r.print(*r.renderer().candidate(candidate, step_index(r.call("turnback/session/log"))))
    if not r.decide(r.args.yes, "Rewind?"):
        if r.json:
            r.emit({"candidate": candidate, "commit": None})
        else:
            r.print("Nothing changed. Run again with --yes to rewind.")
        return EXIT_OK
    result = r.call("turnback/rewind/commit", {"boundary": boundary,
                                               "planHash": candidate["planHash"]})
    if r.json:
        r.emit({"candidate": candidate, "commit": result})
    else:
        r.print(*r.renderer().commit(result, "rewind"))
    return EXIT_OK if result.get("status") == "committed" else EXIT_ERROR


def redo(r: Remote) -> int:
    listing = r.call("turnback/redo/list")
    heads = r.info()["storeKind"] == "heads"
    if r.args.head is None:
        r.emit(listing) if r.json else r.print(*r.renderer().redo_list(listing))
        return EXIT_OK if listing.get("groups") or heads else EXIT_ERROR
    if not heads:
        raise TurnbackError(listing.get("reason", "this store cannot redo"), code="no-heads")
    plan = r.call("turnback/redo/prepare", {"headSeq": r.args.head})
    if not r.json:
        r.print(*r.renderer().redo_plan(plan))
    if not r.decide(r.args.yes, "Redo?"):
        if r.json:
            r.emit({"plan": plan, "commit": None})
        else:
            r.print("Nothing changed. Run again with --yes to redo.")
        return EXIT_OK
    result = r.call("turnback/redo/commit", {"headSeq": r.args.head, "planHash": plan["planHash"]})
    if r.json:
        r.emit({"plan": plan, "commit": result})
    else:
        r.print(*r.renderer().commit(result, "redo"))
    return EXIT_OK if result.get("status") == "committed" else EXIT_ERROR


# -- store upkeep -------------------------------------------------------------------------------
def gc(r: Remote) -> int:
    stats = r.call("turnback/collect/run")
    if r.json:
        r.emit(stats)
    else:
        from .render import Renderer

        r.print(*Renderer.stats(stats))
    return EXIT_OK


def recovery(r: Remote) -> int:
    a = r.args
    if a.resolve is None and (a.retry or a.dismiss):
        raise InvalidParams("--retry and --dismiss go with --resolve ID")
    if a.resolve is not None and not (a.retry or a.dismiss):
        raise InvalidParams("--resolve ID needs --retry or --dismiss")
    if a.resolve is None:
        result = r.call("turnback/recovery/list")
    else:
        result = r.call("turnback/recovery/resolve", {"id": a.resolve,
                                                      "action": "retry" if a.retry else "dismiss"})
    if r.json:
        r.emit(result)
        return EXIT_OK
    if "status" in result:
        r.print(f"recovery {a.resolve}: {result['status']}")
    if not result["recovery"]:
        r.print("no recovery records: every rewind and redo put everything back")
    ren = r.renderer()
    for rec in result["recovery"]:
        r.print(*ren.recovery_record(rec))
    return EXIT_OK if result.get("status") != "failed" else EXIT_ERROR


def fork(r: Remote) -> int:
    from .fork_cmd import remote_fork  # render and argparse only when a fork is asked for

    return remote_fork(r)


COMMANDS = {"log": log, "info": info, "rewind": rewind, "redo": redo, "gc": gc, "recovery": recovery,
            "fork": fork}
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
