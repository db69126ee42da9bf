"""`turnback serve --background`: a detached owner for people (and hooks) without an editor.

The starter (`start`) spawns `python -m turnback.lsp.daemon` in a new session, its output appended
to `<store>/run/daemon.log`, and waits until some owner answers on the socket: its own child, or the
owner that beat it (the store's lease lets exactly one of several racing starters' children own; the
others exit at once with status 3). The owner (`run`) serves only the socket, renews its lease, and
exits after `idle` seconds with no client attached and no turn running, or on `turnback daemon stop`
or SIGTERM, publishing what is pending and releasing the lease.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import subprocess
import sys
import time

from ..errors import TurnbackError
from ..hooks import after_rewind
from ..remote import client
from ..remote.paths import run_dir, store_dir
from ..store import fsio

log = logging.getLogger("turnback.daemon")

# TURNBACK_IDLE_EXIT overrides it for every owner a hook or command starts (tests use a short one).
DEFAULT_IDLE_SECONDS = float(os.environ.get("TURNBACK_IDLE_EXIT") or 900.0)
LOST_OWNERSHIP = 3  # exit status of a child that found another owner


def log_path(store: str) -> str:
    return os.path.join(run_dir(store), "daemon.log")


def start(workspace: str, store: str | None, *, store_kind: str | None = None,
          idle: float = DEFAULT_IDLE_SECONDS, wait: float = 15.0) -> dict:
    """Start a background owner unless one answers; returns {socket, pid, started}."""
    workspace = os.path.realpath(workspace)
    found = client.owner_socket(workspace, store)
    if found is not None:
        return {"socket": found, "pid": _owner_pid(workspace, store), "started": False}
    sdir = store_dir(workspace, store)
    fsio.mkdir(run_dir(sdir), mode=0o700, parents=True, exist_ok=True)
    fd = fsio.open_for_append(log_path(sdir))
    argv = [sys.executable, "-m", "turnback.lsp.daemon", "--workspace", workspace,
            "--store", sdir, "--idle", str(idle)]
    if store_kind:
        argv += ["--store-kind", store_kind]
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                                 start_new_session=True, close_fds=True, cwd=workspace)
    finally:
        os.close(fd)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = client.owner_socket(workspace, store)
        if found is not None:
            pid = _owner_pid(workspace, store)
            return {"socket": found, "pid": pid, "started": pid == child.pid}
        code = child.poll()
        if code not in (None, LOST_OWNERSHIP):
            raise TurnbackError(f"the background owner exited with status {code} before it "
                                f"listened; see {log_path(sdir)}", code="daemon-failed",
                                data={"log": log_path(sdir)})
        time.sleep(0.02)
    raise TurnbackError(f"no owner answered within {wait:g} s; see {log_path(sdir)}",
                        code="daemon-failed", data={"log": log_path(sdir)})


def _owner_pid(workspace, store) -> int | None:
    try:
        return client.call(workspace, "turnback/session/info", {}, store=store, timeout=10)["owner"]["pid"]
    except (client.NoOwner, client.RemoteError, KeyError, TypeError):
        return None


def run(workspace: str, store: str, *, store_kind: str | None, idle: float) -> int:
    """The background owner's main: open, own, serve the socket until idle or stopped."""
    from ..store.layout import Store
    from ..workbench import Options, Workbench
    from .server import create_server

    kind = store_kind or "heads"
    if os.path.lexists(os.path.join(store, "FORMAT")):
        kind = Store.open(store, kind=None, create=False).kind
    wb = Workbench.open(workspace, Options(store_kind=kind, store_path=store))
    if not wb.is_owner:
        owner = wb.owner_info()
        log.info("another process (pid %s) owns %s; this starter's owner is not needed",
                 owner.get("pid"), store)
        return LOST_OWNERSHIP
    server = create_server()
    server.wb = wb
    server.background = True
    wb.events.subscribe(server.forward)
    after_rewind.attach(wb, background=True)
    wb.live.update(background=True, idleExit=idle)
    try:
        asyncio.run(_serve(server, idle))
    finally:
        server.close_workbench()
    log.info("background owner of %s stopped", store)
    return 0


async def _serve(server, idle: float) -> None:
    loop = asyncio.get_running_loop()
    server.stop_event = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, server.stop_event.set)
    server.start_tasks()
    server.kick_collection()
    log.info("background owner of %s started (pid %d, idle exit after %g s)",
             server.wb.store.path, os.getpid(), idle)
    while not server.stop_event.is_set():
        try:
            await asyncio.wait_for(server.stop_event.wait(), timeout=min(1.0, max(idle / 4, 0.05)))
        except asyncio.TimeoutError:
            pass
        if _idle(server, idle):
            log.info("idle for %g s with no client and no running turn: exiting", idle)
            break
    async with server.lock:  # let a running mutation finish; then publish and release
        server.close_workbench()


def _idle(server, idle: float) -> bool:
    wb = server.wb
    clients = len(server.listener.connections) if server.listener is not None else 0
    if clients or wb.state.running is not None or server.lock.locked():
        server.last_client_seen = time.monotonic()
        return False
    return time.monotonic() - server.last_client_seen >= idle


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="turnback-daemon")
    p.add_argument("--workspace", required=True)
    p.add_argument("--store", required=True)
    p.add_argument("--store-kind", choices=("heads", "pid"))
    p.add_argument("--idle", type=float, default=DEFAULT_IDLE_SECONDS)
    a = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("TURNBACK_LOG", "INFO").upper(),
                        format="%(asctime)s turnback[%(process)d] %(levelname)s %(name)s: %(message)s")
    fsio.install_from_env()
    try:
        return run(a.workspace, a.store, store_kind=a.store_kind, idle=a.idle)
    except Exception:
        log.exception("the background owner could not start")
        return 1


if __name__ == "__main__":
    sys.exit(main())
