"""All or nothing: a rewind or redo that fails or crashes at any file-system operation leaves the files
and the session both old or both new, never a mix; a rollback that fails is a visible recovery record."""

from __future__ import annotations

import os
import shutil

import pytest
from sessionkit import REDO_CHILD as REDO
from sessionkit import REWIND_CHILD as REWIND
from sessionkit import Agent, assert_faulted, crash_every_operation, normalised_log
from travelkit import tree

from turnback.errors import TurnbackError
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.travel import disk



def build(root, kind, *, rewound=False):
    a = Agent(root, store_kind=kind)
    (a.root / "a.txt").write_text("a0")
    (a.root / "keep.txt").write_text("untouched")
    (a.root / "empty").mkdir()  # an empty folder turn two removes: the loops check folders too
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("a.txt", "a2")
    a.write("new/b.txt", "b2")
    os.chmod(a.root / "a.txt", 0o755)  # and permission bits
    os.rmdir(a.root / "empty")
    (a.root / "made" / "out").mkdir(parents=True)
    a.settle()
    a.turn("three", {"keep2.txt": "k3", "a.txt": None})
    if rewound:
        c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 2}})
        a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 2}, "planHash": c["planHash"]})
    a.close()


def snapshot(root, kind):
    a = Agent(root, store_kind=kind)
    try:
        return tree(a.root), normalised_log(a.log())
    finally:
        a.close()


def crash_loop(tmp_path, kind, code, *, rewound=False):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind, rewound=rewound)
    return crash_every_operation(tmp_path, pristine, code, (kind,), lambda root: snapshot(root, kind))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_a_rewind_commit(tmp_path, kind):
    crash_loop(tmp_path, kind, REWIND)


@pytest.mark.slow
def test_crash_at_every_operation_of_a_redo_commit(tmp_path):
    crash_loop(tmp_path, "heads", REDO, rewound=True)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_fail_every_operation_of_a_rewind_commit(tmp_path, kind):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    build(pristine, kind)
    before = snapshot(pristine, kind)
    n, statuses, faulted = 0, set(), 0
    after = None
    while True:
        n += 1
        work = tmp_path / f"fail{n}"
        shutil.copytree(pristine, work, symlinks=True)
        a = Agent(work, store_kind=kind)
        boundary = {"kind": "beforePrompt", "turn": 2}
        c = a.wb.rewind.prepare({"boundary": boundary})
        with faultplan.faults(fail_at=n) as plan:
            try:
                out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
                status = out["status"]
            except TurnbackError as exc:
                status = exc.code
        reached = plan.count < n
        faulted += plan.faulted > 0
        statuses.add(status)
        # Whatever happened, the live process and a reopen agree, and both are old or new.
        live = (tree(a.root), normalised_log(a.log()))
        a.close()
        got = snapshot(work, kind)
        assert got == live
        if reached:
            after = got
            assert status == "committed"
            break
        if status == "committed":
            assert got != before
        else:
            assert got == before, f"failure at operation {n} ({status}) changed something"
            assert not a.wb.recovery.records()
        assert fsck(work / ".turnback").ok
    assert after is not None and after != before
    assert_faulted(faulted, n - 1, f"rewind commit ({kind}) failed at every operation")
    assert {"rolled-back", "io-error"} <= statuses


def test_a_failed_rollback_becomes_a_visible_recovery_record(agent, monkeypatch):
    a = agent()
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1", "b.txt": "b1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})
    statuses = []
    a.wb.events.subscribe(lambda name, p: statuses.append(p) if name == "status" else None)
    real = disk.place
    calls = {"n": 0}

    def flaky(rel, tmp, final):  # one file put in place (forward, and in the rollback)
        calls["n"] += 1
        if calls["n"] >= 2:  # the second forward write fails, and so does every rollback write
            raise OSError(5, "disk gone", rel)
        return real(rel, tmp, final)

    monkeypatch.setattr(disk, "place", flaky)
    boundary = {"kind": "beforePrompt", "turn": 2}
    c = a.wb.rewind.prepare({"boundary": boundary})
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    monkeypatch.undo()
    assert out["status"] == "rolled-back" and "epoch" not in out
    assert len(out["recovery"]) == 1
    rec = a.wb.recovery.list()["recovery"][0]
    assert rec["operation"] == "rewind" and rec["paths"]
    assert a.wb.info()["recovery"] == 1 and statuses[-1]["recovery"] == 1
    assert a.log()["turns"][-1]["prompt"] == "two"  # the session did not change
    a.reopen()
    assert a.wb.info()["recovery"] == 1  # persisted until resolved
    res = a.wb.recovery.resolve({"id": rec["id"], "action": "retry"})
    assert res["status"] == "resolved" and res["recovery"] == []
    assert a.files()["a.txt"] == b"a2" and a.files()["b.txt"] == b"b2"


def test_a_corrupt_image_is_never_restored(agent):
    a = agent()
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2"})
    digest = a.wb.store.objects.hasher.digest(b"a1")
    path = a.wb.store.objects.path(digest)
    path.chmod(0o600)
    path.write_bytes(b"a9")  # same size, wrong bytes
    boundary = {"kind": "afterResponse", "turn": 1}
    c = a.wb.rewind.prepare({"boundary": boundary})
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert out["status"] == "rolled-back"
    assert a.files()["a.txt"] == b"a2"


def test_recovery_at_open_is_reported(tmp_path):
    pristine = tmp_path / "p"
    pristine.mkdir()
    build(pristine, "heads")
    from sessionkit import run_child

    for n in range(20, 200, 10):  # a crash somewhere inside the file writes leaves an intent
        work = tmp_path / f"w{n}"
        shutil.copytree(pristine, work, symlinks=True)
        if run_child(REWIND, work, "heads", crash_at=n).returncode == 0:
            break
        intents = [p for p in (work / ".turnback" / "txn").iterdir()
                   if p.name.endswith(".cbor") and not fs.is_temp_name(p.name)]
        if intents:  # (a crash inside the intent's own write leaves only a temp file: no intent)
            a = Agent(work)
            try:
                recovered = a.wb.info()["opened"]["recovered"]
            finally:
                a.close()
            assert recovered and recovered[0]["operation"] == "rewind"
            assert recovered[0]["action"] in ("finished", "rolled-back")
            return
    raise AssertionError("no crash point left an intent record to recover")


def test_temp_files_a_crash_left_in_the_store_are_removed_at_open(agent):
    a = agent()
    a.turn("one", {"a.txt": "1"})
    store = a.wb.store.path
    a.close()
    litter = [store / "txn" / f".x.cbor{fs.TEMP_MARK}abc", store / "heads" / f".h{fs.TEMP_MARK}def"]
    for p in litter:
        p.write_bytes(b"half written")
    a.reopen()
    assert a.wb.info()["opened"]["tempFilesRemoved"] == 2
    assert not any(p.exists() for p in litter)


def test_recovery_never_cleans_temp_files_through_a_linked_folder(agent, tmp_path):
    import os

    from turnback.travel.transaction import clean_temps

    a = agent()
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / f".x.txt{fs.TEMP_MARK}abc"
    victim.write_text("not ours")
    os.symlink(outside, a.root / "lib")
    (a.root / "src").mkdir()
    ours = a.root / "src" / f".x.txt{fs.TEMP_MARK}abc"
    ours.write_text("ours")
    clean_temps(a.wb.ws, [{"rel": "lib/x.txt"}, {"rel": "src/x.txt"}])
    assert victim.exists() and not ours.exists()
