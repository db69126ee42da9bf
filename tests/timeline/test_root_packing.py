"""The session root names its turns and shards as packed digests (format 2); roots written before,
with lists of hex digests, still read back whole."""

from __future__ import annotations

import cbor2

from turnback.model.turns import Turn
from turnback.store.layout import Store
from turnback.timeline import codec as codec_mod
from turnback.timeline.book import new_session
from turnback.timeline.codec import StateCodec


def _state(store):
    state = new_session()
    for i in range(30):
        state.known[f"f{i}.txt"] = store.objects.put(f"file {i}\n".encode())
    for n in range(1, 6):
        state.turns.append(Turn(n=n, kind="chat", prompt=f"p{n}", state="settled",
                                response=f"answer {n}", started=float(n), ended=float(n) + 0.5))
    return state


def _root(store, body):
    doc = cbor2.loads(store.objects.get(body))
    return cbor2.loads(store.objects.get(doc["p"]["root"]))["p"]


def test_the_root_packs_its_digests_and_reads_back(tmp_path):
    store = Store.open(tmp_path / ".turnback")
    state = _state(store)
    body = StateCodec(store.objects).write(state)
    root = _root(store, body)
    assert isinstance(root["turns"], bytes) and len(root["turns"]) == 16 * 5
    assert isinstance(root["known"], bytes) and len(root["known"]) == 16 * 64
    back = StateCodec(store.objects).read(body)
    assert [t.response for t in back.turns] == [t.response for t in state.turns]
    assert dict(back.known) == dict(state.known)


def test_a_root_with_hex_lists_still_reads_back(tmp_path, monkeypatch):
    store = Store.open(tmp_path / ".turnback")
    state = _state(store)
    monkeypatch.setattr(codec_mod, "pack_ordered", list)  # the writer before format 2
    body = StateCodec(store.objects).write(state)
    monkeypatch.undo()
    assert isinstance(_root(store, body)["turns"], list)
    back = StateCodec(store.objects).read(body)
    assert [t.n for t in back.turns] == [1, 2, 3, 4, 5] and dict(back.known) == dict(state.known)
    turns, shards = StateCodec(store.objects).outline(body)
    assert len(turns) == 5 and len(shards) == 64
