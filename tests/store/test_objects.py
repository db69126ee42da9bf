import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from turnback.errors import CorruptObject, DigestCollision, InvalidParams, TooLarge
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.objects.digest import Hasher
from turnback.store.objects.batch import PACK_AFTER
from turnback.store.objects.loose import CHUNK
from turnback.store.objects.objectstore import ObjectStore


class ConstantHasher(Hasher):
    """Every input gets the same digest: a stand-in for a crafted collision."""

    def digest(self, data):
        return "ab" * 16

    def stream(self):
        class S:
            def update(self, b):
                pass

            def hexdigest(self):
                return "ab" * 16
        return S()


def flip(path, at=0):
    b = bytearray(path.read_bytes())
    b[at] ^= 0xFF
    os.chmod(path, 0o600)
    path.write_bytes(bytes(b))


def test_put_get_layout_and_modes(store):
    d = store.objects.put(b"hello")
    p = store.objects.path(d)
    assert p.parent.name == d[:2] and p.name == d[2:]
    assert store.objects.get(d) == b"hello"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(p.parent.stat().st_mode) == 0o700
    assert store.objects.has(d) and store.objects.stat(d) == 5
    assert list(store.objects.list()) == [d]
    assert store.objects.put(b"hello") == d
    store.objects.remove(d)
    assert not store.objects.has(d) and store.objects.stat(d) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=300), max_size=12), st.booleans())
def test_any_sequence_of_puts_returns_the_bytes(store, blobs, batched):
    if batched:
        with store.objects.batch():
            digests = [store.objects.put(b) for b in blobs]
    else:
        digests = [store.objects.put(b) for b in blobs]
    for b, d in zip(blobs, digests):
        assert store.objects.get(d) == b
        assert b"".join(store.objects.iter_chunks(d, 7)) == b


def test_path_rejects_non_digests(store):
    for bad in ["../etc/passwd", "AB" * 16, "ab" * 15, 5]:
        with pytest.raises(InvalidParams):
            store.objects.path(bad)


def test_get_names_a_damaged_object(store):
    d = store.objects.put(b"precious bytes")
    flip(store.objects.path(d))
    with pytest.raises(CorruptObject) as info:
        store.objects.get(d)
    assert d in info.value.message
    assert not store.objects.verify(d)
    with pytest.raises(CorruptObject):
        list(store.objects.iter_chunks(d))


def test_put_replaces_a_torn_object(store):
    d = store.objects.put(b"x" * 100)
    p = store.objects.path(d)
    os.truncate(p, 10)
    assert store.objects.put(b"x" * 100) == d
    assert store.objects.get(d) == b"x" * 100


def test_collision_is_refused(tmp_path):
    objects = ObjectStore(tmp_path / "o", ConstantHasher(0))
    d = objects.put(b"first")
    with pytest.raises(DigestCollision):
        objects.put(b"other bytes")
    with pytest.raises(DigestCollision):
        objects.put(b"firsT")  # same size, different bytes
    assert objects.get(d) == b"first"
    with pytest.raises(DigestCollision):
        with objects.batch():
            objects.put(b"one")
            objects.put(b"two")


def test_put_file_small_and_streamed(store, tmp_path):
    small = tmp_path / "small"
    small.write_bytes(b"s" * 1000)
    assert store.objects.put_file(small) == (store.objects.put(b"s" * 1000), 1000)
    big = tmp_path / "big"
    data = os.urandom(1024) * (3 * 1024 + 5)  # ~3 MiB: streamed
    big.write_bytes(data)
    d, size = store.objects.put_file(big)
    assert size == len(data) and d == store.hasher.digest(data)
    assert store.objects.get(d) == data
    assert store.objects.put_file(big) == (d, size)  # dedup by bytes
    assert [n for n in os.listdir(store.objects.root) if fs.is_temp_name(n)] == []


def test_put_file_streamed_in_batch(store, tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"b" * (CHUNK * 2 + 1))
    with store.objects.batch():
        d, _ = store.objects.put_file(big)
        assert not store.objects.path(d).exists()
        assert store.objects.get(d) == big.read_bytes()
    assert store.objects.path(d).exists() and store.objects.verify(d)


def test_put_file_limits_and_refusals(store, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"z" * 5000)
    with pytest.raises(TooLarge) as info:
        store.objects.put_file(f, max_bytes=4999)
    assert info.value.data["limit"] == 4999
    assert store.objects.put_file(f, max_bytes=5000)[1] == 5000
    big = tmp_path / "big"
    big.write_bytes(b"z" * (CHUNK * 2))
    with pytest.raises(TooLarge):
        store.objects.put_file(big, max_bytes=CHUNK + 10)
    os.symlink(f, tmp_path / "link")
    with pytest.raises(OSError):
        store.objects.put_file(tmp_path / "link")
    with pytest.raises(InvalidParams):
        store.objects.put_file(tmp_path)
    assert [n for n in os.listdir(store.objects.root) if fs.is_temp_name(n)] == []


def test_batch_is_one_durability_pass(store):
    blobs = [b"blob %d" % i for i in range(PACK_AFTER - 1)]  # loose: too few for a pack
    with faultplan.faults() as plan:
        with store.objects.batch():
            digests = [store.objects.put(b) for b in blobs]
            assert all(not store.objects.path(d).exists() for d in digests)
            assert store.objects.get(digests[3]) == blobs[3]
            assert store.objects.has(digests[3])
    ops = [e.split()[0] for e in plan.log]
    folders = {store.objects.path(d).parent for d in digests}
    assert ops.count("fsync") + ops.count("syncfs") <= len(blobs)
    # The new names are made durable after the last rename: one fsync per fan-out folder, or (from
    # 16 folders on, as here) one syncfs; new fan-outs are created without syncs of their own.
    last_rename = max(i for i, op in enumerate(ops) if op == "rename")
    after = plan.log[last_rename + 1:]
    dir_syncs = {e.split()[1] for e in after if e.startswith("fsync_dir")}
    assert dir_syncs >= set(map(str, folders)) or any(e.startswith("syncfs") for e in after)
    assert len(folders) < 16 or ops.count("fsync_dir") <= 2
    for b, d in zip(blobs, digests):
        assert store.objects.get(d) == b


def test_batch_abort_discards(store):
    with pytest.raises(RuntimeError):
        with store.objects.batch():
            d = store.objects.put(b"never")
            raise RuntimeError
    assert not store.objects.has(d)
    for folder, _, files in os.walk(store.objects.root):
        assert not [f for f in files if fs.is_temp_name(f)]


def test_nested_batch_joins_outer(store):
    with store.objects.batch():
        with store.objects.batch():
            d = store.objects.put(b"inner")
        assert not store.objects.path(d).exists()
    assert store.objects.get(d) == b"inner"


def test_a_big_single_write_gives_its_pages_back_once_durable(store, monkeypatch):
    """A save's 1 MiB image is cold once synced: its pages go back to the kernel (after the fsync,
    never before it), a small object's stay cached, and the bytes read back the same."""
    calls, real_fsync = [], os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(("fsync", fd)), real_fsync(fd))[1])
    monkeypatch.setattr(os, "posix_fadvise",
                        lambda fd, off, n, advice: calls.append(("advise", fd, off, n, advice)))
    big = os.urandom(1 << 20)
    digest = store.objects.put(big)
    advised = [c for c in calls if c[0] == "advise"]
    assert [c[2:] for c in advised] == [(0, 0, os.POSIX_FADV_DONTNEED)]
    fd = advised[0][1]
    assert calls.index(("fsync", fd)) < calls.index(advised[0])  # durable first
    assert store.objects.get(digest) == big
    calls.clear()
    store.objects.put(b"small and likely read back")
    assert not [c for c in calls if c[0] == "advise"]


def test_advice_the_system_refuses_changes_nothing(store, monkeypatch):
    def refuse(*_a):
        raise OSError(22, "Invalid argument")
    monkeypatch.setattr(os, "posix_fadvise", refuse)
    big = os.urandom(256 << 10)
    assert store.objects.get(store.objects.put(big)) == big


def test_a_fan_folder_removed_mid_listing_is_skipped(store, monkeypatch):
    """A live owner's collection may empty and remove a fan-out folder while fsck or a listing walks
    the object space (issue 43, G): the walk goes on with the folders that are left."""
    from turnback.store.objects import listing

    digests = {store.objects.put(f"object {i}".encode()) for i in range(40)}
    fans = sorted({d[:2] for d in digests})
    gone = fans[0]
    real_listdir = os.listdir

    def listdir(path):
        if os.path.basename(path) == gone:
            for name in real_listdir(path):
                os.unlink(os.path.join(path, name))
            os.rmdir(path)
        return real_listdir(path)

    monkeypatch.setattr(listing.os, "listdir", listdir)
    listed = set(store.objects.list_loose())
    assert listed == {d for d in digests if not d.startswith(gone)}
