"""Compressed objects (store format 2): chosen per object, named by the raw bytes, verified on every
read, and every kind of damage (flipped byte, truncated frame, wrong declared size, bomb) reported by
name and never handed out as bytes."""

import os

import pytest
import zstandard

from turnback.errors import CorruptObject, DigestCollision
from turnback.store.objects import envelope
from turnback.store import fs
from turnback.store.fsck import fsck
from turnback.store.layout import Store
from turnback.store.objects.loose import CHUNK
from turnback.store.records import encode_record, read_record

from .test_objects import ConstantHasher

TEXT = b"".join(b"def function_%d(x):\n    return x * %d + 1\n\n" % (i, i) for i in range(400))


def _write(path, data):
    os.chmod(path, 0o600)
    path.write_bytes(data)


def _stored(store, digest) -> bytes:
    return store.objects.path(digest).read_bytes()


def _put(store, data: bytes) -> str:
    """Written as a small batch writes it (a publication): a loose envelope where it pays. A single
    put outside a batch up to 1 MiB is stored raw (test_a_single_small_put_is_raw_until_packed)."""
    with store.objects.batch():
        return store.objects.put(data)


def test_source_text_is_stored_compressed_and_named_by_its_raw_bytes(store):
    d = _put(store, TEXT)
    assert d == store.hasher.digest(TEXT)
    on_disk = _stored(store, d)
    assert on_disk.startswith(envelope.MAGIC) and len(on_disk) < len(TEXT) / 4
    assert store.objects.stored_size(d) == len(on_disk)
    assert store.objects.stat(d) == len(TEXT)
    assert store.objects.get(d) == TEXT
    assert b"".join(store.objects.iter_chunks(d)) == TEXT
    assert store.objects.verify(d) and store.objects.damage(d) is None


def test_raw_when_compression_saves_too_little(store):
    noise = os.urandom(50_000)
    tiny = b"tiny object"
    for data in (noise, tiny):
        d = _put(store, data)
        assert _stored(store, d) == data
        assert store.objects.get(d) == data and store.objects.stat(d) == len(data)


def test_raw_bytes_that_look_like_an_envelope_are_always_wrapped(store):
    lookalike = envelope.MAGIC + os.urandom(40)  # would be misread if stored raw
    d = _put(store, lookalike)
    assert _stored(store, d) != lookalike
    assert store.objects.get(d) == lookalike and store.objects.stat(d) == len(lookalike)


def test_put_of_an_existing_name_compares_raw_bytes(tmp_path):
    s = Store.open(tmp_path / "s")
    s.objects.hasher = ConstantHasher(s.hasher.seed)
    _put(s, TEXT)
    assert s.objects.put(TEXT) == "ab" * 16  # same raw bytes: shared, although the file is compressed
    with pytest.raises(DigestCollision):
        s.objects.put(TEXT[:-1] + b"!")  # same size, different bytes


def test_put_replaces_a_damaged_compressed_object(store):
    d = _put(store, TEXT)
    p = store.objects.path(d)
    _write(p, p.read_bytes()[:-7])
    assert not store.objects.verify(d)
    assert _put(store, TEXT) == d
    assert store.objects.get(d) == TEXT


def test_streamed_files_compress_and_read_back(store, tmp_path):
    big = tmp_path / "big"
    data = TEXT * (3 * CHUNK // len(TEXT) + 1)  # ~3 MiB of text: streamed
    big.write_bytes(data)
    d, size = store.objects.put_file(big)
    assert size == len(data) and d == store.hasher.digest(data)
    assert _stored(store, d).startswith(envelope.MAGIC) and store.objects.stored_size(d) < len(data) / 4
    assert b"".join(store.objects.iter_chunks(d)) == data and store.objects.stat(d) == len(data)
    assert store.objects.put_file(big) == (d, size)
    noise = tmp_path / "noise"
    noise.write_bytes(os.urandom(2 * CHUNK + 3))
    d2, _ = store.objects.put_file(noise)
    assert _stored(store, d2) == noise.read_bytes()  # the first chunk said: incompressible
    with store.objects.batch():
        big.write_bytes(data + b"more")
        d3, _ = store.objects.put_file(big)
        assert b"".join(store.objects.iter_chunks(d3)) == data + b"more"
    assert store.objects.verify(d3)
    assert [n for n in os.listdir(store.objects.root) if fs.is_temp_name(n)] == []


def test_a_single_small_put_is_raw_until_packed(store):
    """A capture on save is one put outside a batch: up to 1 MiB it is stored raw (zstd would be
    most of its latency); the collector packs and compresses it later (tests/collect/test_repack)."""
    d = store.objects.put(TEXT)
    assert _stored(store, d) == TEXT and store.objects.get(d) == TEXT
    lookalike = envelope.MAGIC + os.urandom(40)
    assert _stored(store, store.objects.put(lookalike)) != lookalike  # still wrapped: unambiguous


def _damaged(data: bytes) -> dict[str, bytes]:
    packed = envelope.pack(data)
    bomb_frame = zstandard.ZstdCompressor(write_content_size=False).compress(b"\0" * (8 << 20))
    flipped = bytearray(packed)
    flipped[len(packed) // 2] ^= 0xFF
    return {
        "flipped byte": bytes(flipped),
        "truncated frame": packed[: len(packed) - 9],
        "wrong declared size": envelope.header(len(data) + 1) + packed[envelope.HEADER:],
        "bomb past the declared size": envelope.header(len(data)) + bomb_frame,
        "bomb past the size limit": envelope.header(1 << 40) + bomb_frame,
        "no frame": envelope.header(len(data)) + b"garbage" * 10,
    }


@pytest.mark.parametrize("kind", list(_damaged(TEXT)))
def test_damaged_compressed_objects_are_refused_by_every_read_and_by_fsck(store, kind):
    d = store.objects.put(TEXT)
    _write(store.objects.path(d), _damaged(TEXT)[kind])
    with pytest.raises(CorruptObject) as info:
        store.objects.get(d)
    assert info.value.data["digest"] == d
    with pytest.raises(CorruptObject):
        for _ in store.objects.iter_chunks(d):
            pass
    assert not store.objects.verify(d)
    # A restore writes through a temp file from iter_chunks: damage means no file at all.
    target = store.path.parent / "restored.txt"
    with pytest.raises(CorruptObject):
        fs.write_atomic(target, store.objects.iter_chunks(d))
    assert not target.exists()
    report = fsck(store.path)
    assert not report.ok
    [problem] = [p for p in report.errors if d in p.what]
    assert problem.path == str(store.objects.path(d)) and "compressed object" in problem.what


def test_a_big_damaged_object_is_refused_while_streaming(store, tmp_path):
    data = TEXT * (3 * CHUNK // len(TEXT) + 1)
    (tmp_path / "big").write_bytes(data)
    d, _ = store.objects.put_file(tmp_path / "big")
    p = store.objects.path(d)
    _write(p, p.read_bytes()[:-100])
    with pytest.raises(CorruptObject):
        for _ in store.objects.iter_chunks(d):
            pass
    assert "compressed object" in store.objects.damage(d)


def test_a_bomb_is_never_inflated_past_its_declared_size(store, monkeypatch):
    d = store.objects.put(TEXT)
    _write(store.objects.path(d), _damaged(TEXT)["bomb past the declared size"])
    produced = []
    real = envelope.iter_unpack

    def spy(*a, **kw):
        for b in real(*a, **kw):
            produced.append(len(b))
            yield b
    monkeypatch.setattr(envelope, "iter_unpack", spy)
    assert not store.objects.verify(d)
    assert sum(produced) <= len(TEXT)


def _format1(path) -> None:
    """Turn a fresh store into what an older turnback created: FORMAT says 1, objects are raw."""
    body = read_record(path / "FORMAT", "format")
    _write(path / "FORMAT", encode_record("format", {**body, "format": 1}))


def test_a_format1_store_reads_as_it_is_and_its_owner_upgrades_it(tmp_path):
    Store.open(tmp_path / "s")
    _format1(tmp_path / "s")
    old = Store.open(tmp_path / "s", create=False)
    assert old.version == 1 and not old.objects.compress
    raw = old.objects.put(TEXT)  # written the way format 1 writes it
    assert _stored(old, raw) == TEXT
    lookalike = envelope.MAGIC + b"\x05" + bytes(7) + envelope.FRAME_MAGIC + b"hello"
    odd = old.objects.put(lookalike)  # a format-1 raw object that begins like an envelope
    assert fsck(tmp_path / "s").ok
    s = Store.open(tmp_path / "s")  # the open that may write upgrades the store
    assert s.version == 5 and read_record(s.format_path, "format")["format"] == 5
    assert s.objects.get(raw) == TEXT and s.objects.get(odd) == lookalike
    assert b"".join(s.objects.iter_chunks(odd)) == lookalike
    new = _put(s, TEXT + b"# new\n")
    assert _stored(s, new).startswith(envelope.MAGIC)
    assert s.store_id == old.store_id and s.hasher.seed == old.hasher.seed
    assert fsck(tmp_path / "s").ok


def test_a_mixed_store_works_and_collects_normally(tmp_path, monkeypatch):
    from tests.collect.conftest import age_objects, assert_sound, expected_live, objects, open_wb, \
        rewind, turn

    ws = tmp_path / "ws"
    ws.mkdir()
    big = "".join(f"line {i} of a file that compresses well\n" for i in range(300))
    monkeypatch.setattr("turnback.store.layout.FORMAT_VERSION", 1)  # an older turnback at work
    wb = open_wb(ws)
    assert wb.store.version == 1 and not wb.store.objects.compress
    turn(wb, ws, "old one", [("a.txt", big + "1"), ("b.txt", big + "b")])
    turn(wb, ws, "old two", [("a.txt", big + "2")])
    wb.close()
    monkeypatch.undo()
    wb = open_wb(ws)
    assert wb.store.version == 5 and wb.store.objects.compress and wb.store.objects.pack
    turn(wb, ws, "new three", [("a.txt", big + "3"), ("c.txt", big + "c")])
    kinds = {_stored(wb.store, d).startswith(envelope.MAGIC) for d in objects(wb.store)}
    assert kinds == {True, False}  # really mixed
    rewind(wb, 2)
    turn(wb, ws, "new again", [("a.txt", big + "4")])
    age_objects(wb.store)
    stats = wb.collection.run()
    assert stats["headsRetired"] > 0
    assert objects(wb.store) == expected_live(wb.store, wb.state)
    assert (ws / "a.txt").read_text() == big + "4"
    wb.close()
    assert_sound(wb.store.path)
