import threading

import pytest

from turnback.errors import HeadRace, InvalidParams, RecordError
from turnback.store import fs
from turnback.store.heads import HeadRecord, HeadStore


def fields(**over):
    base = dict(parent=None, session="s1", created=1700000000.5, turn_count=3, fork_point="fp1",
                settled=True, epoch=1, body="0" * 32)
    base.update(over)
    return base


def test_publish_read_current(store):
    heads = store.heads
    assert heads.current() is None and heads.list_seqs() == []
    h1 = heads.publish(**fields())
    h2 = heads.publish(**fields(parent=1, last_prompt="fix it", txn="t1"))
    assert (h1.seq, h2.seq) == (1, 2)
    assert heads.list_seqs() == [1, 2]
    assert heads.read(2) == h2 and heads.current() == h2
    assert heads.path(2).name == "000000000002.cbor"
    assert isinstance(h2, HeadRecord) and h2.txn == "t1"


def test_expect_seq_is_a_compare_and_swap(store):
    store.heads.publish(**fields())
    with pytest.raises(HeadRace) as info:
        store.heads.publish(**fields(), expect_seq=1)
    assert info.value.data["seq"] == 1 and info.value.code == "head-race"
    assert store.heads.publish(**fields(parent=1), expect_seq=2).seq == 2


def test_concurrent_publishers_never_share_a_seq(store):
    results, errors = [], []

    def writer(i):
        for _ in range(20):
            try:
                results.append(store.heads.publish(**fields(session=f"w{i}")).seq)
            except HeadRace:
                errors.append(i)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == len(set(results))
    assert sorted(results) == store.heads.list_seqs()


def test_retire(store):
    store.heads.publish(**fields())
    store.heads.publish(**fields(parent=1))
    store.heads.retire(2)
    assert store.heads.current().seq == 1
    store.heads.retire(2)  # idempotent


def test_invalid_fields_refused(store):
    with pytest.raises(InvalidParams):
        store.heads.publish(**fields(body="not-a-digest"))
    with pytest.raises(RecordError):
        store.heads.publish(**fields(parent=5))  # a parent must come before its child
    assert store.heads.list_seqs() == []


def test_damaged_or_misnamed_head_is_refused(store):
    h = store.heads.publish(**fields())
    p = store.heads.path(h.seq)
    fs.rename(p, store.heads.path(7))
    with pytest.raises(RecordError, match="seq 1"):
        store.heads.read(7)
    data = bytearray(store.heads.path(7).read_bytes())
    data[10] ^= 1
    store.heads.path(7).write_bytes(bytes(data))
    with pytest.raises(RecordError):
        store.heads.current()


def test_unknown_names_are_ignored(store):
    (store.heads.dir / "notes.txt").write_text("x")
    (store.heads.dir / ".000000000001.cbor.tbtmp.abc").write_text("x")
    assert store.heads.list_seqs() == []


def test_heads_dir_created_lazily(tmp_path):
    hs = HeadStore(tmp_path / "heads")
    assert hs.list_seqs() == []
    assert hs.publish(**fields()).seq == 1
