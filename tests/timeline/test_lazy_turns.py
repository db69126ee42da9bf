"""A command's store open reads only the turns it uses (issue 39, items 2 and 4).

`Options(lazy_turns=True)` (the command line's open) leaves every published turn unread until a
field of it is used; a publication names an untouched turn by its digest and its reference list by
the root's `turnLists` groups. Whatever is read or published must be what the eager open gives:
the same state, the same body digest, the same pickled copy."""

from __future__ import annotations

import pickle

from turnback.model.session import clone
from turnback.timeline import lazyturns
from turnback.timeline.codec import StateCodec
from turnback.timeline.lazyturns import GROUP, is_unread
from turnback.workbench import Options, Workbench

TURNS = GROUP + 6  # two groups of reference lists


def _session(agent, turns=TURNS):
    a = agent()
    for i in range(turns):
        a.turn(f"turn {i}", {f"f{i % 7}.txt": f"version {i}\n"})
    a.close()
    return a


def _lazy(a):
    return Workbench.open(a.root, Options(lazy_turns=True))


def _loads(monkeypatch):
    read = []
    real = lazyturns.LazyTurn.load
    monkeypatch.setattr(lazyturns.LazyTurn, "load", lambda self: read.append(1) or real(self))
    return read


def test_a_lazy_open_reads_no_turn_and_gives_the_eager_state(agent, monkeypatch):
    a = _session(agent)
    read = _loads(monkeypatch)
    wb = _lazy(a)
    try:
        assert len(wb.state.turns) == TURNS and all(is_unread(t) for t in wb.state.turns)
        assert wb.state.settled_turn_count == TURNS and wb.state.running is None
        assert len(read) <= 1  # `running` reads the last turn, nothing else
        eager = StateCodec(wb.store.objects).read(wb.book.head.body)
        assert wb.state == eager  # every turn read on demand, equal to the eager read
        assert not any(is_unread(t) for t in wb.state.turns)
    finally:
        wb.close()


def test_a_publication_from_a_lazy_open_names_the_same_body_and_reads_no_turn(agent, monkeypatch):
    a = _session(agent)
    wb = _lazy(a)
    try:
        read = _loads(monkeypatch)
        body = wb.book.codec.write(wb.state)
        assert read == []  # untouched turns named by digest and reference list
        assert body == wb.book.head.body  # nothing changed: the very body the head names
        eager = StateCodec(wb.store.objects)
        assert eager.write(eager.read(body)) == body
    finally:
        wb.close()


def test_a_command_line_turn_reads_only_the_last_turn(agent, monkeypatch):
    a = _session(agent)
    read = _loads(monkeypatch)
    wb = _lazy(a)
    try:
        n = wb.run(wb.turns.begin_job({"prompt": "one more"}))["turn"]
        (a.root / "late.txt").write_text("late\n")
        wb.run(wb.turns.settle_job({"turn": n}))
    finally:
        wb.close()
    assert len(read) <= 2
    b = a.reopen()  # an eager open sees every turn, the new one settled, and a sound store
    assert len(b.wb.state.turns) == TURNS + 1 and b.wb.state.turns[-1].state == "settled"
    assert [t.prompt for t in b.wb.state.turns][-2:] == [f"turn {TURNS - 1}", "one more"]


def test_a_turn_changed_after_a_lazy_open_is_published_with_its_change(agent):
    a = _session(agent, 3)
    wb = _lazy(a)
    try:
        wb.state.turns[0].prompt = "renamed"  # a write reads the turn first, then changes it
        assert not is_unread(wb.state.turns[0]) and is_unread(wb.state.turns[1])
        body = wb.book.codec.write(wb.state)
        assert StateCodec(wb.store.objects).read(body).turns[0].prompt == "renamed"
    finally:
        wb.close()


def test_a_store_without_turn_lists_reads_its_turns_to_publish(agent, monkeypatch):
    """A root written before `turnLists` (or one naming the wrong count) has no list to reuse: the
    publication reads the turns, as every publication did, and writes the groups from then on."""
    a = _session(agent, 5)
    wb = _lazy(a)
    try:
        for t in wb.state.turns:
            t.__dict__["_source"][4].groups = []  # as read from an older root
        read = _loads(monkeypatch)
        body = wb.book.codec.write(wb.state)
        assert len(read) == 5 and body == wb.book.head.body
    finally:
        wb.close()


def test_a_lazy_state_copies_and_pickles_as_plain_turns(agent):
    a = _session(agent, 3)
    wb = _lazy(a)
    try:
        copy = clone(wb.state)
        assert all(type(t).__name__ == "Turn" for t in copy.turns)
        assert copy == wb.state and pickle.loads(pickle.dumps(wb.state)) == copy
    finally:
        wb.close()
