import os
import stat
import threading

import pytest

from turnback.errors import InvalidParams, NewerFormat, NotFound, SymlinkRefused
from turnback.store import fs
from turnback.store.layout import FORMAT_VERSION, SUBDIRS, Store
from turnback.store.records import encode_record, read_record


def test_create_layout_and_permissions(tmp_path):
    s = Store.open(tmp_path / ".turnback")
    assert s.kind == "heads" and len(s.store_id) == 32
    assert (s.path / ".gitignore").read_bytes() == b"*\n"
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o700
    for name in SUBDIRS:
        assert stat.S_IMODE((s.path / name).stat().st_mode) == 0o700
    for name in (".gitignore", "FORMAT"):
        assert stat.S_IMODE((s.path / name).stat().st_mode) == 0o600
    body = read_record(s.format_path, "format")
    assert body["format"] == FORMAT_VERSION == 5 and body["kind"] == "heads" and body["seed"] == s.hasher.seed
    assert s.objects.root == s.path / "objects" and s.heads.dir == s.path / "heads"
    assert s.journal_path("sess-1") == s.path / "journal" / "sess-1.wal"
    assert s.txn_dir.name == "txn" and s.recovery_dir.name == "recovery" and s.cache_dir.name == "cache"
    assert s.sidecar_path.name == "sidecar.cbor"


def test_reopen_keeps_identity_and_seed(tmp_path):
    a = Store.open(tmp_path / "s")
    d = a.objects.put(b"x")
    b = Store.open(tmp_path / "s")
    assert (b.store_id, b.hasher.seed) == (a.store_id, a.hasher.seed)
    assert b.objects.get(d) == b"x"
    assert Store.open(tmp_path / "s", kind=None).kind == "heads"


def test_open_without_create_writes_nothing(tmp_path):
    with pytest.raises(NotFound):
        Store.open(tmp_path / "none", create=False)
    assert not (tmp_path / "none").exists()


def test_kind_mismatch_and_unknown_kind(tmp_path):
    Store.open(tmp_path / "s", kind="pid")
    with pytest.raises(InvalidParams, match="'pid' store"):
        Store.open(tmp_path / "s", kind="heads")
    with pytest.raises(InvalidParams):
        Store.open(tmp_path / "t", kind="git")


def test_newer_format_refused(tmp_path):
    s = Store.open(tmp_path / "s")
    body = read_record(s.format_path, "format")
    os.chmod(s.format_path, 0o600)
    s.format_path.write_bytes(encode_record("format", {**body, "format": FORMAT_VERSION + 1}))
    with pytest.raises(NewerFormat):
        Store.open(tmp_path / "s")
    s.format_path.write_bytes(encode_record("format", body, version=3))
    with pytest.raises(NewerFormat):
        Store.open(tmp_path / "s")


def test_refuses_a_foreign_folder_and_a_symlink(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("x")
    with pytest.raises(InvalidParams, match="not a turnback store"):
        Store.open(tmp_path / "home")
    Store.open(tmp_path / "real")
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(SymlinkRefused):
        Store.open(tmp_path / "link")


def test_half_created_store_is_finished(tmp_path):
    fs.mkdir(tmp_path / "s" / "objects")
    s = Store.open(tmp_path / "s")
    assert all((s.path / n).is_dir() for n in SUBDIRS)


def test_concurrent_creators_agree_on_one_identity(tmp_path):
    ids = []

    def opener():
        ids.append(Store.open(tmp_path / "s").store_id)

    threads = [threading.Thread(target=opener) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(ids) == 6


def test_journal_names_are_validated(store):
    for bad in ["../x", "", ".hidden", "a/b", "x" * 200]:
        with pytest.raises(InvalidParams):
            store.journal_path(bad)


def test_sweep_temp(store):
    d = store.objects.put(b"kept")
    leftover = fs.temp_path(store.objects.path(d))
    leftover.write_bytes(b"half")
    assert store.sweep_temp() == [leftover]
    assert store.objects.get(d) == b"kept"
