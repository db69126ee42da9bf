"""Write-ahead journal: append-only CBOR frames for in-flight work between head publications.

File layout (see docs/storage-format.md):

    header  b"TBJ1" | version (u32 big-endian, = 1)                          8 bytes, at offset 0
    frame   payload length (u32 BE) | xxh64 of payload (8 bytes BE) | payload (canonical CBOR map)

Appends are not synced; `sync()` is the durability point. On open, the first frame that is short, too
long, fails its checksum or is not a CBOR map ends the replay. Like SQLite's WAL, nothing after the
first bad frame is replayed, so a replay is always a prefix of what was appended. What happens to the
bytes depends on what follows the bad frame:

* nothing valid (a crash cut the last append short): a *torn tail*, cut (truncated through fs) and
  reported as a TornTail;
* a valid frame somewhere after it: *damage*, not a tear (a bit flipped in a synced frame). The file
  is kept whole as evidence (`<name>.damaged-<hash>`, beside it), the journal restarts from the good
  prefix, and the open reports it (`Damage`, code `corrupt-store`); nothing is cut silently.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import xxhash

from ..errors import CorruptStore, NewerFormat, RecordError
from . import fs
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


@dataclass(frozen=True)
class Damage:
    """Valid frames follow a bad one: the journal was damaged after it was written."""

    path: str
    offset: int  # where the first bad frame starts
    reason: str
    later_frames: int  # valid frames found after the damage (not replayed)
    evidence: str | None = None  # where the whole file was kept (set by Journal.open)

    def to_wire(self) -> dict:
        return {"code": "corrupt-store", "path": self.path, "offset": self.offset,
                "reason": self.reason, "unreplayedFrames": self.later_frames,
                "evidence": self.evidence}


@dataclass
class Scan:
    frames: list[dict]
    good_end: int  # byte offset just after the last good frame (or the header)
    size: int
    torn: TornTail | None
    header_torn: bool  # the file is shorter than a header (crash while creating it)
    damage: Damage | None = None  # set instead of `torn` when valid frames follow the bad one
    more: bool = False  # stopped at `max_frames` or `max_bytes`: read on from `good_end`


def frame_bytes(frame: dict) -> bytes:
    payload = dumps(frame)
    if len(payload) > MAX_FRAME:
        raise ValueError(f"journal frame of {len(payload)} bytes is over the {MAX_FRAME} limit")
    return FRAME_HEAD.pack(len(payload), xxhash.xxh64_digest(payload)) + payload


# How many times this process cut each journal back (reset, a torn tail, a failed append): a
# reader that remembers where it stopped reads on from there only while this count holds still.
_cuts: dict[str, int] = {}


def cuts(path: str | os.PathLike) -> int:
    return _cuts.get(os.path.abspath(path), 0)


def _cut(path) -> None:
    key = os.path.abspath(path)
    _cuts[key] = _cuts.get(key, 0) + 1


def scan(path: str | os.PathLike, start: int | None = None,
         max_frames: int | None = None, max_bytes: int | None = None) -> Scan:
    """Read every good frame without changing the file (fsck uses this directly). With `start`
    (the `good_end` of an earlier scan of the same, since only grown, journal), only the frames
    after it; with `max_frames`, at most that many, and with `max_bytes`, frames until that many
    bytes of them are read (at least one); `more` then says so and `good_end` where to read on
    (the rest is not judged)."""
    path = str(path)
    with os.fdopen(fs.open_read(path), "rb") as f:
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
        if start is not None and HEADER_LEN < start <= size:
            f.seek(start)
            end = start
        reason = ""
        begin = end
        while end < size:
            if (max_frames is not None and len(frames) >= max_frames) or \
                    (max_bytes is not None and frames and end - begin >= max_bytes):
                return Scan(frames, end, size, None, header_torn=False, more=True)
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
        if end < size:
            f.seek(end)
            later = _valid_frames_after(f.read(), skip=1)
            if later:
                damage = Damage(path, end, reason, later)
                return Scan(frames, end, size, None, header_torn=False, damage=damage)
    torn = TornTail(path, end, size - end, reason) if end < size else None
    return Scan(frames, end, size, torn, header_torn=False)


def _valid_frames_after(rest: bytes, *, skip: int) -> int:
    """How many checksum-valid frames start in `rest` at or after byte `skip` (a chain from the first
    one found). A torn tail has none; damage in the middle has some."""
    return len(_chain_after(rest, skip=skip))


def _chain_after(rest: bytes, *, skip: int) -> list[bytes]:
    """The payloads of the first chain of checksum-valid frames found at or after `skip`. The 64-bit
    checksum makes a false find by chance negligible; lengths beyond the data are rejected before
    any hashing, so the search stays linear in practice."""
    size = len(rest)
    for start in range(skip, size - FRAME_HEAD.size + 1):
        length, want = FRAME_HEAD.unpack_from(rest, start)
        stop = start + FRAME_HEAD.size + length
        if length == 0 or stop > size:
            continue
        if xxhash.xxh64_digest(rest[start + FRAME_HEAD.size:stop]) != want:
            continue
        chain, pos = [rest[start + FRAME_HEAD.size:stop]], stop
        while pos + FRAME_HEAD.size <= size:
            length, want = FRAME_HEAD.unpack_from(rest, pos)
            nxt = pos + FRAME_HEAD.size + length
            if nxt > size or xxhash.xxh64_digest(rest[pos + FRAME_HEAD.size:nxt]) != want:
                break
            chain.append(rest[pos + FRAME_HEAD.size:nxt])
            pos = nxt
        return chain
    return []


EVIDENCE_MARK = ".damaged-"


def is_evidence(name: str) -> bool:
    """A damaged journal kept whole (see `keep_evidence`)."""
    return EVIDENCE_MARK in name and name.split(EVIDENCE_MARK, 1)[0].endswith(".wal")


def salvage_frames(path: str | os.PathLike) -> list[dict]:
    """Every frame still readable in a (possibly damaged) journal: the good prefix and the valid
    frames after the damage. For the collector (what evidence references stays) and for people."""
    s = scan(path)
    frames = list(s.frames)
    if s.good_end < s.size:
        with os.fdopen(fs.open_read(str(path)), "rb") as f:
            f.seek(s.good_end)
            rest = f.read()
        for payload in _chain_after(rest, skip=1):
            try:
                frame = loads_exact(payload)
            except Exception:
                continue
            if isinstance(frame, dict):
                frames.append(frame)
    return frames


def keep_evidence(path: Path) -> str:
    """Copy a damaged journal beside itself, named by its content hash (a repeat open after a crash
    finds the same copy); returns the copy's path."""
    data = fs.read_file(path)
    evidence = path.with_name(f"{path.name}{EVIDENCE_MARK}{xxhash.xxh64_hexdigest(data)}")
    if not os.path.lexists(evidence):
        fs.write_atomic(evidence, data)
    return str(evidence)


class Journal:
    """An open journal owned by this process. Use `Journal.open`."""

    def __init__(self, path: Path, fd: int, end: int, count: int):
        self.path = path
        self._fd: int | None = fd
        self._end = end
        self.count = count
        self._broken: str | None = None
        # Where the journal ended at this process's last fsync that succeeded; unknown at open (a
        # process that died may have left frames only in the page cache), so the first sync syncs.
        self._synced: int | None = None

    @classmethod
    def open(cls, path: str | os.PathLike, *, first: dict | None = None
             ) -> tuple["Journal", list[dict], TornTail | Damage | None]:
        """Open (creating it if missing, with `first` as its first frame, durable with the file),
        replay good frames, cut and report a torn tail; keep a damaged journal as evidence and
        restart it from its good prefix (see the module text)."""
        path = Path(path)
        if not os.path.lexists(path):
            fs.create_exclusive(path, HEADER + (frame_bytes(first) if first else b""))
        s = scan(path)
        if s.damage is not None:
            evidence = keep_evidence(path)
            fs.write_atomic(path, fs.read_file(path)[:s.good_end])  # after the evidence copy
            damage = dataclasses.replace(s.damage, evidence=evidence)
            return cls._open_scanned(path, scan(path), damage)
        return cls._open_scanned(path, s, s.torn)

    @classmethod
    def _open_scanned(cls, path: Path, s: Scan, report):
        fd = fs.open_for_append(path)
        _cut(path)  # whatever it cuts below, readers read it anew
        try:
            if s.header_torn:
                fs.truncate(fd, 0)
                fs.append(fd, HEADER)
                fs.fsync(fd)
                s.good_end = HEADER_LEN
            elif s.torn is not None:
                fs.truncate(fd, s.good_end)
                fs.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, s.good_end, len(s.frames)), s.frames, report

    def append(self, frame: dict) -> None:
        """Add one frame (not yet durable; call sync()). A failed write is cut back so later frames stay readable."""
        fd = self._require_open()
        data = frame_bytes(frame)
        try:
            fs.append(fd, data)
        except BaseException:
            _cut(self.path)
            self._synced = None  # part of it may have reached the file: the next sync syncs
            try:
                fs.truncate(fd, self._end)
            except OSError as exc:
                self._broken = f"a failed append could not be cut back ({exc})"
            raise
        self._end += len(data)
        self.count += 1

    def sync(self) -> None:
        """Make every appended frame durable. A journal with nothing appended since its last
        fsync that succeeded is not synced again (a sweep that found nothing, before the begin's own
        record): that fsync would promise nothing more. A failed fsync is retried by the next."""
        fd = self._require_open()
        if self.clean:
            return
        end = self._end
        fs.fsync(fd)
        self._synced = end

    @property
    def clean(self) -> bool:
        """Nothing appended since this process's last fsync that succeeded."""
        return self._synced is not None and self._synced == self._end and self._broken is None

    def reset(self) -> None:
        """Empty the journal durably (the header stays), e.g. once a head covering it is published."""
        fd = self._require_open()
        _cut(self.path)
        self._synced = None
        fs.truncate(fd, HEADER_LEN)
        fs.fsync(fd)
        self._end = self._synced = HEADER_LEN
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
