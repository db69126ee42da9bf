"""A session killed before its first publication keeps its journal: the next open adopts it.

Until a store has a published state (no head yet, no sidecar record), the only record of the live
session is its journal. Opening such a store must continue that session (same id, same turns, same
captures and steps), for the owner and for an observer alike, and a collection must not take the
objects only that journal references."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from sessionkit import Agent, run_child

import turnback.collect  # noqa: F401  (fsck with the deep check, as `turnback fsck` runs it)
from turnback.store.fsck import fsck
from turnback.store.layout import Store
from turnback.workbench import Options, Workbench

# A session recorded into its journal and killed (SIGKILL) before anything published it.
KILLED = """
import json, os, signal, sys, pathlib
from turnback.workbench import Workbench, Options
root = pathlib.Path(sys.argv[1])
wb = Workbench.open(root, Options(store_kind=sys.argv[2]))
{prelude}
n = wb.run(wb.turns.begin_job({{"prompt": "make b"}}))["turn"]
wb.turns.capture({{"uris": [(root / "b.txt").as_uri()], "phase": "before"}})
(root / "b.txt").write_text("made in the killed turn")
wb.turns.capture({{"uris": [(root / "b.txt").as_uri()], "phase": "after"}})
wb.turns.step({{"turn": n, "kind": "file-write", "scope": "host", "uris": ["b.txt"]}})
wb.turns.respond({{"turn": n, "text": "done b"}})
wb.book.sync()
heads = sorted(os.listdir(wb.store.path / "heads")) if wb.store.kind == "heads" else []
print(json.dumps({{"session": wb.state.session_id, "heads": heads,
                  "images": [e.after for e in wb.state.running.files.values()]}}), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""

# `session/start` after a first publication: the new session's work is journaled, then killed.
STARTED = "wb.turns.capture({\"uris\": [(root / \"a.txt\").as_uri()]}); wb.book.publish(); " \
          "wb.sessions.start()"


def _killed(root, kind, prelude=""):
    proc = run_child(KILLED.format(prelude=prelude), root, kind)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return json.loads(proc.stdout)


def _workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    return root


def _assert_continued(wb, killed):
    state = wb.state
    assert state.session_id == killed["session"]
    assert [t.prompt for t in state.turns] == ["make b"]
    turn = state.turns[0]
    assert turn.state == "running"
    assert turn.response == "done b"
    assert list(turn.files) == ["b.txt"] and turn.files["b.txt"].after is not None
    assert [(s.kind, s.scope) for s in turn.steps] == [("file-write", "host")]


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_session_killed_before_its_first_publication_is_continued(tmp_path, kind):
    root = _workspace(tmp_path)
    killed = _killed(root, kind)
    assert killed["heads"] == []  # nothing was published: the journal is the only record
    assert fsck(root / ".turnback").ok

    observer = Workbench.open(root, Options(store_kind=kind), take_ownership=False)
    try:
        assert not observer.is_owner
        _assert_continued(observer, killed)  # an observer reads the same journal
    finally:
        observer.close()

    a = Agent(root, store_kind=kind)
    _assert_continued(a.wb, killed)
    assert a.wb.open_report["replayed"] > 0
    a.wb.turns.respond({"turn": 1, "text": ", and more"})
    a.settle()
    a.reopen()
    assert a.wb.state.session_id == killed["session"]
    assert a.wb.state.turns[0].response == "done b, and more"
    assert a.wb.state.turns[0].state == "settled"
    a.close()
    assert fsck(root / ".turnback").ok


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_session_started_after_a_publication_and_killed_is_continued(tmp_path, kind):
    """workbench/sessions.py: `session/start` publishes the new session before its first operation,
    so its journal is the published session's journal from the start."""
    root = _workspace(tmp_path)
    killed = _killed(root, kind, prelude=STARTED)
    a = Agent(root, store_kind=kind)
    try:
        _assert_continued(a.wb, killed)
        assert len(a.wb.sessions.list()["sessions"]) == 2  # the parked first session is kept
    finally:
        a.close()


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_collection_before_and_after_the_first_publication_keeps_the_journals_objects(tmp_path,
                                                                                       kind):
    """Until the first publication the adopted journal is the only root of its images. A collection
    then deletes nothing (it says why), `turnback gc` neither, fsck calls nothing garbage; once the
    adopted session is published its images are the head's, and a collection that does sweep keeps
    them."""
    root = _workspace(tmp_path)
    killed = _killed(root, kind)
    images = killed["images"]
    assert images and all(isinstance(d, str) for d in images)
    assert fsck(root / ".turnback").ok

    a = Agent(root, store_kind=kind)
    try:
        loose = a.wb.store.objects.put(b"referenced by nothing")
        old = time.time() - 3600  # not a new object, which any collection keeps for a moment
        os.utime(a.wb.store.objects.path(loose), (old, old))
        stats = a.wb.run(a.wb.collection.job(grace_seconds=0.0))
        assert stats["skipped"] and a.wb.store.objects.has(loose)  # nothing deleted unpublished
        assert all(a.wb.store.objects.has(d) for d in images)
        _assert_continued(a.wb, killed)
    finally:
        a.wb.book.journal.close()  # killed again, still unpublished
        a.wb.book.owner.release()
    from turnback.cli.main import main

    assert main(["--workspace", str(root), "gc"]) == 0  # collects unpublished, then publishes
    assert fsck(root / ".turnback").ok
    a = Agent(root, store_kind=kind)
    try:
        _assert_continued(a.wb, killed)
        stats = a.wb.run(a.wb.collection.job(grace_seconds=0.0, now=time.time() + 60))
        assert not stats["skipped"] and not a.wb.store.objects.has(loose)  # this one did sweep
        assert all(a.wb.store.objects.has(d) for d in images)
        assert a.wb.state.running.files["b.txt"].after == images[0]
    finally:
        a.close()
    assert fsck(root / ".turnback").ok


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_an_observer_follows_an_owner_that_has_not_published_yet(tmp_path, kind):
    root = _workspace(tmp_path)
    Store.open(root / ".turnback", kind=kind)  # a store with nothing in it yet
    early = Workbench.open(root, Options(store_kind=kind), take_ownership=False)  # before the owner
    a = Agent(root, store_kind=kind)
    late = Workbench.open(root, Options(store_kind=kind), take_ownership=False)
    try:
        a.begin("first")
        a.write("b.txt", "b1")
        a.wb.book.sync()
        for observer in (early, late):
            observer.follow()
            assert observer.state.session_id == a.wb.state.session_id
            assert [t.prompt for t in observer.state.turns] == ["first"]
            assert list(observer.state.turns[0].files) == ["b.txt"]
    finally:
        early.close()
        late.close()
        a.close()


def test_the_journal_says_which_session_it_is_and_the_last_written_one_is_continued(tmp_path):
    """A fresh session's journal starts with its identity (sequence 0, skipped by replay). Journals
    left by older versions, which started a new session on such an open, have none: the one whose
    frames were stamped last is continued, and the others are left as they are; so is one that does
    not start at its session's beginning (it cannot be replayed onto nothing)."""
    from turnback.store import journal as journal_mod

    root = _workspace(tmp_path)
    a = Agent(root, store_kind="heads")
    sid, created, fork_point = a.wb.state.session_id, a.wb.state.created, a.wb.state.fork_point
    first = journal_mod.scan(a.wb.store.journal_path(sid)).frames[0]
    assert first == {"op": "session", "seq": 0, "sessionId": sid, "created": created,
                     "forkPoint": fork_point, "config": {"storeKind": "heads"}}
    a.wb.book.journal.close()  # killed: nothing published, nothing closed
    a.wb.book.owner.release()
    again = Workbench.open(root, Options())
    assert (again.state.session_id, again.state.created, again.state.fork_point) == \
        (sid, created, fork_point)
    again.book.journal.close()
    again.book.owner.release()

    store = Store.open(root / ".turnback", kind=None, create=False)
    older, newer, published = "a" * 32, "b" * 32, "c" * 32
    with journal_mod.Journal.open(store.journal_path(published))[0] as j:  # its state is gone
        j.append({"op": "respond", "seq": 7, "turn": 3, "text": "x", "ts": 6e9})
        j.sync()
    kept = store.objects.put(b"an instruction file only the older journal names")
    for name, ts in ((older, 4e9), (newer, 5e9)):  # no identity frame, as older versions wrote
        with journal_mod.Journal.open(store.journal_path(name))[0] as j:
            j.append({"op": "begin", "seq": 1, "n": 1, "kind": "chat", "prompt": name[:1], "ts": ts,
                      "instructions": {"CLAUDE.md": kept} if name == older else {}})
            j.sync()
    observer = Workbench.open(root, Options(), take_ownership=False)
    seen = (observer.state.session_id, observer.state.created, observer.state.fork_point)
    observer.close()
    reopened = Workbench.open(root, Options())
    try:
        assert reopened.state.session_id == newer
        # without an identity frame, what the journal says still gives every reader the same session
        assert (newer, 5e9) == seen[:2]
        assert (reopened.state.session_id, reopened.state.created, reopened.state.fork_point) == seen
        assert [t.prompt for t in reopened.state.turns] == ["b"]
        reopened.book.publish()
        stats = reopened.run(reopened.collection.job(grace_seconds=0.0, now=time.time() + 60))
        assert not stats["skipped"]
        # the journals not continued are left whole, and what they name stays
        assert all(store.journal_path(x).exists() for x in (older, published, sid))
        assert store.objects.has(kept)
    finally:
        reopened.close()
    assert fsck(root / ".turnback").ok
