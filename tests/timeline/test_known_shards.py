"""The known-image map is published shard by shard; an unchanged shard costs nothing to publish again."""

from __future__ import annotations

import copy

import cbor2

from turnback.model.known import SHARDS, KnownMap, shard_of
from turnback.store.layout import Store
from turnback.timeline.book import new_session
from turnback.timeline.codec import StateCodec


def test_every_mutation_moves_the_generation_of_its_shard():
    m = KnownMap({"a": "absent"})
    for mutate in (lambda: m.__setitem__("b", "x" * 32), lambda: m.update({"c": "absent"}),
                   lambda: m.pop("a"), lambda: m.setdefault("d", "absent"),
                   lambda: m.__delitem__("b")):
        before = list(m.generations)
        mutate()
        assert m.generations != before
    before = list(m.generations)
    m["c"] = "absent"  # the same image again is no change
    assert m.generations == before
    assert copy.deepcopy(m).map_id != m.map_id and copy.deepcopy(m) == m


def test_publication_re_encodes_only_changed_shards_and_reads_back_whole(tmp_path):
    store = Store.open(tmp_path / ".turnback")
    codec = StateCodec(store.objects)
    state = new_session()
    for i in range(500):
        state.known[f"f{i}.txt"] = "absent"
    codec.write(state)
    writes = []
    real = store.objects.put
    store.objects.put = lambda data: writes.append(data) or real(data)
    state.known["f7.txt"] = store.objects.hasher.digest(b"x")
    body = codec.write(state)
    known_writes = [w for w in writes if cbor2.loads(w).get("t") == "known"]
    assert len(known_writes) == 1  # one shard changed, one shard written
    assert codec.read(body).known == state.known
    assert len(codec.read_body(body)["refs"]) >= SHARDS
    assert shard_of("f7.txt") in range(SHARDS)


def test_publications_of_a_growing_response_store_each_piece_once(tmp_path):
    store = Store.open(tmp_path / ".turnback")
    codec = StateCodec(store.objects)
    from turnback.model.turns import Turn

    state = new_session()
    state.turns.append(Turn(n=1, kind="chat", prompt="go", started=1.0))
    pieces = [f"paragraph {i} " * 200 for i in range(30)]
    sizes = []
    for piece in pieces:
        state.turns[0].response += piece
        before = sum(store.objects.stat(d) for d in store.objects.list())
        body = codec.write(state)
        sizes.append(sum(store.objects.stat(d) for d in store.objects.list()) - before)
    total = len("".join(pieces).encode())
    assert sum(sizes) < 3 * total  # O(total), not O(publications x total) (~15x total here)
    assert codec.read(body).turns[0].response == "".join(pieces)
    fresh = StateCodec(store.objects)  # another process continues the chunks it reads back
    back = fresh.read(body)
    back.turns[0].response = "replaced entirely"
    assert fresh.read(fresh.write(back)).turns[0].response == "replaced entirely"


def test_equal_modes_share_one_int_object():
    """250,000 files keep a handful of distinct modes: one int object each, not one per file
    (32 bytes a file that an owner at 250,000 files kept, scattered, for good)."""
    m = KnownMap({"a": "absent", "b": "absent"})
    first, second = int("644", 8), int("0644", 8)  # equal ints made apart: two objects
    assert first == second and first is not second
    m.set_mode("a", first)
    m.set_mode("b", second)
    assert m.mode("a") is m.mode("b")
