"""Issue 11, defects 1, 2, 3, 7, 14 and 15: each test fails on the main the issue started from."""

from __future__ import annotations

import pytest
from txnkit import BOUNDARY, commit, crashed_mid_apply, intents, recovery_files, three_files

from sessionkit import Agent
from travelkit import tree
from turnback.errors import RecordError, TurnbackError
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.travel import disk, transaction


def fill_disk_after_first_file(monkeypatch):
    """The disk fills up right after the rewind wrote its first file (writes fail, unlinks work)."""
    real = disk.place
    calls = {"n": 0}

    def put(rel, tmp, final):  # one file put in place (the writes are batched: see travel/disk.py)
        calls["n"] += 1
        if calls["n"] == 2:
            faultplan.install(faultplan.FaultPlan(disk_full_at=1))
        return real(rel, tmp, final)

    monkeypatch.setattr(disk, "place", put)


# -- defect 1 -------------------------------------------------------------------------------------
def test_a_rollback_on_a_full_disk_keeps_its_intent_and_claims_no_record(agent, monkeypatch):
    a = agent()
    three_files(a)
    before = a.files()
    fill_disk_after_first_file(monkeypatch)
    try:
        out = commit(a)
        assert out.get("recovery", []) == []  # none could be written: none is claimed
        assert out["status"] == "rolled-back"
        assert "intent record stays" in out["message"]
        assert not recovery_files(a.root) and len(intents(a.root)) == 1
        with pytest.raises(TurnbackError) as refused:  # nothing else is written meanwhile
            a.begin("while the disk is full")
        assert refused.value.code == "recovery-pending"
    finally:
        faultplan.install(None)
    monkeypatch.undo()
    a.begin("the disk has room again")  # the retry settles the rollback first
    assert {k: v for k, v in a.files().items()} == before
    assert not intents(a.root)
    a.settle()
    a.reopen()
    assert a.files() == before and fsck(a.wb.store.path).ok


def test_recovery_that_cannot_write_its_record_keeps_the_intent(tmp_path, monkeypatch):
    work, before = crashed_mid_apply(tmp_path)
    real = transaction.recover

    def on_a_full_disk(book, ws):
        with faultplan.faults(disk_full_at=1):
            return real(book, ws)

    monkeypatch.setattr(transaction, "recover", on_a_full_disk)
    a = Agent(work)
    try:
        line = a.wb.info()["opened"]["recovered"][0]
        assert line["action"] == "rolled-back" and line["recoveryRecord"] is False
        assert len(intents(work)) == 1 and not recovery_files(work)
        monkeypatch.undo()
        a.turn("later", {"e.txt": "e"})  # the first write retries the rollback, now with room
        files = tree(a.root)
        assert files.pop("e.txt")[0] == b"e" and files == before
        assert not intents(work)
    finally:
        a.close()


# -- defect 2 -------------------------------------------------------------------------------------
def steps_until(job, kind: str):
    while True:
        step = next(job)
        if isinstance(step, tuple) and step[0] == kind:
            return step


def test_closing_a_commit_after_its_first_file_runs_it_to_its_end(agent):
    a = agent()
    three_files(a)
    events = []
    a.wb.events.subscribe(lambda name, p: events.append(name))
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    job = a.wb.rewind.commit_job({"boundary": BOUNDARY, "planHash": c["planHash"]})
    assert steps_until(job, "apply")[1] == 1
    job.close()  # $/cancelRequest, a client that went away, a server shutting down
    assert a.files() == {"a.txt": b"a1", "b.txt": b"b1", "c.txt": b"c1"}
    assert [t["prompt"] for t in a.log()["turns"]] == ["one"]
    assert "epoch" in events and not intents(a.root)
    a.reopen()
    assert [t["prompt"] for t in a.log()["turns"]] == ["one"]


def test_closing_a_commit_before_it_touched_a_file_changes_nothing(agent):
    a = agent()
    three_files(a)
    before, log = a.files(), a.log()
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    job = a.wb.rewind.commit_job({"boundary": BOUNDARY, "planHash": c["planHash"]})
    steps_until(job, "backup")
    job.close()
    assert a.files() == before and a.log()["turns"] == log["turns"] and not intents(a.root)


# -- defect 3 -------------------------------------------------------------------------------------
class IntentsCannotBeRemoved(faultplan.FaultPlan):
    refused = 0

    def tick(self, op, path, src=None):
        if op == "unlink" and "/txn/" in str(path):
            self.refused += 1
            raise faultplan.FaultInjected(5, "injected: intent removal fails", str(path))
        return super().tick(op, path, src) if src is not None else super().tick(op, path)


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_stale_intent_never_replays_over_later_work(agent, kind):
    a = agent(store_kind=kind)
    three_files(a)
    plan = IntentsCannotBeRemoved()
    faultplan.install(plan)
    try:
        assert commit(a)["status"] == "committed"
    finally:
        faultplan.install(None)
    assert plan.refused and len(intents(a.root)) == 1
    for n in range(3):  # later turns go on (and publish, several heads' worth)
        a.turn(f"later {n}", {"a.txt": f"later {n}", "b.txt": f"b later {n}"})
    expected = a.files()
    a.reopen()
    assert a.files() == expected
    assert a.wb.info()["opened"]["recovered"][0]["action"] == "superseded"
    assert not intents(a.root) and not recovery_files(a.root)


def test_recovery_never_overwrites_a_file_changed_since_the_crash(tmp_path):
    work, before = crashed_mid_apply(tmp_path)
    (work / "c.txt").write_text("the user's edit after the crash")
    a = Agent(work)
    try:
        line = a.wb.info()["opened"]["recovered"][0]
        assert line["action"] == "rolled-back" and "c.txt" in line["failed"]
        assert (work / "c.txt").read_text() == "the user's edit after the crash"
        rec = a.wb.recovery.list()["recovery"]
        assert len(rec) == 1 and [p.rsplit("/", 1)[-1] for p in rec[0]["paths"]] == ["c.txt"]
        files = tree(a.root)
        files.pop("c.txt")
        before.pop("c.txt")
        assert files == before  # everything else rolled back: bytes, modes, folders
    finally:
        a.close()


def test_resolve_retry_never_overwrites_a_file_changed_since(agent, monkeypatch):
    a = agent()
    three_files(a)
    real = disk.place
    seen = []

    def flaky(rel, tmp, final):  # a is written, b fails, a's rollback fails
        seen.append(rel)
        if rel == "b.txt" or (rel == "a.txt" and seen.count("a.txt") > 1):
            raise OSError(5, "disk gone", rel)
        return real(rel, tmp, final)

    monkeypatch.setattr(disk, "place", flaky)
    out = commit(a)
    monkeypatch.undo()
    assert out["status"] == "rolled-back" and len(out["recovery"]) == 1
    rid = out["recovery"][0]["id"]
    assert a.uri("a.txt") in out["recovery"][0]["paths"]  # a was written and could not be put back
    (a.root / "a.txt").write_text("edited before the retry")
    res = a.wb.recovery.resolve({"id": rid, "action": "retry"})
    assert res["status"] == "failed"
    assert (a.root / "a.txt").read_text() == "edited before the retry"
    assert len(res["recovery"]) == 1


# -- defect 7 -------------------------------------------------------------------------------------
def test_redo_after_a_rewind_over_an_uncaptured_edit_restores_that_edit(agent):
    a = agent(grace_heads=0, grace_seconds=0.0)
    three_files(a)
    (a.root / "a.txt").write_text("the user's uncaptured edit")
    before = a.files()
    assert commit(a)["status"] == "committed"
    a.wb.collection.run({})
    a.reopen()
    a.wb.collection.run({})
    group = next(g for g in a.wb.redo.list()["groups"] if g["turnCount"] == 2)
    p = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    assert a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": p["planHash"]})["status"] \
        == "committed"
    assert a.files() == before
    assert fsck(a.wb.store.path).ok


# -- defect 14 ------------------------------------------------------------------------------------
def test_folders_a_rolled_back_restore_created_are_removed(agent, monkeypatch):
    a = agent()
    a.turn("one", {"a.txt": "a1", "x/y/z.txt": "z1"})
    a.turn("two", {"a.txt": "a2", "x/y/z.txt": None})
    (a.root / "x" / "y").rmdir()
    (a.root / "x").rmdir()
    real = a.wb.book.commit_body

    def fail_the_commit(state, body, *, txn=None):
        # the new state's commit fails; the disk-as-it-was head (the user's rmdir) still saves
        if txn is not None and not txn.startswith(transaction.BEFORE_MARK):
            raise OSError(5, "the head cannot be written")
        return real(state, body, txn=txn)

    monkeypatch.setattr(a.wb.book, "commit_body", fail_the_commit)
    out = commit(a, {"kind": "beforePrompt", "turn": 2})
    assert out["status"] == "rolled-back"
    assert not (a.root / "x").exists()
    assert a.files() == {"a.txt": b"a2"}


# -- defect 15 ------------------------------------------------------------------------------------
def test_an_unreadable_head_leaves_the_intent_instead_of_rolling_back(agent, monkeypatch):
    a = agent()
    three_files(a)
    heads = a.wb.store.heads
    real = a.wb.book.commit_body

    def commit_then_fail(state, body, *, txn=None):
        seq = real(state, body, txn=txn)
        if txn is not None:  # durable, but the caller hears an error and cannot read the heads
            def unreadable(*_a, **_k):
                raise RecordError("injected: the head cannot be read")
            monkeypatch.setattr(heads, "current", unreadable)
            monkeypatch.setattr(heads, "read", unreadable)
            raise OSError(5, "the folder sync failed")
        return seq

    monkeypatch.setattr(a.wb.book, "commit_body", commit_then_fail)
    with pytest.raises(TurnbackError) as exc:
        commit(a)
    assert exc.value.code == "io-error"
    monkeypatch.undo()
    assert len(intents(a.root)) == 1
    assert a.files()["a.txt"] == b"a1"  # not rolled back: the commit may be (and is) durable
    a.reopen()
    assert a.wb.info()["opened"]["recovered"][0]["action"] == "finished"
    assert a.files() == {"a.txt": b"a1", "b.txt": b"b1", "c.txt": b"c1"}
    assert [t["prompt"] for t in a.log()["turns"]] == ["one"]
