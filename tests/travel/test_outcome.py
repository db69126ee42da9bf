"""How an intent's outcome is read from the store: its base, the publication naming it, or neither."""

from __future__ import annotations

import pytest

from turnback.travel import outcome as oc


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_base_commit_and_superseded(agent, kind):
    a = agent(store_kind=kind)
    a.turn("one", {"a.txt": "1"})
    base = oc.base_of(oc.current_mark(a.wb.store))
    intent = {"id": "t" * 32, "base": base}
    assert oc.decide(a.wb.book, intent) == oc.NOT_COMMITTED
    a.wb.book.publish(txn=intent["id"])  # the commit point of that transaction
    assert oc.decide(a.wb.book, intent) == oc.COMMITTED
    a.turn("two", {"a.txt": "2"})  # later work published on top of it
    assert oc.decide(a.wb.book, intent) == oc.SUPERSEDED


def test_an_intent_without_a_base_is_read_the_old_way(agent):
    a = agent()
    a.turn("one", {"a.txt": "1"})
    assert oc.decide(a.wb.book, {"id": "u" * 32}) == oc.NOT_COMMITTED
    a.wb.book.publish(txn="u" * 32)
    a.turn("two", {"a.txt": "2"})
    assert oc.decide(a.wb.book, {"id": "u" * 32}) == oc.COMMITTED


def test_an_unreadable_publication_decides_nothing(agent, monkeypatch):
    a = agent()
    a.turn("one", {"a.txt": "1"})

    def unreadable():
        raise OSError(5, "injected")

    monkeypatch.setattr(a.wb.store.heads, "current", unreadable)
    with pytest.raises(oc.OutcomeUnknown):
        oc.decide(a.wb.book, {"id": "v" * 32, "base": {"seq": 1}})
