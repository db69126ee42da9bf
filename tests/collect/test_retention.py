"""Retention rules: the pure decision, then each root through the real workbench."""

from __future__ import annotations

import copy
import time

from turnback.collect.retention import decide
from turnback.collect.scan import HeadFacts
from turnback.store.records import write_record
from turnback.travel.transaction import INTENT_KIND, RECOVERY_KIND

from .conftest import (age_objects, assert_sound, body_closure, expected_live, objects, open_wb,
                       rewind, turn)


def F(seq, *, tc=0, fp="f", settled=True, created=0.0):
    return HeadFacts(seq, seq, 100, created, tc, fp, settled, "%032x" % seq, 10)


# ------------------------------------------------------------------ the pure decision
def test_current_is_kept_even_unsettled():
    d = decide({1: F(1), 2: F(2, tc=1, settled=False)}, now=0, grace_heads=0, grace_seconds=0)
    assert "current" in d.keep[2]
    assert 1 in d.keep and d.keep[1] == ["group"]


def test_newest_settled_head_of_each_group_only():
    facts = {1: F(1, tc=1), 2: F(2, tc=1), 3: F(3, tc=2, settled=False), 4: F(4, tc=2),
             5: F(5, tc=2, fp="g"), 6: F(6, tc=3, settled=False), 7: F(7, tc=3, fp="g")}
    d = decide(facts, now=0, grace_heads=0, grace_seconds=0)
    assert sorted(d.keep) == [2, 4, 5, 7]
    assert d.retire == [1, 3, 6]


def test_unsettled_heads_are_never_representatives():
    facts = {1: F(1, tc=0), 2: F(2, tc=0, settled=False), 3: F(3, tc=0, settled=False), 4: F(4, tc=1)}
    d = decide(facts, now=0, grace_heads=0, grace_seconds=0)
    assert sorted(d.keep) == [1, 4] and d.retire == [2, 3]


def test_grace_count_and_age():
    facts = {s: F(s, tc=1, created=float(s)) for s in range(1, 11)}
    d = decide(facts, now=100.0, grace_heads=3, grace_seconds=0)
    assert sorted(d.keep) == [8, 9, 10]
    d = decide(facts, now=10.5, grace_heads=0, grace_seconds=3.0)  # created 8, 9, 10 are < 3 s old
    assert sorted(d.keep) == [8, 9, 10] and d.keep[8] == ["young"]
    d = decide({1: F(1, tc=1), 2: F(2, tc=1)}, now=0, grace_heads=5, grace_seconds=0)
    assert sorted(d.keep) == [1, 2]  # a window larger than the history keeps all of it
    d = decide(facts, now=100.0, grace_heads=0, grace_seconds=0, protect=[4])
    assert sorted(d.keep) == [4, 10]


# ------------------------------------------------------------------ through the workbench
def _long_session(ws, **kw):
    wb = open_wb(ws, **kw)
    for i in range(3):
        turn(wb, ws, f"p{i}", [("a.txt", f"a{i}.1\n"), ("a.txt", f"a{i}.2\n"), (f"f{i}.txt", "x\n")])
    return wb


def test_groups_and_current_survive_and_redo_offers_the_same(ws):
    wb = _long_session(ws)
    rewind(wb, 2)
    turn(wb, ws, "again", [("a.txt", "other\n")])
    before = wb.store.heads.list_seqs()
    groups = wb.redo.list()["groups"]
    heads = {s: wb.store.heads.read(s) for s in before}
    age_objects(wb.store)
    stats = wb.collection.run()
    after = wb.store.heads.list_seqs()
    assert stats["headsRetired"] == len(before) - len(after) > 0
    assert after[-1] == before[-1] == wb.book.head.seq
    assert all(heads[s].settled for s in after)
    assert wb.redo.list()["groups"] == groups  # every Redo representative is still there
    reps = {}
    for s in before:
        if heads[s].settled:
            reps[(heads[s].turn_count, heads[s].fork_point)] = s
    assert set(after) == set(reps.values()) | {before[-1]}
    assert objects(wb.store) == expected_live(wb.store, wb.state)
    wb.close()
    assert_sound(wb.store.path)


def test_grace_count_keeps_the_newest_heads(ws):
    wb = _long_session(ws, grace_heads=4)
    before = wb.store.heads.list_seqs()
    wb.collection.run()
    assert set(before[-4:]) <= set(wb.store.heads.list_seqs())
    wb.close()


def test_grace_age_keeps_young_heads(ws):
    wb = _long_session(ws, grace_seconds=3600.0)
    before = wb.store.heads.list_seqs()
    assert wb.collection.run()["headsRetired"] == 0
    assert wb.store.heads.list_seqs() == before
    wb.close()


def test_a_retained_object_keeps_nothing_else_alive(ws):
    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "kept forever\n")])
    first_body = wb.book.head.body
    n = wb.run(wb.turns.begin_job({"prompt": "two"}))["turn"]
    (ws / "b.txt").write_text("b\n")
    wb.turns.capture({"uris": [(ws / "b.txt").as_uri()]})  # publishes an unsettled head
    obsolete = wb.book.head
    wb.run(wb.turns.settle_job({"turn": n}))
    shared = wb.store.objects.hasher.digest(b"kept forever\n")
    age_objects(wb.store)
    wb.collection.run()
    assert obsolete.seq not in wb.store.heads.list_seqs()
    assert not wb.store.objects.has(obsolete.body)  # its manifest went, though its images stay
    assert wb.store.objects.has(shared) and wb.store.objects.has(first_body)
    wb.close()


def test_journal_pins_survive(ws):
    wb = open_wb(ws, publish_interval=3600.0)
    turn(wb, ws, "one", [("a.txt", "one\n")])
    n = wb.run(wb.turns.begin_job({"prompt": "running"}))["turn"]
    for text in ("only in the journal 1\n", "only in the journal 2\n"):  # the first is overwritten
        (ws / "a.txt").write_text(text)
        wb.turns.capture({"uris": [(ws / "a.txt").as_uri()]})
    wb.turns.step({"turn": n, "kind": "shell", "scope": "host", "result": "tool output"})
    h = wb.store.objects.hasher.digest
    pinned = {h(b"only in the journal 1\n"), h(b"only in the journal 2\n"), h(b"tool output")}
    stray = wb.store.objects.put(b"nobody references me")
    age_objects(wb.store)
    assert wb.book.dirty and wb.store.heads.list_seqs() == [wb.book.head.seq]
    wb.collection.run()
    assert all(wb.store.objects.has(d) for d in pinned)
    assert not wb.store.objects.has(stray)
    wb.run(wb.turns.settle_job({"turn": n}))
    wb.close()
    assert_sound(wb.store.path)


def test_new_objects_are_never_swept(ws):
    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "one\n")])
    age_objects(wb.store)
    fresh = wb.store.objects.put(b"written just now, not referenced yet")
    wb.collection.run()
    assert wb.store.objects.has(fresh)
    wb.close()


def test_intent_and_recovery_records_are_roots(ws):
    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "one\n")])
    objs = wb.store.objects
    backup = objs.put(b"backup bytes of an unfinished transaction")
    target = objs.put(b"target bytes of an unfinished transaction")
    new_state = copy.deepcopy(wb.state)
    only_in_body = objs.put(b"known only to the intent's new state")
    new_state.known["z.txt"] = only_in_body
    body = wb.book.write_state(new_state)
    intent_closure = body_closure(wb.store, body)
    write_record(wb.store.txn_dir / "t1.cbor", INTENT_KIND, {
        "id": "t1", "operation": "rewind", "created": time.time(), "body": body,
        "files": [{"rel": "a.txt", "to": target, "backup": backup}]})
    rescue = objs.put(b"a backup a failed rollback left behind")
    write_record(wb.store.recovery_dir / "r1.cbor", RECOVERY_KIND, {
        "id": "r1", "operation": "rewind", "created": time.time(), "paths": ["a.txt"],
        "reason": "test", "backups": [{"rel": "a.txt", "digest": rescue}]})
    age_objects(wb.store)
    wb.collection.run()
    for d in (backup, target, rescue, only_in_body, *intent_closure):
        assert objs.has(d), d
    (wb.store.txn_dir / "t1.cbor").unlink()
    (wb.store.recovery_dir / "r1.cbor").unlink()
    wb.collection.run()
    for d in (backup, target, rescue, only_in_body, body):
        assert not objs.has(d), d
    wb.close()
    assert_sound(wb.store.path)


def test_unreadable_head_blocks_every_deletion(ws):
    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "one\n")])
    turn(wb, ws, "two", [("a.txt", "two\n")])
    stray = wb.store.objects.put(b"garbage")
    age_objects(wb.store)
    p = wb.store.heads.path(wb.store.heads.list_seqs()[0])
    p.write_bytes(p.read_bytes()[:-3])  # damaged record
    stats = wb.collection.run()
    assert stats["objectsDeleted"] == 0 and stats["skipped"]
    assert wb.store.objects.has(stray)
    wb.close()
