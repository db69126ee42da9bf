"""The pack index, version 2: its fan-out, segment and entry tables in one zstd frame, its digests
raw. A store's version-1 indexes (tables raw) read as ever; a frame that declares another size is
a damaged index, never an allocation of what it declares."""

from __future__ import annotations

import struct

import pytest
import xxhash
import zstandard

from turnback.store.objects import delta
from turnback.store.fsck import fsck
from turnback.store.layout import Store
from turnback.store.objects.batch import PACK_AFTER
from turnback.store.objects.packs import PackDamage, inflate
from turnback.store.objects.packformat import (DIGEST, FANOUT, SEGMENT_SIZE, TRAILER,
                                               PackFormatError, decode_index)

HEAD = 56  # magic, version, id, pack size, pack digest, S, N


def _source(i: int) -> bytes:
    return "".join(f"def f{i}_{k}(x):\n    return x + {k * i}\n" for k in range(40)).encode()


def _packed(store, n=PACK_AFTER + 200):
    datas = [_source(i) for i in range(n)]
    with store.objects.batch():
        digests = [store.objects.put(d) for d in datas]
    (pack,) = store.objects.packs.packs.values()
    return pack, dict(zip(digests, datas))


def _as_version_1(data: bytes) -> bytes:
    """The same index as a version-1 writer made it: every table raw, in place."""
    doc = decode_index(data)
    head = bytearray(data[:HEAD])
    head[4:8] = struct.pack(">I", 1)
    body = b"".join([bytes(head), doc.segment_table, struct.pack(">256I", *doc.fanout), doc.digests,
                     doc.entries])
    return body + xxhash.xxh3_128_digest(body)


def _resealed(data: bytes, frame: bytes) -> bytes:
    n = struct.unpack_from(">I", data, 52)[0]
    body = data[:HEAD] + struct.pack(">I", len(frame)) + data[HEAD + 4:HEAD + 4 + n * DIGEST] + frame
    return body + xxhash.xxh3_128_digest(body)


def _claiming(frame: bytes, declared: int) -> bytes:
    """`frame` (whose header states its size in 2 bytes) rewritten to state `declared` in 8."""
    fhd = frame[4]
    assert fhd >> 6 == 1
    at = 5 + (0 if fhd & 0x20 else 1)
    out = frame[:4] + bytes([(fhd & 0x3F) | 0xC0]) + frame[5:at] + struct.pack("<Q", declared) \
        + frame[at + 2:]
    assert zstandard.frame_content_size(out) == declared
    return out


def test_a_block_or_delta_frame_claiming_a_terabyte_is_damage_not_an_allocation():
    data = _source(1) * 8
    with pytest.raises(PackDamage, match="declares"):
        inflate(_claiming(zstandard.ZstdCompressor().compress(data), 1 << 40), len(data))
    base = _source(2) * 8
    with pytest.raises(delta.DeltaError, match="declares"):
        delta.decode(base, _claiming(delta.encode(base, data), 1 << 40), len(data))


def test_the_index_costs_its_digests_and_a_frame(store):
    pack, _ = _packed(store)
    data = pack.index_path.read_bytes()
    n, s = pack.doc.count, pack.doc.segment_count
    assert struct.unpack_from(">I", data, 4)[0] == 2
    raw_tables = FANOUT + s * SEGMENT_SIZE + n * 16
    assert len(data) < HEAD + 4 + n * DIGEST + raw_tables // 2 + TRAILER  # the tables halve, at least


def test_a_version_1_index_reads_as_ever(store):
    pack, objects = _packed(store)
    pack.index_path.write_bytes(_as_version_1(pack.index_path.read_bytes()))
    fresh = Store.open(store.path, create=False)
    fresh.objects.packs.refresh(force=True)
    (again,) = fresh.objects.packs.packs.values()
    assert again.doc.count == len(objects) and not fresh.objects.packs.broken
    assert all(fresh.objects.get(d) == data for d, data in objects.items())
    assert fsck(store.path).ok


@pytest.mark.parametrize("declared", [1 << 40, -1])
def test_a_table_frame_that_declares_another_size_is_a_damaged_index(store, declared):
    pack, objects = _packed(store)
    data = pack.index_path.read_bytes()
    doc = decode_index(data)
    tables = struct.pack(">256I", *doc.fanout) + doc.segment_table + doc.entries
    if declared == -1:  # states no size, inflates to one byte more than the counts say
        frame = zstandard.ZstdCompressor(write_content_size=False).compress(tables + b"\0")
    else:  # a small frame whose header claims a terabyte: refused before zstd allocates it
        frame = _claiming(zstandard.ZstdCompressor().compress(tables), declared)
    with pytest.raises(PackFormatError, match="table frame"):
        decode_index(_resealed(data, frame))
    pack.index_path.write_bytes(_resealed(data, frame))
    fresh = Store.open(store.path, create=False)
    fresh.objects.packs.refresh(force=True)
    assert pack.name in fresh.objects.packs.broken and not fresh.objects.packs.packs
    assert not fsck(store.path).ok
