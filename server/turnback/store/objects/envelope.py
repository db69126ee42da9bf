"""How an object's bytes sit in its file: raw, or a zstd envelope (store format 2).

An envelope is `MAGIC` (4 bytes), the raw size (8 bytes, little endian), then one zstd frame. The
object's name is always the digest of the RAW bytes, so compression is invisible above the object store.

Chosen per object: an object is stored raw when it is tiny or when compression saves less than an
eighth (already-compressed images, random data), since decompressing costs time on every read.
A raw object whose own bytes begin with `MAGIC` is always wrapped, so in a format-2 store the first
four bytes alone tell the two apart. (A format-1 store may hold such a raw object; readers of whole
objects fall back to the raw reading when the envelope does not verify, see `ObjectStore.get`.)

Decompression is bounded twice: the declared size may not exceed `limit`, and the frame may not
produce more than the declared size (nor less). A small file that would inflate past either is a
decompression bomb and reads as a corrupt object; nothing is inflated past the declared size.

Binding: `zstandard` (python-zstandard), maintained, with wheels for every CPython we support, and it
releases the GIL while it compresses, which the parallel first checkpoint relies on. Python 3.14's
`compression.zstd` would do once 3.14 is the floor.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import zstandard

from . import zstdctx

MAGIC = b"\x89TBZ"
HEADER = 12  # magic + raw size
FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
LEVEL = 3  # zstd's default: fast on source text, and the size gain over level 1 is worth it
MIN_SIZE = 128  # below this the frame overhead eats any gain, and the file takes a block anyway
MIN_SAVING = 1 / 8
LIMIT = 1 << 32  # the largest raw size an envelope may declare (4 GiB; capture's own limit is lower)


class EnvelopeError(ValueError):
    """The envelope is damaged: the reason names what is wrong (kept short, it goes in messages)."""


# zstd contexts are not thread-safe: each use takes one of its own (store/objects/zstdctx.py)
_compressors = zstdctx.Kept(
    lambda: zstandard.ZstdCompressor(level=LEVEL, write_checksum=False, write_content_size=True),
    keep=2)  # 2.5 MiB each after a 1 MiB object
_decompressors = zstdctx.Kept(zstandard.ZstdDecompressor, keep=4)  # 0.1 MiB each


def header(raw_size: int) -> bytes:
    return MAGIC + raw_size.to_bytes(8, "little")


def is_envelope(prefix: bytes) -> bool:
    return prefix[:4] == MAGIC


def compress(data: bytes) -> bytes:
    """`data` as one zstd frame at LEVEL, with no envelope header."""
    with _compressors.use() as c:
        framed: bytes = c.compress(data)
        return framed


def pack(data: bytes) -> bytes | None:
    """The envelope for `data`, or None when `data` should be stored raw."""
    must = data[:4] == MAGIC
    if len(data) < MIN_SIZE and not must:
        return None
    frame = compress(data)
    if not must and HEADER + len(frame) > len(data) * (1 - MIN_SAVING):
        return None
    return header(len(data)) + frame


def declared_size(head: bytes, limit: int = LIMIT) -> int:
    """The raw size an envelope header declares; EnvelopeError if the header is short or the size
    is past `limit` (a bomb: refused before anything is inflated)."""
    if len(head) < HEADER or head[:4] != MAGIC:
        raise EnvelopeError("truncated envelope header")
    size = int.from_bytes(head[4:HEADER], "little")
    if size > limit:
        raise EnvelopeError(f"declares {size} bytes, past the limit of {limit}")
    return size


def unpack(data: bytes, limit: int = LIMIT) -> bytes:
    """The raw bytes of a whole envelope; EnvelopeError when it is damaged."""
    size = declared_size(data, limit)
    frame = data[HEADER:]
    if frame[:4] != FRAME_MAGIC:
        raise EnvelopeError("no zstd frame after the header")
    try:
        content = zstandard.frame_content_size(frame)
    except zstandard.ZstdError:
        raise EnvelopeError("truncated zstd frame header") from None
    if content not in (-1, size):  # -1: the frame does not say; the cap below still holds
        raise EnvelopeError(f"the frame holds {content} bytes, the header declares {size}")
    try:
        # max_output_size bounds a frame that does not state its size; one that does was checked above.
        with _decompressors.use() as d:
            raw: bytes = d.decompress(frame, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise EnvelopeError(f"zstd frame is damaged ({exc})") from None
    if len(raw) != size:
        raise EnvelopeError(f"inflates to {len(raw)} bytes, the header declares {size}")
    return raw


class StreamPacker:
    """Compress a stream whose raw size is announced up front (a file of known size)."""

    def __init__(self, raw_size: int):
        self.raw_size = raw_size
        self._obj = zstandard.ZstdCompressor(level=LEVEL, write_checksum=False).compressobj(
            size=raw_size)

    def head(self) -> bytes:
        return header(self.raw_size)

    def feed(self, chunk: bytes) -> bytes:
        return self._obj.compress(chunk)

    def finish(self) -> bytes:
        return self._obj.flush()


def iter_unpack(source: BinaryIO, limit: int = LIMIT, out_size: int = 1 << 20,
                read_size: int | None = None) -> Iterator[bytes]:
    """Raw chunks of an envelope read from the binary file object `source` (at its start). Never
    inflates past the declared size, even for one call; raises EnvelopeError where the envelope
    proves damaged (a consumer must not commit what it built before the iteration ends).
    `read_size`: what each read of `source` asks for (the file's size, for a small one)."""
    size = declared_size(source.read(HEADER), limit)
    # A context of its own: two streams may be read side by side (comparing two objects).
    reader = zstandard.ZstdDecompressor().stream_reader(source, read_size=read_size or out_size,
                                                        read_across_frames=False, closefd=False)
    total = 0
    try:
        while True:
            b = reader.read(min(out_size, size - total + 1))
            if not b:
                break
            total += len(b)
            if total > size:
                raise EnvelopeError(f"inflates past the declared {size} bytes")
            yield b
    except zstandard.ZstdError as exc:
        raise EnvelopeError(f"zstd frame is damaged ({exc})") from None
    if total != size:
        raise EnvelopeError(f"inflates to {total} bytes, the header declares {size}")
