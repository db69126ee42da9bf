"""An owner's reign: how a serving process learns it no longer owns its store, and how that ends.

Two ways to lose it:

* **Superseded**: another process holds the lease now (a confirmed takeover, or this one was stopped
  past its lease and someone took the store meanwhile). The owner stops listening at once
  (`Listener.supersede`: clients already queued are taken in first), says so (`turnback/status`,
  ownership `observer`), and answers every socket request `not-owner` with the new owner's pid. It
  writes nothing more. An editor's sidecar stays its editor's read-only observer, attaches to the
  new owner's socket when there is one (never to its own), and takes the store back only through the
  normal open-and-recover path (`Workbench.try_take_over`) once the new owner is gone. A background
  owner has nobody left to serve: it leaves once its clients have heard why (at most
  SUPERSEDED_GRACE seconds).
* **Moved**: the workspace root or the store is no longer at the path it was opened from (renamed,
  replaced). The owner finds where its own store went (the descriptor it keeps on it), publishes
  its journal there through the normal open path and releases the lease there, touches nothing at
  the old path (where a new store may be), tells its clients, and exits.

`verify` runs before every request (at most once a second), so a woken owner answers its first
request already knowing: within a second of waking, never as the owner it no longer is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time

from ..store.ownership.owners import relocated, who_owns
from ..errors import NotOwner, TurnbackError

log = logging.getLogger("turnback.lsp")

VERIFY_EVERY = 1.0       # seconds between two ownership checks on behalf of requests
SUPERSEDED_GRACE = 10.0  # a superseded background owner leaves after this long, or sooner


class Reign:
    def __init__(self, server):
        self.server = server
        self.holder = None          # the lease (or lock) this process owns the store with
        self.fds: dict[str, int] = {}  # "root"/"store": descriptors that follow their folders
        self.verified = 0.0
        self.ended: str | None = None  # None, "superseded", "moved" or "resigned"
        self.retry_at = 0.0  # an observer tries to take the store (back) from this moment on
        self.backoff = 0.0   # seconds, doubled at each try that could not listen

    def listening(self) -> None:
        self.backoff = 0.0

    def resign(self) -> None:
        """The owner gives the store up itself (it cannot listen): not a loss to react to."""
        self.ended = "resigned"
        self.backoff = min(60.0, max(2.0, self.backoff * 2))
        self.retry_at = time.monotonic() + self.backoff

    # -- while it lasts -------------------------------------------------------------------------
    def begin(self) -> None:
        """The server's workbench owns the store (opened so, took it over, or took it back)."""
        wb = self.server.wb
        self.holder = wb.book.owner
        self.ended = None
        self.holder.anchor(wb.root)  # the store folder is anchored by the holder itself
        self.close_fds()
        for name, path in (("root", wb.root), ("store", wb.store.path)):
            try:
                self.fds[name] = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as exc:
                log.warning("cannot keep a descriptor on %s (%s): a move will not be followed", path, exc)

    def verify(self) -> None:
        """Check (at most once a second) that this process still owns the store; a lost lease is
        noticed here as at renewal (the workbench becomes an observer and says so)."""
        wb = self.server.wb
        if wb is None or self.server.closed or not wb.is_owner:
            return
        now = time.monotonic()
        if now - self.verified < VERIFY_EVERY:
            return
        self.verified = now
        owner = wb.book.owner
        try:
            owner.check()
        except NotOwner:
            try:  # only lapsed (stopped past the lease, nobody took it)? then it is still ours
                wb.renew()
            except NotOwner:
                pass  # lost: the workbench is an observer now, and said so
            except Exception:
                log.exception("could not renew the lease")
        except Exception:
            log.exception("could not check the ownership of the store")

    def guard_socket(self) -> None:
        """The socket's files changed owner or mode under the owner: a mode is put back; a socket
        removed, replaced or given away means first a look at the lease (another owner may have
        taken the name), then, still the owner, listening anew (its clients stay). Logged."""
        server = self.server
        listener = server.listener
        if listener is None or listener.superseded or listener.path is None:
            return
        what = listener.place.damage()
        if what is None:
            return
        self.verified = 0.0
        self.verify()
        if self.ended is not None or not server.wb.is_owner:
            return  # lost: the listener goes the way of a lost reign
        log.warning("%s: listening anew", what)
        try:
            server.wb.live["socket"] = listener.rebind()
        except Exception as exc:
            log.error("cannot listen anew: %s", exc)
            server.wb.live["socketError"] = str(exc)
            server.wb.live["socket"] = None
            server.tasks.append(asyncio.get_running_loop().create_task(
                server.listening.cannot_serve(exc)))

    def moved(self) -> bool:
        return self.holder is not None and self.holder.moved() is not None

    def error(self) -> NotOwner:
        """What a superseded owner answers: who owns the store now."""
        wb = self.server.wb
        if self.ended == "moved":
            return NotOwner(f"this process (pid {os.getpid()}) no longer serves {wb.root}: the "
                            "workspace was renamed or replaced under it; it is leaving",
                            code="workspace-moved", data={"owner": None})
        try:
            owner = who_owns(wb.store.path, wb.store.kind) or {}
        except Exception:
            owner = {}
        now = (f"process {owner.get('pid')} on {owner.get('host')} owns it now" if owner.get("pid")
               else "no process owns it now")
        return NotOwner(f"this process (pid {os.getpid()}) no longer owns the store {wb.store.path}: "
                        f"{now}. Ask again: the new owner answers on the socket.",
                        data={"owner": {"pid": owner.get("pid"), "host": owner.get("host")}})

    # -- the end --------------------------------------------------------------------------------
    def lost(self) -> None:
        """Called (on the loop) when the workbench found its ownership gone while listening."""
        if self.ended is not None:
            return
        self.ended = "moved" if self.moved() else "superseded"
        loop = asyncio.get_running_loop()
        work = self._leave_moved() if self.ended == "moved" else self._superseded()
        self.server.tasks.append(loop.create_task(work))

    async def _superseded(self) -> None:
        server = self.server
        log.warning("this process no longer owns %s (superseded): it stops listening",
                    server.wb.store.path)
        server.watcher.stop()
        server.wb.live["socket"] = None
        if server.listener is not None:
            await server.listener.supersede()
        if not server.background:
            return  # an editor's sidecar: its editor's observer from now on (services/observer.py)
        await self._clients_told()
        log.info("superseded background owner leaving")
        if server.stop_event is not None:
            server.stop_event.set()

    async def _clients_told(self) -> None:
        """Wait (at most SUPERSEDED_GRACE) until every socket client has heard and gone."""
        listener = self.server.listener
        deadline = time.monotonic() + SUPERSEDED_GRACE
        while time.monotonic() < deadline and listener is not None and listener.connections:
            await asyncio.sleep(0.05)

    async def _leave_moved(self) -> None:
        server = self.server
        wb = server.wb
        log.error("the workspace %s (or its store) was renamed or replaced under this owner: "
                  "publishing into the store it holds, then leaving", wb.root)
        server.watcher.stop()
        wb.live["socket"] = None
        async with server.lock:
            where = self._publish_where_it_went()
        if server.listener is not None:  # its clients hear why (workspace-moved), then it goes
            await server.listener.supersede(store_too=False)
            await self._clients_told()
        message = ("turnback: the workspace folder was renamed or replaced under this sidecar. "
                   + (f"Its work is published in {where}. " if where else
                      "Its journal stays in its store for the next opener. ")
                   + "It has stopped; open the folder again.")
        server.tell_and_stop(message)

    def _publish_where_it_went(self) -> str | None:
        """Open the store at the path its descriptor names now and close it again: the normal
        open (journal replayed, interrupted work recovered), then a publication and the release."""
        from ..workbench import Workbench

        wb, holder = self.server.wb, self.holder
        root, store = self._followed("root"), self._followed("store")
        if store is None or holder is None:
            log.warning("the store %s cannot be found any more: its journal stays for the next "
                        "opener", wb.store.path)
            return None
        try:
            relocated(holder, store).release()  # ours there: released, so the open below takes it
            options = dataclasses.replace(wb.options, store_path=store, store_kind=wb.store.kind)
            moved = Workbench.open(root or os.path.dirname(store), options)
            try:
                if not moved.is_owner:
                    log.warning("another process owns the store at %s now; nothing published", store)
                    return None
            finally:
                moved.close()
        except (TurnbackError, OSError) as exc:
            log.error("could not publish into the store at %s: %s", store, exc)
            return None
        log.info("published into the store at its new place %s and released it", store)
        return store

    def _followed(self, name: str) -> str | None:
        """Where the folder this descriptor was opened on is now (Linux), if it still exists."""
        fd = self.fds.get(name)
        if fd is None:
            return None
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
            st, here = os.stat(path), os.fstat(fd)
        except OSError:
            return None
        return path if (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino) else None

    def close_fds(self) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}
