"""The bytes of a pack and of its index (store format 3): encoding and decoding, no I/O.

A pack (`objects/pack/<id>.pack`) holds many objects in *segments*: solid zstd blocks (the raw bytes
of several objects back to back, compressed as one frame so similar files share their bytes), delta
frames (one object compressed with its base object's raw bytes as the dictionary), or raw bytes.
Its index (`objects/pack/<id>.idx`) says where each object is. Both are written once, synced and
renamed into place, the index last: an index names a complete pack, a pack without an index holds
nothing anyone can see. docs/storage-format.md section 3b describes every byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import xxhash
import zstandard

PACK_MAGIC = b"TBPK"
INDEX_MAGIC = b"TBPX"
VERSION = 2  # of the index: its tables in one zstd frame (version 1, read as ever, held them raw)
PACK_HEADER = 32  # magic, version, pack id, the level its blocks were made at, 7 reserved bytes
LEVEL_AT = 24  # the header's byte that says it (0: not recorded, a pack of an earlier version)
TRAILER = 16  # xxh3-128 (seed 0) of everything before it
NONE = 0xFFFFFFFF  # "no delta base"

RAW, BLOCK, DELTA = 0, 1, 2  # segment kinds
KINDS = (RAW, BLOCK, DELTA)

_INDEX_HEAD = struct.Struct(">4sI16sQ16sII")  # magic, version, id, pack size, pack digest, S, N
_TABLES_LEN = struct.Struct(">I")  # version 2: the stored length of the tables' frame
_SEGMENT = struct.Struct(">QIIB7xQ")  # offset, stored length, raw length, kind, xxh3-64 of stored
_ENTRY = struct.Struct(">IIII")  # segment, start (in the segment's raw bytes), size, base entry
SEGMENT_SIZE = _SEGMENT.size  # 32
ENTRY_SIZE = _ENTRY.size  # 16
DIGEST = 16
FANOUT = 256 * 4
MAX_SEGMENT_RAW = 64 << 20  # no segment may declare more raw bytes (a bomb reads as damage)


class PackFiles:
    """The two files of pack `name` in `folder` (a reader's pack and a writer's share this)."""

    __slots__ = ()
    folder: Path
    name: str

    @property
    def pack_path(self) -> Path:
        return self.folder / f"{self.name}.pack"

    @property
    def index_path(self) -> Path:
        return self.folder / f"{self.name}.idx"


class PackFormatError(ValueError):
    """A pack or index is damaged; the message names what is wrong, in a few words."""


@dataclass(frozen=True)
class Segment:
    offset: int
    stored: int
    raw: int
    kind: int
    check: int  # xxh3-64 (seed 0) of the stored bytes


def pack_header(pack_id: bytes, level: int = 0) -> bytes:
    return PACK_MAGIC + struct.pack(">I", VERSION) + pack_id + bytes([level]) + bytes(7)


def segment_check(stored: bytes) -> int:
    return xxhash.xxh3_64_intdigest(stored)


@dataclass
class IndexDoc:
    """A decoded index: tables kept as bytes and read in place (no Python object per entry, so a
    250,000-object index costs its 12 MB and loads in a few milliseconds). The checksum covers
    everything; each entry and segment is checked for sense when it is used."""

    pack_id: bytes
    pack_size: int
    pack_digest: bytes
    segment_table: bytes
    fanout: tuple[int, ...]
    digests: bytes  # N sorted 16-byte digests
    entries: bytes  # N 16-byte entries, in digest order

    @property
    def count(self) -> int:
        return len(self.digests) // DIGEST

    @property
    def segment_count(self) -> int:
        return len(self.segment_table) // SEGMENT_SIZE

    def digest_at(self, i: int) -> bytes:
        return self.digests[i * DIGEST:(i + 1) * DIGEST]

    def segment(self, i: int) -> Segment:
        if not 0 <= i < self.segment_count:
            raise PackFormatError(f"the index names segment {i} of {self.segment_count}")
        off, stored, raw, kind, check = _SEGMENT.unpack_from(self.segment_table, i * SEGMENT_SIZE)
        if kind not in KINDS or off < PACK_HEADER or off + stored + TRAILER > self.pack_size \
                or raw > MAX_SEGMENT_RAW or (kind == RAW and stored != raw):
            raise PackFormatError(f"the index describes an impossible segment {i}")
        return Segment(off, stored, raw, kind, check)

    def entry(self, i: int) -> tuple[Segment, int, int, int]:
        """(segment, start, size, base entry or NONE) of entry `i`, checked for sense."""
        seg_no, start, size, base = _ENTRY.unpack_from(self.entries, i * ENTRY_SIZE)
        seg = self.segment(seg_no)
        if start + size > seg.raw or (base != NONE and base >= self.count) \
                or (seg.kind == DELTA) != (base != NONE) or (seg.kind == DELTA and start != 0):
            raise PackFormatError(f"the index's entry {i} does not fit its segment")
        return seg, start, size, base

    def segment_of(self, i: int) -> int:
        seg: int = _ENTRY.unpack_from(self.entries, i * ENTRY_SIZE)[0]
        return seg

    def find(self, raw: bytes) -> int:
        """The entry index of digest `raw` (16 bytes), or -1."""
        first = raw[0]
        lo = self.fanout[first - 1] if first else 0
        hi = self.fanout[first]
        d = self.digests
        while lo < hi:
            mid = (lo + hi) // 2
            probe = d[mid * DIGEST:(mid + 1) * DIGEST]
            if probe < raw:
                lo = mid + 1
            elif probe > raw:
                hi = mid
            else:
                return mid
        return -1


def encode_index(pack_id: bytes, pack_size: int, pack_digest: bytes, segments: list[Segment],
                 objects: list[tuple[bytes, int, int, int, bytes | None]], level: int = 3) -> bytes:
    """The index of a pack (version 2). `objects`: (digest, segment, start, size, base digest or
    None), any order; a base must be an object of the same pack. The digests stay raw (they do not
    compress, and a lookup searches them in place); the fan-out, segment and entry tables, which
    compress to about half, are one zstd frame at `level`: requests' index 31.6 -> 20 KB, mypy's
    128 -> 85 (docs/performance.md)."""
    ordered = sorted(objects, key=lambda o: o[0])
    position = {o[0]: i for i, o in enumerate(ordered)}
    if len(position) != len(ordered):
        raise ValueError("an object appears twice in one pack")
    fanout, counts = [], [0] * 256
    for o in ordered:
        counts[o[0][0]] += 1
    total = 0
    for c in counts:
        total += c
        fanout.append(total)
    tables = [struct.pack(">256I", *fanout)]
    tables += [_SEGMENT.pack(s.offset, s.stored, s.raw, s.kind, s.check) for s in segments]
    for digest, seg, start, size, base in ordered:
        tables.append(_ENTRY.pack(seg, start, size, NONE if base is None else position[base]))
    frame = zstandard.ZstdCompressor(level=level, write_checksum=False,
                                     write_content_size=True).compress(b"".join(tables))
    body = b"".join([_INDEX_HEAD.pack(INDEX_MAGIC, VERSION, pack_id, pack_size, pack_digest,
                                      len(segments), len(ordered)), _TABLES_LEN.pack(len(frame)),
                     *(o[0] for o in ordered), frame])
    return body + xxhash.xxh3_128_digest(body)


def decode_index(data: bytes) -> IndexDoc:
    """Decode an index and check its frame (magic, checksum, counts); PackFormatError if off."""
    if len(data) < _INDEX_HEAD.size + TRAILER:
        raise PackFormatError("the index is truncated")
    if data[:4] != INDEX_MAGIC:
        raise PackFormatError("the index does not start with its magic")
    if xxhash.xxh3_128_digest(data[:-TRAILER]) != data[-TRAILER:]:
        raise PackFormatError("the index fails its checksum")
    _magic, version, pack_id, pack_size, pack_digest, n_seg, n_obj = _INDEX_HEAD.unpack_from(data)
    if version == 1:
        return _decode_v1(data, pack_id, pack_size, pack_digest, n_seg, n_obj)
    if version != VERSION:
        raise PackFormatError(f"index version {version} is not one this turnback reads")
    at = _INDEX_HEAD.size + _TABLES_LEN.size
    if len(data) < at + TRAILER:
        raise PackFormatError("the index is truncated")
    (stored,) = _TABLES_LEN.unpack_from(data, _INDEX_HEAD.size)
    want = at + n_obj * DIGEST + stored + TRAILER
    if len(data) != want:
        raise PackFormatError(f"the index is {len(data)} bytes, its counts say {want}")
    digests = data[at:at + n_obj * DIGEST]
    at += n_obj * DIGEST
    size = FANOUT + n_seg * SEGMENT_SIZE + n_obj * ENTRY_SIZE
    tables = inflate_exactly(data[at:at + stored], size, PackFormatError, "the index's table frame")
    if len(tables) != size:
        raise PackFormatError(f"the index's tables inflate to {len(tables)} bytes, its counts say {size}")
    fanout = _fanout(tables, 0, n_obj)
    table = tables[FANOUT:FANOUT + n_seg * SEGMENT_SIZE]
    return IndexDoc(pack_id, pack_size, pack_digest, table, fanout, digests,
                    tables[FANOUT + n_seg * SEGMENT_SIZE:])


def inflate_exactly(frame: bytes, size: int, error: type[Exception], what: str) -> bytes:
    """A zstd frame inflated to at most `size` bytes; `error` if it does not inflate or declares
    another size. The declaration is checked first: zstd allocates what a frame declares, whatever
    the output limit (a small frame could make a reader allocate gigabytes)."""
    try:
        declared = zstandard.frame_content_size(frame)
        if declared not in (-1, size):
            raise error(f"{what} declares {declared} bytes, not {size}")
        return zstandard.ZstdDecompressor(max_window_size=1 << 27).decompress(
            frame, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise error(f"{what} does not inflate ({exc})") from None


def _fanout(data: bytes, at: int, n_obj: int) -> tuple[int, ...]:
    fanout = struct.unpack_from(">256I", data, at)
    if fanout[-1] != n_obj or any(b < a for a, b in zip(fanout, fanout[1:])):
        raise PackFormatError("the index's fan-out table is inconsistent")
    return fanout


def _decode_v1(data: bytes, pack_id: bytes, pack_size: int, pack_digest: bytes, n_seg: int,
               n_obj: int) -> IndexDoc:
    """An index of version 1 (written before 7 December 2026): its tables raw, in place."""
    want = _INDEX_HEAD.size + n_seg * SEGMENT_SIZE + FANOUT + n_obj * (DIGEST + ENTRY_SIZE) + TRAILER
    if len(data) != want:
        raise PackFormatError(f"the index is {len(data)} bytes, its counts say {want}")
    at = _INDEX_HEAD.size
    table = data[at:at + n_seg * SEGMENT_SIZE]
    at += n_seg * SEGMENT_SIZE
    fanout = _fanout(data, at, n_obj)
    at += FANOUT
    digests = data[at:at + n_obj * DIGEST]
    at += n_obj * DIGEST
    return IndexDoc(pack_id, pack_size, pack_digest, table, fanout, digests,
                    data[at:at + n_obj * ENTRY_SIZE])
