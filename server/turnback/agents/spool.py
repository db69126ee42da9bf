"""The hook spool: agent events a hook could not hand to an owner, kept in order until one records them.

`agents/spool` (docs/storage-format.md, "Agent hooks"):

    header  b"TBS1" | file id (8 random bytes)                                 12 bytes
    frame   payload length (u32 BE) | CRC-32 of the payload (u32 BE) | payload (a JSON object)

A payload is `{v: 1, id, agent, event, cwd, body64, ts, sent, why}`: the event's id (what makes a
second recording of it a no-op), the agent, `--event`, the hook's folder, the payload's bytes
(base64), when, whether its bytes had been sent to an owner that then did not answer, and why.

Any process of the user appends (`append`): the file is opened with `O_APPEND | O_NOFOLLOW`, mode
0600, checked to be the user's own, locked (with a budget: store/ownership/locks.py), checked to still be the
file at that name, and the frame is written and fsynced (and the folder, when the file is new). An
owner takes the spool (`take`): under the same lock it renames it to `agents/spool.replaying`, so
new events start a new spool, and reads the frames. A replay that stops half-way (the owner died, a
lock stayed held) leaves that file; the next `take` returns it again, before the newer spool. What is
already recorded is known from the agent record (the replay's cursor and the ids of recent events,
hooks/drain.py), so a frame is never recorded twice. A frame that is short or fails its checksum ends
the read (a torn append, or damage): it is reported, and the file is kept as evidence
(`spool.replaying.damaged-…`) once the good frames before it are replayed.

Standard library and the seam only: a hook's process writes here.
"""

from __future__ import annotations

import binascii
import json
import os
import time

from ..store import fs, trust
from ..store.ownership import locks

NAME = "spool"
REPLAYING = "spool.replaying"
MAGIC = b"TBS1"
HEADER_LEN = 12
FRAME_HEAD_LEN = 8
VERSION = 1
MAX_FRAME = 16 << 20  # one event's payload; a bigger one is logged, not kept
MAX_SPOOL = 256 << 20  # the spool of a store that no owner drained for a long while
LOCK_SECONDS = 2.0


class Frame:
    def __init__(self, offset: int, end: int, record: dict):
        self.offset = offset  # where the frame starts in its file
        self.end = end        # where the next one starts
        self.record = record


class Taken:
    """What `take` found: the file's id, its good frames in order, and what ended the read."""

    def __init__(self, path: str, file_id: str, frames: list[Frame], torn: str | None):
        self.path = path
        self.file_id = file_id
        self.frames = frames
        self.torn = torn


def spool_path(store) -> str:
    return os.path.join(os.fspath(store), "agents", NAME)


def replaying_path(store) -> str:
    return os.path.join(os.fspath(store), "agents", REPLAYING)


def pending(store) -> bool:
    return os.path.lexists(replaying_path(store)) or os.path.lexists(spool_path(store))


def frame_bytes(record: dict) -> bytes:
    payload = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(payload) > MAX_FRAME:
        raise ValueError(f"the event is {len(payload)} bytes, over the spool's {MAX_FRAME} limit")
    return (len(payload).to_bytes(4, "big") + binascii.crc32(payload).to_bytes(4, "big")
            + payload)


def record_of(event_id: str, agent: str, event: str | None, cwd: str | None, body: bytes,
              sent: bool, why: str) -> dict:
    return {"v": VERSION, "id": event_id, "agent": agent, "event": event, "cwd": cwd,
            "body64": binascii.b2a_base64(body, newline=False).decode("ascii"),
            "ts": time.time(), "sent": sent, "why": why}


def body_of(record: dict) -> bytes:
    return binascii.a2b_base64(record.get("body64") or "")


def append(store, record: dict, *, budget: float = LOCK_SECONDS) -> None:
    """Add one event at the end of the store's spool, durably."""
    frame = frame_bytes(record)
    folder = os.path.join(os.fspath(store), "agents")
    if not os.path.lexists(folder):
        fs.mkdir(folder, 0o700)
    trust.require(folder, "agent folder", folder=True)
    path = spool_path(store)
    for _ in range(8):  # an owner may take the file between our open and our lock: open anew
        created = not os.path.lexists(path)
        fd = fs.open_for_append(path)
        try:
            trust.require_fd(fd, path, "hook spool")
            locks.acquire(fd, budget, what=f"hook spool {path}")
            if not _still_named(fd, path):
                continue
            size = os.fstat(fd).st_size
            if size + len(frame) > MAX_SPOOL:
                raise ValueError(f"the spool {path} is full ({size} bytes); no owner has replayed "
                                 "it for a long while")
            fs.append(fd, (MAGIC + os.urandom(8) if size == 0 else b"") + frame)
            fs.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fs.fsync_dir(folder)
        return
    raise OSError(f"the spool {path} kept being replaced while this hook wrote to it")


def _still_named(fd: int, path: str) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def take(store, *, budget: float = LOCK_SECONDS) -> Taken | None:
    """The oldest spool file to replay (an unfinished replay first), or None when there is none."""
    replaying = replaying_path(store)
    if not os.path.lexists(replaying):
        path = spool_path(store)
        if not os.path.lexists(path):
            return None
        trust.require(path, "hook spool")
        fd = fs.open_read(path)
        try:
            trust.require_fd(fd, path, "hook spool")
            locks.acquire(fd, budget, what=f"hook spool {path}")
            if not _still_named(fd, path):
                return None  # another owner took it just now
            fs.rename(path, replaying)  # new events go to a new spool from now on
        finally:
            os.close(fd)
        fs.fsync_dir(os.path.dirname(path))
    return read(replaying)


def read(path: str) -> Taken:
    trust.require(path, "hook spool")
    data = fs.read_file(path)
    if len(data) < HEADER_LEN or data[:4] != MAGIC:
        return Taken(path, "", [], f"{path} has no spool header ({len(data)} bytes)" if data
                     else None)
    file_id = data[4:HEADER_LEN].hex()
    frames, offset, torn = [], HEADER_LEN, None
    while offset < len(data):
        head = data[offset:offset + FRAME_HEAD_LEN]
        length = int.from_bytes(head[:4], "big") if len(head) == FRAME_HEAD_LEN else -1
        payload = data[offset + FRAME_HEAD_LEN:offset + FRAME_HEAD_LEN + length] \
            if 0 <= length <= MAX_FRAME else b""
        if length < 0 or len(payload) != length \
                or binascii.crc32(payload) != int.from_bytes(head[4:], "big"):
            torn = f"{path}: the frame at offset {offset} is torn or damaged; " \
                   f"{len(data) - offset} bytes from there are not replayed"
            break
        try:
            record = json.loads(payload)
        except (ValueError, RecursionError):
            record = None
        end = offset + FRAME_HEAD_LEN + length
        if isinstance(record, dict):
            frames.append(Frame(offset, end, record))
        offset = end
    return Taken(path, file_id, frames, torn)


def finish(taken: Taken) -> str | None:
    """The replay of `taken` is complete: its file goes, or, when part of it could not be read, is
    kept beside as evidence (returned), never replayed again."""
    kept = None
    if taken.torn:
        kept = f"{taken.path}.damaged-{int(time.time())}-{os.urandom(4).hex()}"
        fs.rename(taken.path, kept)
    else:
        fs.unlink(taken.path, missing_ok=True)
    fs.fsync_dir(os.path.dirname(taken.path))
    return kept
