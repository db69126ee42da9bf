"""Defect 4: the lease epoch is enforced, not only written.

An owner that passed its check, stalled past its expiry and resumed after another process took over
must not publish a head that becomes current, must not write an object of a capture into the new
owner's store, and must notice (status: observer) and stop writing."""

import threading

import pytest

from turnback.errors import NotOwner
from turnback.store.heads import HeadStore
from turnback.store.ownership.lease import Lease
from turnback.workbench import Options, Workbench

from .clocks import FakeClock

TTL = 30.0


def _objects(store_path):
    return sorted(p.name for p in (store_path / "objects").rglob("*") if p.is_file())


def _open(root, clock):
    return Workbench.open(root, Options(lease_ttl=TTL, lease_clock=clock))


@pytest.fixture
def stalled(tmp_path):
    """(old owner, new owner, clock): the old one stalled past its lease and the new one took over."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one")
    clock = FakeClock()
    old = _open(root, clock)
    old.run(old.turns.begin_job({"prompt": "first"}))
    old.run(old.turns.settle_job({"turn": 1, "status": "settled"}))
    old.book.publish()
    clock.advance(TTL + 1)
    new = _open(root, clock)
    assert new.is_owner and new.book.owner.epoch == old.book.owner.epoch + 1
    yield old, new, clock
    new.close()


def test_reader_never_picks_a_head_from_a_superseded_epoch(tmp_path):
    heads = HeadStore(tmp_path / "heads")
    common = dict(session="s", created=0.0, turn_count=0, fork_point="f", settled=True,
                  body="0" * 32)
    heads.publish(parent=None, epoch=1, **common)
    heads.publish(parent=1, epoch=2, **common)
    heads.publish(parent=2, epoch=1, **common)  # a stalled owner of epoch 1, after the takeover
    assert heads.current().seq == 2
    heads.publish(parent=2, epoch=2, **common)
    assert heads.current().seq == 4


def test_stale_owner_capture_writes_no_object_and_turns_observer(stalled):
    old, new, _clock = stalled
    statuses = []
    old.events.subscribe(lambda name, payload: statuses.append((name, payload)))
    (old.root / "b.txt").write_text("written while stalled")
    before = _objects(old.store.path)
    with pytest.raises(NotOwner):
        old.turns.capture({"uris": [(old.root / "b.txt").as_uri()]})
    assert _objects(old.store.path) == before  # the check came before the object write
    assert not old.is_owner
    assert ("status", old.status()) in statuses and old.status()["ownership"] == "observer"
    with pytest.raises(NotOwner):  # and it stays stopped
        old.turns.capture({"uris": [(old.root / "b.txt").as_uri()]})
    assert len(statuses) == 1


def test_stale_owner_renewal_turns_observer_and_says_so(stalled):
    old, _new, _clock = stalled
    statuses = []
    old.events.subscribe(lambda name, payload: statuses.append(payload["ownership"]))
    with pytest.raises(NotOwner):
        old.renew()
    assert not old.is_owner and statuses == ["observer"]


def test_publication_and_takeover_cannot_interleave(tmp_path):
    """A takeover that happens between the old owner's check and its head write is either refused
    the publication or sees it: the new owner never starts from a state older than a durable head."""
    root = tmp_path / "ws"
    root.mkdir()
    clock = FakeClock()
    old = _open(root, clock)
    old.run(old.turns.begin_job({"prompt": "first"}))
    published = old.store.heads.publish
    box = {}

    def take_over():
        box["new"] = _open(root, clock)

    def stall_then_publish(**kw):
        clock.advance(TTL + 1)  # the old owner stalls here, past its expiry ...
        thief = threading.Thread(target=take_over)
        thief.start()
        thief.join(timeout=0.5)  # ... and another process takes over (or waits for the fence)
        box["thief"] = thief
        return published(**kw)

    old.store.heads.publish = stall_then_publish
    try:
        seq = old.book.publish()
    except NotOwner:
        seq = None
    box["thief"].join()
    new = box["new"]
    try:
        assert new.is_owner
        current = new.store.heads.current()
        if seq is not None:
            assert new.book.head is not None and new.book.head.seq == seq, \
                "the new owner started from a state older than a published head"
        assert current is None or current.epoch <= new.book.owner.epoch
    finally:
        new.close()


def test_lease_expiry_and_takeover_with_an_injected_clock(store):
    clock = FakeClock()
    a = Lease.acquire(store.path, ttl=TTL, clock=clock)
    with pytest.raises(NotOwner):
        Lease.acquire(store.path, ttl=TTL, clock=clock)
    clock.advance(TTL - 1)
    a.check()
    clock.advance(2)
    with pytest.raises(NotOwner, match="expired"):
        a.check()
    b = Lease.acquire(store.path, ttl=TTL, clock=clock)
    assert b.epoch == a.epoch + 1
    with pytest.raises(NotOwner) as info:
        a.check()
    assert info.value.data["current_epoch"] == b.epoch
    with pytest.raises(NotOwner):
        a.renew()
    with pytest.raises(NotOwner):
        with a.fenced():
            pass
    a.release()  # a stale owner's release must not free b's lease
    b.check()


def test_renewal_after_a_lapse_nobody_used(store):
    clock = FakeClock()
    a = Lease.acquire(store.path, ttl=TTL, clock=clock)
    clock.advance(TTL + 5)
    a.renew()
    a.check()
    assert a.expires == clock() + TTL
