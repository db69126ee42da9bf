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

from ..errors import NotOwner, TurnbackError
from ..hooks import after_rewind
from ..remote import client
from ..remote.paths import recorded_socket, run_dir, store_dir
from ..store import fs

log = logging.getLogger("turnback.daemon")

# TURNBACK_IDLE_EXIT overrides it for every owner a hook or command starts (tests use a short one).
DEFAULT_IDLE_SECONDS = float(os.environ.get("TURNBACK_IDLE_EXIT") or 900.0)
LOST_OWNERSHIP = 3  # exit status of a child that found another owner
CANNOT_SERVE = 4    # exit status of an owner that could not listen (it released the lease)


def log_path(store: str) -> str:
    return os.path.join(run_dir(store), "daemon.log")


def start(workspace: str, store: str | None, *, store_kind: str | None = None,
          idle: float = DEFAULT_IDLE_SECONDS, wait: float = 15.0) -> dict:
    """Start a background owner unless one answers; returns {socket, pid, started}."""
    workspace = os.path.realpath(workspace)
    sdir = store_dir(workspace, store)
    try:
        found = client.owner_socket(workspace, store)
    except client.RemoteError as exc:
        # Something not to be trusted is where a socket would be: never connected to. The owner
        # started here leaves it alone, binds in a private folder and records that place.
        log.warning("%s: starting an owner that will listen elsewhere", exc.message)
        found = None
    if found is not None:
        pid = _owner_pid(workspace, store)
        if pid is not None:
            return {"socket": found, "pid": pid, "started": False}
        holder = _lease_holder(sdir)
        if holder is not None:
            raise TurnbackError(f"process {holder.get('pid')} owns the store and holds its socket "
                                f"{found} but does not answer (stopped, or wedged); no other owner "
                                "can start until it answers, exits or its lease runs out",
                                code="unresponsive", data={"owner": holder, "socket": found})
        # Whoever listens there lost the store: a new owner takes the store and the socket's name.
    try:
        fs.mkdir(run_dir(sdir), mode=0o700, parents=True, exist_ok=True)
        fd = fs.open_for_append(log_path(sdir))
    except OSError as exc:
        raise TurnbackError(f"the store's run folder {run_dir(sdir)} cannot hold the owner's log "
                            f"({exc.strerror or exc}); no owner was started", code="daemon-failed",
                            data={"path": run_dir(sdir)}) from None
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
        answering = _answering(workspace, store, sdir, child.pid)
        if answering is not None:
            return {"socket": answering[0], "pid": answering[1], "started": answering[1] == child.pid}
        code = child.poll()
        if code not in (None, LOST_OWNERSHIP):
            raise TurnbackError(f"the background owner exited with status {code} before it "
                                f"listened; see {log_path(sdir)}", code="daemon-failed",
                                data={"log": log_path(sdir)})
        if code == LOST_OWNERSHIP:
            holder = _lease_holder(sdir)
            if not _may_listen(holder):  # a command or a script: waiting `wait` s would find no one
                raise NotOwner(_not_serving(holder), data={"owner": holder})
        time.sleep(0.02)
    raise TurnbackError(f"no owner answered within {wait:g} s; see {log_path(sdir)}",
                        code="daemon-failed", data={"log": log_path(sdir)})


def _may_listen(holder: dict | None) -> bool:
    """Whether the lease's holder is a process that will answer on the socket: a background owner
    (a racing starter's, still starting) or an editor's `turnback serve`. A direct command or a
    script holding the store never will; nor will anyone when nobody holds it. Where the holder's
    command line cannot be read, it may."""
    if holder is None or holder.get("pid") is None:
        return False
    try:
        with open(f"/proc/{int(holder['pid'])}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")  # gone (its lease not yet run out) or no /proc
    except (OSError, ValueError):
        return True
    return b"turnback.lsp.daemon" in argv or b"serve" in argv


def _not_serving(holder: dict | None) -> str:
    if holder is None:
        return ("the process that owned the store when the background owner opened it has let it go "
                "and served no socket; no owner was started (try again)")
    return f"another process (pid {holder.get('pid')}) owns the store and serves no socket; no owner " \
           "was started"


def _answering(workspace, store, sdir: str, child: int) -> tuple[str, int] | None:
    """(socket, pid) once an owner answers: this starter's child, or the owner that beat it. Asks
    only a listener that holds the lease: one that lost it (stopped, say) is not asked again and
    again (each connection it does not take fills its queue)."""
    holder = _lease_holder(sdir)
    if holder is None or holder.get("pid") is None:
        return None
    found = recorded_socket(sdir)
    if found is None or _listener_pid(found) != holder["pid"]:
        return None
    pid = _owner_pid(workspace, store)
    return (found, pid) if pid is not None else None


def _listener_pid(path: str) -> int | None:
    from ..remote.wire import connect, peer

    try:
        sock = connect(path, 1.0)
    except Exception:  # noqa: BLE001 - gone, busy, refused: not a listener to ask
        return None
    try:
        who = peer(sock)
    finally:
        sock.close()
    return who[0] if who is not None else None


def _owner_pid(workspace, store) -> int | None:
    """The pid of the owner that answers on the socket (as the owner), or None."""
    try:
        info = client.call(workspace, "turnback/session/info", {}, store=store, timeout=10)
    except (client.NoOwner, client.RemoteError):
        return None
    owner = info.get("owner") if info.get("ownership") == "owner" else None
    return owner.get("pid") if isinstance(owner, dict) else None


def _lease_holder(store: str) -> dict | None:
    """Who holds the store's lease (or lock) now, read without writing; None when nobody does."""
    from ..store.layout import Store
    from ..store.ownership.owners import who_owns

    try:
        kind = Store.open(store, kind=None, create=False).kind
        return who_owns(store, kind)
    except TurnbackError:
        return None


def lease_ttl() -> float:
    """TURNBACK_LEASE_TTL: the background owner's lease, in seconds (tests shorten it)."""
    try:
        return max(1.0, float(os.environ.get("TURNBACK_LEASE_TTL") or 30.0))
    except ValueError:
        return 30.0


def run(workspace: str, store: str, *, store_kind: str | None, idle: float) -> int:
    """The background owner's main: open, own, serve the socket until idle or stopped."""
    from ..store.layout import Store
    from ..workbench import Options, Workbench
    from .server import create_server

    kind = store_kind or "heads"
    if os.path.lexists(os.path.join(store, "FORMAT")):
        kind = Store.open(store, kind=None, create=False).kind
    wb = Workbench.open(workspace, Options(store_kind=kind, store_path=store, lease_ttl=lease_ttl()))
    if not wb.is_owner:
        owner = wb.owner_info()
        log.info("another process (pid %s) owns %s; this starter's owner is not needed",
                 owner.get("pid"), store)
        return LOST_OWNERSHIP
    notice = wb.recovery_notice()  # nobody is attached yet to hear `turnback/recovered`: log it
    for line in (notice["transactions"] + notice["forks"]) if notice else ():
        log.warning("recovered at open: %s", line["message"])
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
    return server.exit_status


async def _serve(server, idle: float) -> None:
    loop = asyncio.get_running_loop()
    server.stop_event = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, server.stop_event.set)
    server.start_services()
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
    now = time.monotonic()
    if clients or server.lock.locked():
        server.last_client_seen = now
        server.idle_noted = False
        return False
    if now - server.last_client_seen < idle:
        return False
    running = wb.state.running
    if running is not None:  # quiet long enough, but a turn is running: an agent is at work
        if not getattr(server, "idle_noted", False):
            log.info("no client for %g s, but turn %d is running: staying", idle, running.n)
            server.idle_noted = True
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="turnback-daemon")
    p.add_argument("--workspace", required=True)
    p.add_argument("--store", required=True)
    p.add_argument("--store-kind", choices=("heads", "pid"))
    p.add_argument("--idle", type=float, default=DEFAULT_IDLE_SECONDS)
    a = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("TURNBACK_LOG", "INFO").upper(),
                        format="%(asctime)s turnback[%(process)d] %(levelname)s %(name)s: %(message)s")
    fs.install_from_env()
    try:
        return run(a.workspace, a.store, store_kind=a.store_kind, idle=a.idle)
    except Exception:
        log.exception("the background owner could not start")
        return 1


if __name__ == "__main__":
    sys.exit(main())
