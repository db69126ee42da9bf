"""A crash at every file-system operation of a session that has not published yet: open a fresh store,
begin a turn, capture, step, respond, and die without publishing. After each crash the reopened
session (owner and observer alike) is the state after some prefix of the journaled operations, never
a mix, in the same session the crashed journal names; fsck finds the store sound before and after.

Both crash models: a killed process (written bytes survive) and a power cut (unsynced writes lost,
store/testing/crashfs.py). At the time of writing one run has 52 fs operations, so each model tries 52 crash
points (the test asserts at least 30, so a change that stops the run early cannot pass silently); a
failure (EIO) at each of the same 52 operations too. And `session/start` over such a session, crashed
at each of its ~95 operations: the old session live with its journal, or the new one with the old one
parked."""

from __future__ import annotations

import json

import pytest
from sessionkit import assert_faulted, pristine_copy, run_child

from turnback.store import journal as journal_mod
import turnback.collect  # noqa: F401  (fsck with the deep check, as `turnback fsck` runs it)
from turnback.store.fsck import fsck
from turnback.store.testing.faultplan import CRASH_EXIT
from turnback.store.layout import Store
from turnback.workbench import Options, Workbench

# One snapshot of a session, the same in the child and in the test: what a reopen must reproduce.
SNAPSHOT = '''
def snapshot(wb):
    s = wb.state
    turns = [{"n": t.n, "prompt": t.prompt, "response": t.response, "state": t.state,
              "files": {r: [e.before, e.after, e.captures] for r, e in t.files.items()},
              "steps": [[x.id, x.kind, x.scope] for x in t.steps],
              "gaps": sorted([g.rel, g.reason] for g in t.gaps)} for t in s.turns]
    return {"lastOp": s.last_op, "turns": turns, "known": sorted(s.known.items()),
            "between": {str(k): sorted(v) for k, v in s.between.items()},
            "liveGaps": sorted(list(k) for k in s.live_gaps)}
'''

WORK = SNAPSHOT + '''
import json, os, sys, pathlib
from turnback.timeline.book import Book
from turnback.workbench import Workbench, Options
root, kind, reference = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "reference"
wb = Workbench.open(root, Options(store_kind=kind))
if reference:  # print the state after every journaled operation
    record = Book.record
    def printing(self, op, **kw):
        out = record(self, op, **kw)
        print(json.dumps(snapshot(wb)), flush=True)
        return out
    Book.record = printing
    print(json.dumps(snapshot(wb)), flush=True)
try:
    n = wb.run(wb.turns.begin_job({"prompt": "make b"}))["turn"]
    for text in ("b one", "b two"):
        wb.turns.capture({"uris": [(root / "b.txt").as_uri()], "phase": "before"})
        (root / "b.txt").write_text(text)
        wb.turns.capture({"uris": [(root / "b.txt").as_uri()], "phase": "after"})
    wb.turns.step({"turn": n, "kind": "file-write", "scope": "host", "uris": ["b.txt"]})
    wb.turns.respond({"turn": n, "text": "made b", "final": True})
except OSError:  # an injected failure: say what this process holds, then die unpublished
    print(json.dumps(snapshot(wb)), flush=True)
    os._exit(1)
from turnback.store import fs
from turnback.store.testing import faultplan
if faultplan.current() is not None:
    print("faulted", faultplan.current().faulted, file=sys.stderr, flush=True)
    print("operations", faultplan.current().count, file=sys.stderr, flush=True)
os._exit(0)  # killed before any publication: the journal is all there is
'''

_namespace: dict = {}
exec(SNAPSHOT, _namespace)


def snapshot(wb):
    return json.loads(json.dumps(_namespace["snapshot"](wb)))  # as the child prints it


def _pristine(tmp_path, kind):
    root = tmp_path / "pristine"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    Store.open(root / ".turnback", kind=kind)  # the store's seed is shared by every copy
    return root


def _reopened(work, kind):
    """The session as an observer and then the owner see it; both must agree."""
    left_a_journal = any((work / ".turnback" / "journal").glob("*.wal"))
    observer = Workbench.open(work, Options(store_kind=kind), take_ownership=False)
    try:
        seen = (observer.state.session_id, snapshot(observer))
    finally:
        observer.close()
    owner = Workbench.open(work, Options(store_kind=kind))
    try:
        got = (owner.state.session_id, snapshot(owner))
    finally:
        owner.close()  # publishes what it adopted
    assert got[1] == seen[1]
    if left_a_journal:  # else each of them started its own new session
        assert got[0] == seen[0]
    return got


def _journaled_session(work) -> str | None:
    names = [p.name for p in (work / ".turnback" / "journal").glob("*.wal")]
    assert len(names) <= 1, names  # an open never starts a second unpublished session
    if not names:
        return None
    frames = journal_mod.scan(work / ".turnback" / "journal" / names[0]).frames
    return names[0][:-4] if frames else None


@pytest.mark.slow
@pytest.mark.parametrize("model", ["kill", "lose-unsynced"])
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_crash_at_every_operation_before_the_first_publication(tmp_path, monkeypatch, kind, model):
    pristine = _pristine(tmp_path, kind)
    proc = run_child(WORK, pristine_copy(tmp_path, pristine, "reference"), kind, "reference")
    assert proc.returncode == 0, proc.stderr
    prefixes = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(prefixes) >= 7 and prefixes[-1]["turns"][0]["response"] == "made b"
    if model == "lose-unsynced":
        monkeypatch.setenv("TURNBACK_CRASH_MODEL", "lose-unsynced")
    reached, n = [], 0
    while True:
        n += 1
        work = pristine_copy(tmp_path, pristine, f"crash{n}")
        proc = run_child(WORK, work, kind, "crash", crash_at=n)
        if proc.returncode == 0:  # ran to the end: the whole journal is the reopened state
            assert _reopened(work, kind)[1] == prefixes[-1]
            break
        assert proc.returncode == CRASH_EXIT, proc.stderr
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
        journaled = _journaled_session(work)
        session, got = _reopened(work, kind)
        assert got in prefixes, f"a crash at operation {n} left a state no prefix of the journal had"
        if journaled is not None:
            assert session == journaled, f"a crash at operation {n} lost the journaled session"
        reached.append(prefixes.index(got))
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
    print(f"{kind}/{model}: {n - 1} crash points, prefixes reached {sorted(set(reached))}")
    assert_faulted(len(reached), n - 1, f"unpublished session ({kind}, {model}) crashed at every operation")
    assert n > 30, n
    assert reached == sorted(reached), reached  # a later crash never keeps less
    # A killed process keeps every written frame; a power cut before the final fsync loses the last.
    last = len(prefixes) - (1 if model == "kill" else 2)
    assert reached[0] == 0 and reached[-1] == last, reached


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_failure_at_every_operation_before_the_first_publication(tmp_path, kind):
    """Fail the Nth operation (EIO) for every N; the process dies unpublished at the error. The
    reopened state is the one the process held, or that plus the one operation whose journal frame
    was written before its fsync failed (journaled, so kept); never anything else."""
    pristine = _pristine(tmp_path, kind)
    proc = run_child(WORK, pristine_copy(tmp_path, pristine, "reference"), kind, "reference",
                     fail_at=10**9)  # a plan that never fails, to count the operations
    prefixes = [json.loads(line) for line in proc.stdout.splitlines()]
    total = int(proc.stderr.split("operations")[-1])
    assert total > 30, total
    stopped, faulted = 0, 0
    for n in range(1, total + 1):
        work = pristine_copy(tmp_path, pristine, f"fail{n}")
        proc = run_child(WORK, work, kind, "fail", fail_at=n)
        faulted += proc.returncode == 1 or "faulted 1" in proc.stderr
        if proc.returncode == 0:  # a failure the workbench absorbed (a gap, a retry): carried on
            continue
        assert proc.returncode == 1, proc.stderr
        held = json.loads(proc.stdout.splitlines()[-1]) if proc.stdout else prefixes[0]
        got = _reopened(work, kind)[1]
        assert got == held or (held in prefixes and got == prefixes[prefixes.index(held) + 1]), n
        assert fsck(work / ".turnback").ok, n
        stopped += 1
    print(f"{kind}: {total} failure points, {stopped} of them stopped the session")
    assert_faulted(faulted, total, f"unpublished session ({kind}) failed at every operation")
    assert stopped > 10, stopped


LOOSE = """
import os, sys, pathlib
from turnback.workbench import Workbench, Options
root = pathlib.Path(sys.argv[1])
wb = Workbench.open(root, Options(store_kind=sys.argv[2]))
(root / "c.txt").write_text("the user's own edit")
wb.turns.capture({"uris": [(root / "c.txt").as_uri()]})
os._exit(0)
"""

START = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
wb.sessions.start()
import os; os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_crash_at_every_operation_of_starting_a_session_over_an_unpublished_one(tmp_path, kind):
    """`session/start` on a store whose session was never published: it parks that session (its
    record names a body) and publishes the new one. A crash anywhere leaves the old session live
    with its journaled capture (a parked record the crash left is tidied away), or the new one live
    with the old one parked, capture and all."""
    from sessionkit import crash_every_operation

    pristine = _pristine(tmp_path, kind)
    proc = run_child(LOOSE, pristine, kind)  # a session killed before it published
    assert proc.returncode == 0, proc.stderr
    first = _journaled_session(pristine)
    assert first is not None

    def sessions(root):
        wb = Workbench.open(root, Options(store_kind=kind))
        try:
            def name(sid):
                return "first" if sid == first else "other"

            def loose(state):
                return sorted(rel for bucket in state.between.values() for rel in bucket)
            parked = {name(r["sessionId"]): loose(wb.sessions.read(r["sessionId"]))
                      for r in wb.sessions.records().values()}
            return {"live": name(wb.state.session_id), "liveLoose": loose(wb.state),
                    "parked": parked}
        finally:
            wb.close()

    assert sessions(pristine_copy(tmp_path, pristine, "look")) == \
        {"live": "first", "liveLoose": ["c.txt"], "parked": {}}  # the old state is the journal's
    outcomes = crash_every_operation(tmp_path, pristine, START, (kind,), sessions)
    print(f"{kind}: session/start, {sum(outcomes.values())} crash points: {outcomes}")
    assert sum(outcomes.values()) > 10, outcomes
