"""`turnback serve --background` and `turnback daemon status|stop`: the background owner's commands."""

from __future__ import annotations

import os
import time

from ..errors import TurnbackError
from ..remote import client
from .exits import EXIT_ERROR, EXIT_OK


def serve_background(ctx) -> int:
    from ..lsp.daemon import DEFAULT_IDLE_SECONDS, start

    idle = ctx.args.idle_exit if ctx.args.idle_exit is not None else DEFAULT_IDLE_SECONDS
    result = start(str(ctx.root), ctx.args.store, store_kind=ctx.args.store_kind, idle=idle)
    if ctx.json:
        ctx.emit(result)
    elif result["started"]:
        ctx.print(f"turnback owner started in the background (pid {result['pid']}), "
                  f"listening on {result['socket']}")
    else:
        ctx.print(f"an owner is already running (pid {result['pid']}), listening on {result['socket']}")
    return EXIT_OK


def _info(ctx) -> dict | None:
    try:
        return client.call(str(ctx.root), "turnback/session/info", {}, store=ctx.args.store, timeout=10)
    except client.NoOwner:
        return None
    except client.RemoteError as exc:
        raise TurnbackError(exc.message, code=exc.code, data=exc.data) from None


def cmd_daemon(ctx) -> int:
    info = _info(ctx)
    if ctx.args.action == "status":
        if ctx.json:
            ctx.emit({"running": info is not None, **({} if info is None else {
                "pid": info["owner"]["pid"], "socket": info.get("socket"),
                "background": bool(info.get("background")), "clients": info.get("clients"),
                "idleExit": info.get("idleExit"), "turnCount": info.get("turnCount")})})
        elif info is None:
            ctx.print("no owner is running for this workspace")
        else:
            kind = "background owner" if info.get("background") else "owner (an editor's sidecar)"
            ctx.print(f"{kind}: pid {info['owner']['pid']}, socket {info.get('socket')}, "
                      f"{info.get('clients', 0)} client(s) attached, {info.get('turnCount')} turn(s)")
        return EXIT_OK if info is not None else EXIT_ERROR
    if info is None:
        ctx.emit({"stopped": False, "running": False}) if ctx.json else \
            ctx.print("no owner is running for this workspace; nothing to stop")
        return EXIT_OK
    try:
        client.call(str(ctx.root), "turnback/daemon/stop", {}, store=ctx.args.store, timeout=10)
    except client.RemoteError as exc:
        raise TurnbackError(exc.message, code=exc.code, data=exc.data) from None
    pid = info["owner"]["pid"]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    stopped = not _alive(pid)
    ctx.emit({"stopped": stopped, "pid": pid}) if ctx.json else \
        ctx.print(f"background owner (pid {pid}) " + ("stopped" if stopped else "is still stopping"))
    return EXIT_OK if stopped else EXIT_ERROR


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a child of ours that exited but was not reaped yet still answers kill(0)
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        return True
