import os

import pytest
from hypothesis import given, strategies as st

from turnback.errors import CorruptStore, NewerFormat, RecordError
from turnback.store.records import MAGIC, decode_record, encode_record, read_record, write_record

values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=20)
    | st.binary(max_size=20) | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@given(st.dictionaries(st.text(max_size=10), values, max_size=6))
def test_roundtrip(body):
    data = encode_record("thing", body)
    assert data.startswith(MAGIC)
    assert decode_record(data, path="p", kind="thing") == body


def test_encoding_is_canonical():
    assert encode_record("k", {"a": 1, "b": 2}) == encode_record("k", {"b": 2, "a": 1})


def test_every_flipped_bit_and_truncation_is_refused():
    data = encode_record("head", {"seq": 7, "body": "x" * 32})
    for i in range(len(data)):
        for bit in (0x01, 0x80):
            bad = bytearray(data)
            bad[i] ^= bit
            with pytest.raises(RecordError) as info:
                decode_record(bytes(bad), path="/s/heads/7", kind="head")
            assert "/s/heads/7" in info.value.message and "byte" in info.value.message
    for n in range(len(data)):
        with pytest.raises(RecordError) as info:
            decode_record(data[:n], path="f", kind="head")
        assert info.value.data["offset"] <= len(data)


def test_trailing_bytes_refused():
    with pytest.raises(RecordError):
        decode_record(encode_record("k", {}) + b"\0", path="f")


def test_newer_version_refused_not_misread():
    data = encode_record("head", {"seq": 1}, version=2)
    with pytest.raises(NewerFormat) as info:
        decode_record(data, path="f", kind="head")
    assert info.value.code == "newer-format" and isinstance(info.value, CorruptStore)
    assert decode_record(data, path="f", kind="head", max_version=2) == {"seq": 1}


def test_kind_mismatch_refused():
    with pytest.raises(RecordError, match="kind"):
        decode_record(encode_record("lease", {}), path="f", kind="head")


def test_write_and_read_record(tmp_path):
    p = tmp_path / "r.cbor"
    write_record(p, "k", {"x": 1})
    assert read_record(p, "k") == {"x": 1}
    assert os.stat(p).st_mode & 0o777 == 0o600
    assert read_record(tmp_path / "missing", "k", missing_ok=True) is None
    with pytest.raises(FileNotFoundError):
        read_record(tmp_path / "missing", "k")


def test_read_record_does_not_follow_symlinks(tmp_path):
    write_record(tmp_path / "r", "k", {})
    os.symlink(tmp_path / "r", tmp_path / "l")
    with pytest.raises(OSError):
        read_record(tmp_path / "l", "k")
