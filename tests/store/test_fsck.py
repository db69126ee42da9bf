import os

from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.store.journal import Journal
from turnback.store.ownership.lease import Lease
from turnback.store.records import write_record
from .conftest import session_body, tree


def populate(store):
    lease = Lease.acquire(store.path)
    body = session_body(store)
    store.heads.publish(parent=None, session="s", created=1.0, turn_count=1, fork_point="f",
                        settled=True, epoch=lease.epoch, body=body)
    j, _, _ = Journal.open(store.journal_path("s"))
    j.append({"op": "capture"})
    j.sync()
    j.close()
    write_record(store.recovery_dir / "r1.cbor", "recovery", {"txn": "t"})
    return body


def test_clean_store_is_ok(store):
    populate(store)
    r = fsck(store.path)
    assert r.ok and r.problems == []
    assert r.objects_checked >= 1 and r.records_checked >= 4


def test_flipped_object_byte_is_named(store):
    populate(store)
    d = store.objects.put(b"some image bytes")
    p = store.objects.path(d)
    data = bytearray(p.read_bytes())
    data[3] ^= 0x10
    p.write_bytes(bytes(data))
    r = fsck(store.path)
    assert not r.ok
    assert [(x.path, d in x.what) for x in r.errors] == [(str(p), True)]


def test_missing_head_body_is_flagged(store):
    body = populate(store)
    store.objects.remove(body)
    r = fsck(store.path)
    assert any("body object" in p.what and body in p.what for p in r.errors)


def test_torn_journal_tail_is_a_warning_and_not_cut(store):
    populate(store)
    jp = store.journal_path("s")
    with open(jp, "ab") as f:
        f.write(b"\x00\x00")
    size = jp.stat().st_size
    r = fsck(store.path)
    assert r.ok
    assert [p.severity for p in r.problems] == ["warning"] and "torn tail" in r.problems[0].what
    assert jp.stat().st_size == size


def test_damaged_records_and_permissions(store):
    populate(store)
    bad = store.txn_dir / "t1.cbor"
    write_record(bad, "txn", {"x": 1})
    with open(bad, "r+b") as f:
        f.seek(6)
        f.write(b"\xff")
    os.chmod(store.heads.path(1), 0o644)
    os.chmod(store.cache_dir, 0o755)
    (store.path / "stray").write_text("x")
    os.chmod(store.path / "stray", 0o600)
    r = fsck(store.path)
    assert any(p.path == str(bad) and "byte" in p.what for p in r.errors)
    assert any(p.path == str(store.path / "stray") and p.severity == "warning" for p in r.problems)
    assert any(p.path == str(store.heads.path(1)) and "644" in p.what for p in r.errors)
    assert any(p.path == str(store.cache_dir) and "755" in p.what for p in r.errors)


def test_head_epoch_beyond_lease_is_flagged(store):
    populate(store)
    store.heads.publish(parent=1, session="s", created=2.0, turn_count=1, fork_point="f",
                        settled=True, epoch=99, body=session_body(store, "b"))
    assert any("epoch 99" in p.what for p in fsck(store.path).errors)


def test_unreadable_format(tmp_path, store):
    store.format_path.write_bytes(b"TBR1 nonsense")
    r = fsck(store.path)
    assert not r.ok and r.problems[0].path.endswith("FORMAT")
    assert not fsck(tmp_path / "nothing").ok


def test_fsck_is_read_only(store):
    populate(store)
    jp = store.journal_path("s")
    with open(jp, "ab") as f:
        f.write(b"\x01")
    tmp = fs.temp_path(store.objects.path(store.objects.put(b"x")))
    tmp.write_bytes(b"tmp")
    tmp.chmod(0o600)
    before = tree(store.path)
    with faultplan.faults(fail_at=1, sticky=True):  # any mutation through the seam would raise
        r = fsck(store.path)
    assert tree(store.path) == before
    assert r.ok and {p.severity for p in r.problems} == {"warning"}


def test_extra_checks_are_called(store):
    seen = []

    def deep(s, report):
        seen.append(s.store_id)
        report.add(s.path, "deep problem")

    from turnback.store import fsck as fsck_mod

    fsck_mod.EXTRA_CHECKS.append(deep)  # the module's current list (the fixture swapped it)
    try:
        r = fsck(store.path)
    finally:
        fsck_mod.EXTRA_CHECKS.remove(deep)
    assert seen == [store.store_id] and not r.ok
