"""Where the owner binds its socket, and the socket files it leaves behind.

`<store>/run/owner.sock` when the name fits and nothing foreign is in the way; otherwise a folder of
this owner's own making (`remote/paths.py`). What is at the store's path decides:

* nothing, or a socket of the user's own nobody listens on (a killed owner's): bound there;
* a socket of the user's own that a live process listens on: that process is an owner this one
  superseded (this one holds the lease it needs), so the new socket is renamed over it and the old
  owner, when it looks, finds itself without a name;
* anything else (a link, a file, another user's socket, one open to others): left alone, and the
  owner binds in a private folder and records it in `<store>/run/socket.path`.

`<store>/run` itself must be a real folder of the user's; a run folder that is not, or that cannot
be made, means no socket at all (SocketRefused): the owner then gives up its lease (server.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import stat

from ..errors import TurnbackError
from ..remote.paths import (PRIVATE_PREFIX, SOCKET_NAME, UnsafeSocket, check_private, fits,
                            inside_socket, pointer_path, private_bases, run_dir, trusted_socket)
from ..remote.wire import peer
from ..store import fs

log = logging.getLogger("turnback.socket")
BACKLOG = 128


class SocketRefused(TurnbackError):
    code = "unsafe-socket"


def private_run_dir(store: str) -> str:
    """`<store>/run`, made (0700) or checked: a real folder of this user's, closed to others."""
    run = run_dir(store)
    try:
        fs.mkdir(run, mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise SocketRefused(f"the store's run folder {run} cannot be made ({exc}); not listening") \
            from None
    st = os.lstat(run)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise SocketRefused(f"the store's run folder {run} is not a folder of yours; not listening")
    if stat.S_IMODE(st.st_mode) != 0o700:
        fs.chmod(run, 0o700)
    return run


class Placement:
    """One owner's socket: where it is bound and what to remove when it stops."""

    def __init__(self, store: str):
        self.store = os.fspath(store)
        self.path: str | None = None
        self.private_folder: str | None = None  # made by this owner: removed with the socket
        self.replaced_pid: int | None = None     # a superseded owner whose name this one took
        self._ino: int | None = None

    def bind(self) -> socket.socket:
        """A listening socket at the best place available; SocketRefused when there is none."""
        private_run_dir(self.store)
        previous = self._recorded()
        inside = inside_socket(self.store)
        sock = None
        if fits(inside):
            try:
                self._clear_inside(inside)
                sock = self._bind_at(inside, before_publish=self._forget_record)
            except SocketRefused as exc:
                log.warning("%s; listening in a private folder instead", exc.message)
        if sock is None:
            folder = self._make_private_folder()
            try:
                sock = self._bind_at(os.path.join(folder, SOCKET_NAME))
            except BaseException:
                fs.rmdir(folder)
                raise
            self.private_folder = folder
            fs.write_atomic(pointer_path(self.store), self.path.encode() + b"\n", sync=False)
        if previous and previous != self.path:
            self._tidy_previous(previous)
        return sock

    # -- in the store ---------------------------------------------------------------------------
    def _clear_inside(self, path: str) -> None:
        if not os.path.lexists(path):
            return
        try:
            check_private(path)
        except (UnsafeSocket, OSError) as exc:
            raise SocketRefused(f"{exc}; left alone") from None
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            log.info("removing the stale socket %s of an owner that is gone", path)
            fs.unlink(path, missing_ok=True)
            return
        except (BlockingIOError, TimeoutError):
            who = None  # its queue is full: a listener that takes no connection (stopped)
        except OSError as exc:
            raise SocketRefused(f"the socket {path} cannot be probed ({exc}); left alone") from None
        else:
            who = peer(probe)
        finally:
            probe.close()
        if who is not None and who[1] != os.getuid():
            raise SocketRefused(f"a process of user {who[1]} listens on {path}; left alone")
        # This process holds the lease: whoever else listens here was superseded by it.
        self.replaced_pid = who[0] if who is not None else None
        log.warning("the socket %s is held by process %s, an owner superseded by this one: "
                    "taking its name", path, self.replaced_pid)

    def _forget_record(self) -> None:
        """Before the store's own socket appears, a record of another place must be gone."""
        fs.unlink(pointer_path(self.store), missing_ok=True)

    # -- a private folder -------------------------------------------------------------------------
    def _make_private_folder(self) -> str:
        errors = []
        for base in private_bases():
            for _ in range(8):
                folder = os.path.join(base, PRIVATE_PREFIX + secrets.token_hex(8))
                try:  # exclusive: a name someone else made (a folder, a link) is never used
                    fs.mkdir(folder, mode=0o700, parents=False, exist_ok=False)
                except FileExistsError:
                    continue
                except OSError as exc:
                    errors.append(f"{base}: {exc}")
                    break
                st = os.lstat(folder)
                if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() \
                        and not st.st_mode & 0o077:
                    return folder
                errors.append(f"{folder} is not private after it was made")
        raise SocketRefused("no private folder for the socket could be made ("
                            + ("; ".join(errors) or "no temporary folder with a short path") + ")")

    # -- binding ----------------------------------------------------------------------------------
    def _bind_at(self, path: str, before_publish=None) -> socket.socket:
        folder = os.path.dirname(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound under a private name, made 0600, then renamed into place: a client (or a racing
        # starter) that looks between bind and chmod would see the socket open to others and refuse
        # it as unsafe. The name is shorter than the real one, so it fits wherever that fits.
        staged = os.path.join(folder, f".o{os.getpid()}")
        try:
            if os.path.lexists(staged):
                fs.unlink(staged)
            sock.bind(staged)
            fs.chmod(staged, 0o600)
            sock.listen(BACKLOG)
            if before_publish is not None:
                before_publish()
            fs.rename(staged, path)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            if os.path.lexists(staged):
                fs.unlink(staged, missing_ok=True)
            raise
        self._ino = os.lstat(path).st_ino
        self.path = path
        return sock

    # -- what a previous owner left ---------------------------------------------------------------
    def _recorded(self) -> str | None:
        try:
            return trusted_socket(self.store)
        except UnsafeSocket as exc:
            log.warning("%s; it will be replaced", exc)
            return None

    def _tidy_previous(self, previous: str) -> None:
        """A private folder a dead owner recorded: removed when it is ours and nobody listens."""
        folder = os.path.dirname(previous)
        if not os.path.basename(folder).startswith(PRIVATE_PREFIX) or previous == inside_socket(self.store):
            return
        with contextlib.suppress(OSError, UnsafeSocket):
            check_private(previous)
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(previous)
                return  # someone listens: not ours to remove
            except (ConnectionRefusedError, FileNotFoundError):
                pass
            finally:
                probe.close()
            fs.unlink(previous, missing_ok=True)
            fs.rmdir(folder)

    def damage(self) -> str | None:
        """What is wrong with the bound socket now, or None: checked by the owner every second,
        since a client refuses a socket (or folder) that changed owner or mode. A mode of the
        user's own is put back here; anything else is for the caller (listen again)."""
        if self.path is None:
            return None
        folder = os.path.dirname(self.path)
        try:
            st, fst = os.lstat(self.path), os.lstat(folder)
        except OSError as exc:
            return f"the socket {self.path} is gone ({exc.strerror})"
        if st.st_ino != self._ino or not stat.S_ISSOCK(st.st_mode):
            return f"the socket {self.path} was replaced"
        uid = os.getuid()
        if st.st_uid != uid or fst.st_uid != uid or not stat.S_ISDIR(fst.st_mode):
            return f"the socket {self.path} or its folder belongs to another user now"
        for path, want, now in ((folder, 0o700, fst.st_mode), (self.path, 0o600, st.st_mode)):
            if stat.S_IMODE(now) != want:
                log.warning("%s changed to mode %04o while this owner listened: set back to %04o",
                            path, stat.S_IMODE(now), want)
                try:
                    fs.chmod(path, want)
                except OSError as exc:
                    return f"{path} is open to others and cannot be closed again ({exc})"
        return None

    def remove(self, *, store_too: bool = True) -> None:
        """Unlink the socket (and the record, and the private folder) only while they are still this
        owner's. `store_too=False`: nothing under the store's path is touched (it may name another
        store now: the workspace was moved)."""
        path, self.path = self.path, None
        if path is None:
            return
        with contextlib.suppress(OSError):
            if (store_too or path != inside_socket(self.store)) and os.lstat(path).st_ino == self._ino:
                fs.unlink(path, missing_ok=True)
        if self.private_folder is not None:
            with contextlib.suppress(OSError):
                fs.rmdir(self.private_folder)
            if store_too:
                with contextlib.suppress(OSError, UnsafeSocket):
                    if trusted_socket(self.store) == path:
                        fs.unlink(pointer_path(self.store), missing_ok=True)
            self.private_folder = None
