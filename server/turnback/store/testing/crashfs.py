"""The lost-unsynced-writes crash model for the fault seam (tests only; inert unless a plan uses it).

A real power cut keeps only what was made durable: file contents up to the last fsync of that file,
and folder entries (create, rename, unlink, mkdir, rmdir, link) up to the last fsync of that folder.
Like SQLite's crash-test file system and ALICE, this journal records, just before each mutating
operation, what it would take to undo it; an fsync removes the entries it made durable; at the crash
point every remaining entry is undone, newest first, so the disk looks as it would after power loss
and a reboot. `syncfs` makes everything on its file system durable (contents, bits and names; what
is on another file system stays unsynced). A chmod or utime is metadata of the inode: like its
contents it is durable only once that file is fsynced (or the file system synced); a crash before
puts the old permission bits (or times) back. Torn writes (part of one write surviving) are not
modelled: a write not made durable is lost whole.
"""

from __future__ import annotations

import os
import shutil
import stat as statmod
from dataclasses import dataclass, field


@dataclass
class _Entry:
    kind: str  # content | create | rename | unlink | mkdir | rmdir | link | chmod | utime
    path: str
    folders: set = field(default_factory=set)  # names become durable when these are synced
    ino: tuple | None = None
    pre: bytes | None = None  # content before, or the bytes of an unlinked / overwritten file
    mode: int = 0o600
    src: str = ""
    link: str | None = None  # an unlinked symbolic link's target
    times: tuple[int, int] | None = None  # (atime_ns, mtime_ns) before a utime


# Entries made durable by an fsync of their file, not of a folder.
_INODE_KINDS = ("content", "chmod", "utime")


def _real(path) -> str:
    return os.path.abspath(os.fspath(path))


def _fd_path(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _parent(path: str) -> str:
    return os.path.dirname(path)


class UnsyncedJournal:
    def __init__(self):
        self.entries: list[_Entry] = []
        self.dirty_inodes: set = set()
        self.where: dict = {}  # inode -> its path now (renames move files)

    # -- before each operation ----------------------------------------------------------------
    def before(self, op: str, target, src=None) -> None:
        handler = getattr(self, "_" + op, None)
        if handler is not None:
            try:
                handler(target, src)
            except OSError:
                pass  # the operation itself will fail the same way; nothing to undo

    def _content(self, fd_or_path, _src) -> None:
        if isinstance(fd_or_path, int):
            st, path = os.fstat(fd_or_path), _fd_path(fd_or_path)
        else:
            path = _real(fd_or_path)
            st = os.stat(path)
        if path is None or not statmod.S_ISREG(st.st_mode):
            return
        ino = (st.st_dev, st.st_ino)
        self._reused(ino, path)
        self.where[ino] = path
        if ino in self.dirty_inodes:
            return
        self.dirty_inodes.add(ino)
        pre = b"" if st.st_size == 0 else _read(path)
        self.entries.append(_Entry("content", path, ino=ino, pre=pre))

    _write = _truncate = _content

    def _reused(self, ino, path: str) -> None:
        """A file system gives a freed inode number to the next new file. Every rename is followed
        (`where`), so an inode met at a path other than its known one is a new file: what was kept
        for the old one (its content before, its bits) must not be written into this one at the
        crash (it was: a stale agent record's bytes put back over a synced one, now and then)."""
        known = self.where.get(ino)
        if known is None or known == path:
            return
        self.entries = [e for e in self.entries if not (e.kind in _INODE_KINDS and e.ino == ino)]
        self.dirty_inodes.discard(ino)

    def _create(self, path, _src) -> None:
        path = _real(path)
        if not os.path.lexists(path):
            self.entries.append(_Entry("create", path, {_parent(path)}))

    def _metadata(self, path, kind: str) -> None:
        """Before a chmod or utime: the inode's bits and times now (the first change since its last
        fsync is the one a crash undoes to)."""
        path = _real(path)
        st = os.lstat(path)
        if statmod.S_ISLNK(st.st_mode):
            return  # the seam refuses links; nothing changes
        ino = (st.st_dev, st.st_ino)
        self._reused(ino, path)
        self.where[ino] = path
        self.entries.append(_Entry(kind, path, ino=ino, mode=statmod.S_IMODE(st.st_mode),
                                   times=(st.st_atime_ns, st.st_mtime_ns)))

    def _chmod(self, path, _src) -> None:
        self._metadata(path, "chmod")

    def _utime(self, path, _src) -> None:
        self._metadata(path, "utime")

    def _fsync(self, fd, _src) -> None:
        st = os.fstat(fd)
        ino = (st.st_dev, st.st_ino)
        self.dirty_inodes.discard(ino)
        self.entries = [e for e in self.entries if not (e.kind in _INODE_KINDS and e.ino == ino)]

    def _fsync_dir(self, path, _src) -> None:
        folder = _real(path)
        for e in self.entries:
            e.folders.discard(folder)
        self.entries = [e for e in self.entries if e.kind in _INODE_KINDS or e.folders]

    def _syncfs(self, path, _src) -> None:
        """Everything on the file system of `path` becomes durable: contents, bits and names. What
        is on another file system stays as unsynced as it was."""
        dev = os.stat(_real(path)).st_dev
        self.entries = [e for e in self.entries if _device(e) != dev]
        self.dirty_inodes = {ino for ino in self.dirty_inodes if ino[0] != dev}

    def _leaving(self, path: str, st) -> tuple[bytes, int]:
        """A file leaves the namespace (renamed over, unlinked): what a crash brings back at its name
        is what was durable in it (its content and bits before their first unsynced change), not
        what it holds now. Its inode's entries go with it: its number is free for the next new
        file, the undo's own re-created ones too (an empty agent record's bytes were once written at
        the crash over the synced record that had taken that number)."""
        ino = (st.st_dev, st.st_ino)
        pre, mode = None, None
        if st.st_nlink <= 1:
            for e in self.entries:
                if e.ino == ino and e.kind == "content" and pre is None:
                    pre = e.pre
                elif e.ino == ino and e.kind == "chmod" and mode is None:
                    mode = e.mode
            self.entries = [e for e in self.entries
                            if not (e.kind in _INODE_KINDS and e.ino == ino)]
            self.dirty_inodes.discard(ino)
            self.where.pop(ino, None)
        return (_read(path) if pre is None else pre,
                statmod.S_IMODE(st.st_mode) if mode is None else mode)

    def _rename(self, dst, src) -> None:
        src, dst = _real(src), _real(dst)
        st = os.lstat(src)
        e = _Entry("rename", dst, {_parent(src), _parent(dst)}, ino=(st.st_dev, st.st_ino), src=src)
        if os.path.lexists(dst):
            old = os.lstat(dst)
            if statmod.S_ISREG(old.st_mode) and (old.st_dev, old.st_ino) != e.ino:
                e.pre, e.mode = self._leaving(dst, old)
        self.where[e.ino] = dst
        self.entries.append(e)

    def _unlink(self, path, _src) -> None:
        path = _real(path)
        if not os.path.lexists(path):
            return
        st = os.lstat(path)
        e = _Entry("unlink", path, {_parent(path)}, mode=statmod.S_IMODE(st.st_mode))
        if statmod.S_ISLNK(st.st_mode):
            e.link = os.readlink(path)
        elif statmod.S_ISREG(st.st_mode):
            e.pre, e.mode = self._leaving(path, st)
        else:
            return
        self.entries.append(e)

    def _mkdir(self, path, _src) -> None:
        path = _real(path)
        if not os.path.lexists(path):
            self.entries.append(_Entry("mkdir", path, {_parent(path)}))

    def _rmdir(self, path, _src) -> None:
        path = _real(path)
        st = os.lstat(path)
        self.entries.append(_Entry("rmdir", path, {_parent(path)}, mode=statmod.S_IMODE(st.st_mode)))

    def _link(self, dst, _src) -> None:
        dst = _real(dst)
        if not os.path.lexists(dst):
            self.entries.append(_Entry("link", dst, {_parent(dst)}))

    _symlink = _link

    # -- at the crash -------------------------------------------------------------------------
    def lose_unsynced(self) -> int:
        """Undo every operation that was not made durable, newest first; returns how many."""
        undone = 0
        for e in reversed(self.entries):
            try:
                self._undo(e)
                undone += 1
            except OSError:
                continue
        self.entries.clear()
        self.dirty_inodes.clear()
        return undone

    def _undo(self, e: _Entry) -> None:
        if e.kind == "content":
            path = self.where.get(e.ino, e.path)
            st = os.lstat(path)
            if (st.st_dev, st.st_ino) == e.ino and e.pre is not None:  # a content entry has one
                _overwrite(path, e.pre)
        elif e.kind in ("create", "link"):
            if os.path.lexists(e.path) and not os.path.isdir(e.path):
                os.unlink(e.path)
        elif e.kind == "rename":
            os.rename(e.path, e.src)
            if e.ino is not None:
                self.where[e.ino] = e.src
            if e.pre is not None:
                _overwrite(e.path, e.pre, create=True, mode=e.mode)
        elif e.kind == "unlink":
            if os.path.lexists(e.path):
                return
            if e.link is not None:
                os.symlink(e.link, e.path)
            else:
                _overwrite(e.path, e.pre or b"", create=True, mode=e.mode)
        elif e.kind == "mkdir":
            if os.path.isdir(e.path) and not os.path.islink(e.path):
                shutil.rmtree(e.path)
        elif e.kind == "rmdir":
            if not os.path.lexists(e.path):
                os.mkdir(e.path, e.mode)
        elif e.kind in ("chmod", "utime"):
            path = self.where.get(e.ino, e.path)
            st = os.lstat(path)
            if (st.st_dev, st.st_ino) != e.ino or statmod.S_ISLNK(st.st_mode):
                return  # that inode is no longer there (renamed over, removed): nothing to undo
            if e.kind == "chmod":
                os.chmod(path, e.mode)
            elif e.times is not None:  # a utime entry has them
                os.utime(path, ns=e.times)


def _device(e: _Entry) -> int | None:
    """The file system an entry's change was made on: its inode's, or its nearest folder's."""
    if e.kind in _INODE_KINDS and e.ino is not None:
        return e.ino[0]
    folder = _parent(e.path)
    while True:
        try:
            return os.stat(folder).st_dev
        except OSError:
            up = _parent(folder)
            if up == folder:
                return None
            folder = up


def _overwrite(path: str, data: bytes, *, create: bool = False, mode: int = 0o600) -> None:
    flags = os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
