"""Write-ahead journal: append-only CBOR frames for in-flight work between head publications.

File layout (see docs/storage-format.md):

    header  b"TBJ1" | version (u32 big-endian, = 1)                          8 bytes, at offset 0
    frame   payload length (u32 BE) | xxh64 of payload (8 bytes BE) | payload (canonical CBOR map)

Appends are not synced; `sync()` is the durability point. On open, the first frame that is short, too
long, fails its checksum or is not a CBOR map ends the journal: it and everything after it are cut
(truncated through fsio) and reported as a TornTail. Everything before it is kept. Like SQLite's WAL,
nothing after the first bad frame is trusted, so a replay is always a prefix of what was appended.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import xxhash

from ..errors import CorruptStore, NewerFormat, RecordError
from . import fsio
from .records import dumps, loads_exact

MAGIC = b"TBJ1"
VERSION = 1
HEADER = MAGIC + struct.pack(">I", VERSION)
HEADER_LEN = len(HEADER)
FRAME_HEAD = struct.Struct(">I8s")
MAX_FRAME = 64 << 20  # a larger length can only be damage; it also bounds memory on replay


@dataclass(frozen=True)
class TornTail:
    path: str
    offset: int  # where the kept journal ends
    dropped_bytes: int
    reason: str = ""


@dataclass
class Scan:
    frames: list[dict]
    good_end: int  # byte offset just after the last good frame (or the header)
    size: int
    torn: TornTail | None
    header_torn: bool  # the file is shorter than a header (crash while creating it)


def frame_bytes(frame: dict) -> bytes:
    payload = dumps(frame)
    if len(payload) > MAX_FRAME:
        raise ValueError(f"journal frame of {len(payload)} bytes is over the {MAX_FRAME} limit")
    return FRAME_HEAD.pack(len(payload), xxhash.xxh64_digest(payload)) + payload


def scan(path: str | os.PathLike) -> Scan:
    """Read every good frame without changing the file (fsck uses this directly)."""
    path = str(path)
    with os.fdopen(fsio.open_read(path), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header = f.read(HEADER_LEN)
        if len(header) < HEADER_LEN:
            if HEADER.startswith(header):
                torn = TornTail(path, 0, size, "header incomplete") if size else None
                return Scan([], 0, size, torn, header_torn=True)
            raise RecordError(f"corrupt journal {path} at byte 0: bad header {header!r}",
                              data={"path": path, "offset": 0})
        if header[:4] != MAGIC:
            raise RecordError(f"corrupt journal {path} at byte 0: bad magic {header[:4]!r}",
                              data={"path": path, "offset": 0})
        version = struct.unpack(">I", header[4:])[0]
        if version > VERSION:
            raise NewerFormat(f"{path} is a journal of version {version}; this turnback reads up to "
                              f"version {VERSION}", data={"path": path, "version": version})
        frames: list[dict] = []
        end = HEADER_LEN
        reason = ""
        while end < size:
            head = f.read(FRAME_HEAD.size)
            if len(head) < FRAME_HEAD.size:
                reason = "frame header cut short"
                break
            length, want = FRAME_HEAD.unpack(head)
            if length > MAX_FRAME:
                reason = f"frame length {length} is over the limit"
                break
            payload = f.read(length)
            if len(payload) < length:
                reason = "frame payload cut short"
                break
            if xxhash.xxh64_digest(payload) != want:
                reason = "frame checksum mismatch"
                break
            try:
                frame = loads_exact(payload)
            except Exception:
                frame = None
            if not isinstance(frame, dict):
                reason = "frame payload is not a CBOR map"
                break
            frames.append(frame)
            end += FRAME_HEAD.size + length
    torn = TornTail(path, end, size - end, reason) if end < size else None
    return Scan(frames, end, size, torn, header_torn=False)


class Journal:
    """An open journal owned by this process. Use `Journal.open`."""

    def __init__(self, path: Path, fd: int, end: int, count: int):
        self.path = path
        self._fd: int | None = fd
        self._end = end
        self.count = count
        self._broken: str | None = None

    @classmethod
    def open(cls, path: str | os.PathLike) -> tuple["Journal", list[dict], TornTail | None]:
        """Open (creating it if missing), replay good frames, cut and report a torn tail."""
        path = Path(path)
        if not os.path.lexists(path):
            fsio.create_exclusive(path, HEADER)
        s = scan(path)
        fd = fsio.open_for_append(path)
        try:
            if s.header_torn:
                fsio.truncate(fd, 0)
                fsio.append(fd, HEADER)
                fsio.fsync(fd)
                s.good_end = HEADER_LEN
            elif s.torn is not None:
                fsio.truncate(fd, s.good_end)
                fsio.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, s.good_end, len(s.frames)), s.frames, s.torn

    def append(self, frame: dict) -> None:
        """Add one frame (not yet durable; call sync()). A failed write is cut back so later frames stay readable."""
        fd = self._require_open()
        data = frame_bytes(frame)
        try:
            fsio.append(fd, data)
        except BaseException:
            try:
                fsio.truncate(fd, self._end)
            except OSError as exc:
                self._broken = f"a failed append could not be cut back ({exc})"
            raise
        self._end += len(data)
        self.count += 1

    def sync(self) -> None:
        fsio.fsync(self._require_open())

    def reset(self) -> None:
        """Empty the journal durably (the header stays), e.g. once a head covering it is published."""
        fd = self._require_open()
        fsio.truncate(fd, HEADER_LEN)
        fsio.fsync(fd)
        self._end = HEADER_LEN
        self.count = 0
        self._broken = None

    @property
    def size(self) -> int:
        return self._end

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _require_open(self) -> int:
        if self._fd is None:
            raise ValueError(f"journal {self.path} is closed")
        if self._broken:
            raise CorruptStore(f"journal {self.path} needs reopening: {self._broken}",
                               data={"path": str(self.path)})
        return self._fd
