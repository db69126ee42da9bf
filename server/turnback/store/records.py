"""Small self-checking records: the FORMAT file, heads, ownership, recovery and transaction intents.

Layout of a record file (byte-precise description in docs/storage-format.md):

    b"TBR1" | CBOR map {"kind": str, "version": int, "body": map} | xxh3-64 of all preceding bytes (8, big-endian)

The checksum comes first in the checks, so a torn or bit-flipped file is reported as corrupt (naming
the file and the byte offset) and never half-read. A version newer than the reader knows is refused
with NewerFormat, never misread.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import cbor2
import xxhash

from ..errors import NewerFormat, RecordError
from . import fs

MAGIC = b"TBR1"
SUM_LEN = 8
MIN_LEN = len(MAGIC) + 1 + SUM_LEN


def checksum(data: bytes) -> bytes:
    """xxh3-64, unseeded, as 8 big-endian bytes."""
    return xxhash.xxh3_64_digest(data)


def dumps(obj) -> bytes:
    """Canonical CBOR, so equal values always give equal bytes (and equal digests)."""
    return cbor2.dumps(obj, canonical=True)


def loads_exact(data: bytes):
    """Decode one CBOR item that must fill `data` exactly (cbor2.loads ignores trailing bytes)."""
    fp = io.BytesIO(data)
    value = cbor2.CBORDecoder(fp).decode()
    if fp.tell() != len(data):
        raise ValueError(f"{len(data) - fp.tell()} trailing bytes after the CBOR item at byte {fp.tell()}")
    return value


def encode_record(kind: str, body: dict, *, version: int = 1) -> bytes:
    if not isinstance(body, dict):
        raise TypeError("a record body is a dict")
    head = MAGIC + dumps({"kind": kind, "version": version, "body": body})
    return head + checksum(head)


def decode_record_full(data: bytes, *, path: str, kind: str | None = None,
                       max_version: int = 1) -> tuple[str, int, dict]:
    """Check and decode a record; returns (kind, version, body)."""
    path = str(path)

    def bad(offset: int, what: str) -> RecordError:
        return RecordError(f"corrupt record {path} at byte {offset}: {what}",
                           data={"path": path, "offset": offset})

    if len(data) < MIN_LEN:
        raise bad(len(data), f"truncated ({len(data)} bytes, a record has at least {MIN_LEN})")
    if data[:4] != MAGIC:
        raise bad(0, f"bad magic {data[:4]!r}, expected {MAGIC!r}")
    end = len(data) - SUM_LEN
    if checksum(data[:end]) != data[end:]:
        raise bad(end, "checksum mismatch (torn write or damaged file)")
    try:
        envelope = loads_exact(data[4:end])
    except Exception as exc:  # cbor2 raises several types; all mean the same thing here
        raise bad(4, f"invalid CBOR ({exc})") from None
    if (not isinstance(envelope, dict) or not isinstance(envelope.get("kind"), str)
            or not isinstance(envelope.get("version"), int) or not isinstance(envelope.get("body"), dict)):
        raise bad(4, "envelope is not a map with kind, version and body")
    got_kind, version = envelope["kind"], envelope["version"]
    if kind is not None and got_kind != kind:
        raise bad(4, f"kind is {got_kind!r}, expected {kind!r}")
    if version > max_version:
        raise NewerFormat(
            f"{path} is a {got_kind!r} record of version {version}; this turnback reads up to "
            f"version {max_version}. Upgrade turnback to use this store.",
            data={"path": path, "version": version, "max_version": max_version})
    if version < 1:
        raise bad(4, f"invalid version {version}")
    return got_kind, version, envelope["body"]


def decode_record(data: bytes, *, path: str, kind: str | None = None, max_version: int = 1) -> dict:
    return decode_record_full(data, path=path, kind=kind, max_version=max_version)[2]


def write_record(path: str | os.PathLike, kind: str, body: dict, *, version: int = 1,
                 sync: bool = True) -> None:
    """Atomically replace the record at `path` (temp, fsync, rename, fsync folder)."""
    fs.write_atomic(path, encode_record(kind, body, version=version), sync=sync)


def read_record(path: str | os.PathLike, kind: str | None, *, max_version: int = 1,
                missing_ok: bool = False) -> dict | None:
    """Read and check a record; a missing file raises FileNotFoundError, or returns None if missing_ok."""
    try:
        data = fs.read_file(path)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise
    return decode_record(data, path=str(Path(path)), kind=kind, max_version=max_version)
