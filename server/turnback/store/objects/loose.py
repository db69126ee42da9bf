"""Loose objects: one file per object, `objects/ab/cdef…`, holding the raw bytes or a zstd envelope.

Big objects and the objects of small writes (a capture on save, a publication) are loose; the
collector later moves the small ones into packs (collect/repack.py). These helpers read, size, check
and stream such files; `ObjectStore` decides where each object goes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from . import envelope
from .. import fs
from .digest import Digest, Hasher
from .envelope import EnvelopeError

CHUNK = 1 << 20  # streaming unit; files above this are never held whole in memory


class LooseDamage(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def chunks_of(path: Path) -> Iterator[bytes]:
    """The file's stored bytes, as they are on disk."""
    fd = fs.open_read(path)
    try:
        yield from fs.iter_read(fd, os.fstat(fd).st_size, CHUNK)
    finally:
        os.close(fd)


def raw_chunks(path: Path, limit: int) -> Iterator[bytes]:
    """The object's raw bytes, decoding an envelope; EnvelopeError if the envelope is damaged.
    Does not verify the digest."""
    fd = fs.open_read(path)
    try:
        size = os.fstat(fd).st_size  # reads sized by it (`fs.read_size`), not 1 MiB each
        head = os.read(fd, envelope.HEADER)
        if not envelope.is_envelope(head):
            if head:
                yield head
            yield from fs.iter_read(fd, size - len(head), CHUNK)
            return
        os.lseek(fd, 0, os.SEEK_SET)
        with os.fdopen(os.dup(fd), "rb", buffering=0) as source:
            yield from envelope.iter_unpack(source, limit, CHUNK, read_size=min(CHUNK, size + 1))
    finally:
        os.close(fd)


def raw_size(path: Path, limit: int, st_size: int | None = None) -> int:
    """The raw size of the object in `path`: its file size, or what its envelope declares (a
    damaged envelope counts as size -1, which matches nothing)."""
    fd = fs.open_read(path)
    try:
        head = os.read(fd, envelope.HEADER)
        if not envelope.is_envelope(head):
            return os.fstat(fd).st_size if st_size is None else st_size
        try:
            return envelope.declared_size(head, limit)
        except EnvelopeError:
            return -1
    finally:
        os.close(fd)


def read_verified(path: Path, digest: str, hasher: Hasher, limit: int) -> bytes:
    """The raw bytes of the loose object in `path`, verified; LooseDamage (with the reason) if they
    do not hash to `digest`, FileNotFoundError if there is no such file."""
    data = fs.read_file(path)
    if not envelope.is_envelope(data):
        if hasher.digest(data) != digest:
            raise LooseDamage("its bytes do not match its digest")
        return data
    try:
        raw = envelope.unpack(data, limit)
    except EnvelopeError as exc:
        raw, reason = None, f"compressed object: {exc}"
    if raw is not None and hasher.digest(raw) == digest:
        return raw
    if hasher.digest(data) == digest:
        return data  # a format-1 raw object that happens to begin like an envelope
    raise LooseDamage(reason if raw is None
                      else "compressed object: its inflated bytes do not match its digest")


def damage(path: Path, digest: str, hasher: Hasher, limit: int) -> str | None:
    """None if the loose object in `path` is sound; else what is wrong, in a few words."""
    h = hasher.stream()
    try:
        for b in raw_chunks(path, limit):
            h.update(b)
    except EnvelopeError as exc:
        reason = f"compressed object: {exc}"
    else:
        if h.hexdigest() == digest:
            return None
        reason = ("compressed object: its inflated bytes do not match its digest"
                  if starts_as_envelope(path) else "its bytes do not match its digest")
    raw = hasher.stream()
    for b in chunks_of(path):
        raw.update(b)
    return None if raw.hexdigest() == digest else reason


def starts_as_envelope(path: Path) -> bool:
    fd = fs.open_read(path)
    try:
        return envelope.is_envelope(os.read(fd, 4))
    finally:
        os.close(fd)


def is_small_envelope(path: Path) -> bool:
    fd = fs.open_read(path)
    try:
        return envelope.is_envelope(os.read(fd, 4)) and os.fstat(fd).st_size <= CHUNK
    finally:
        os.close(fd)


def same_bytes(a: Iterable[bytes], b: Iterable[bytes]) -> bool:
    """Compare two chunk streams of possibly different chunking."""
    ia, ib = iter(a), iter(b)
    ba = bb = b""
    while True:
        if not ba:
            ba = next(ia, b"")
        if not bb:
            bb = next(ib, b"")
        if not ba or not bb:
            return not ba and not bb and next(ia, b"") == b"" and next(ib, b"") == b""
        n = min(len(ba), len(bb))
        if ba[:n] != bb[:n]:
            return False
        ba, bb = ba[n:], bb[n:]


def write_temp(final: Path, stored: bytes) -> Path:
    """Write `stored` to a fresh temp name beside `final` (not synced: the batch syncs it); removed
    again if the write fails."""
    tmp = fs.temp_path(final)
    fd = fs.create(tmp)
    try:
        try:
            fs.append(fd, stored)
        finally:
            os.close(fd)
    except BaseException:
        fs.discard(tmp)
        raise
    return tmp


def stream_into_temp(root: Path, fd: int, hasher: Hasher, max_bytes: int | None,
                     packer: envelope.StreamPacker | None, *, sync: bool,
                     too_large: Callable[[int], Exception]) -> tuple[Path, Digest, int] | None:
    """Copy the open file `fd` into a temp file in `root`, hashing the raw bytes (and compressing
    them with `packer`); returns (temp, digest, size), or None when the file's size moved while it
    was read and `packer` had declared it. The temp file is the caller's to place or discard."""
    tmp = fs.temp_path(root / "stream")
    out = fs.create(tmp)
    done = False
    try:
        h, size = hasher.stream(), 0
        try:
            if packer is not None:
                fs.append(out, packer.head())
            while True:
                b = os.read(fd, CHUNK)
                if not b:
                    break
                size += len(b)
                if max_bytes is not None and size > max_bytes:
                    raise too_large(size)
                if packer is not None and size > packer.raw_size:
                    return None  # grew while read: the declared size would lie
                h.update(b)
                fs.append(out, packer.feed(b) if packer is not None else b)
            if packer is not None:
                if size != packer.raw_size:
                    return None
                fs.append(out, packer.finish())
            if sync:
                fs.fsync(out)
        finally:
            os.close(out)
        done = True
        return tmp, Digest(h.hexdigest()), size
    finally:
        if not done:
            fs.discard(tmp)
