"""A fork's confirm job closed at every one of its yields (issue 25, item 2), as a cancelled request,
a client gone or a shutdown close it: before its first file nothing is changed and nothing is left
busy; from its first file on it runs to its outcome and says so exactly as an uncancelled fork does
(the epoch naming the branch, a status, its records complete). In place and into a worktree."""

from __future__ import annotations

import shutil

import pytest
from forkkit import three_turns
from sessionkit import Agent, normalised_log
from travelkit import tree

from turnback.store import lineage
from turnback.store.fsck import fsck
from turnback.timeline.book import Book


@pytest.fixture
def slow_syncs(monkeypatch):
    """Every journal sync of a job waits at least one slice, as on a disk whose fsync takes longer
    than a slice (CI's): the new worktree's sweep then yields inside its sync, a binding wait of
    the sweep's own, which must not bind the fork before its first file."""
    plain = Book.iter_sync

    def iter_sync(self):
        yield None
        yield from plain(self)

    monkeypatch.setattr(Book, "iter_sync", iter_sync)


def _closed_at(a, n: int, extra: dict):
    """Advance a fork confirm job n yields and close it; returns (the events it sent, whether the
    job was past its first file when it was closed)."""
    events = []
    a.wb.events.subscribe(lambda name, payload: events.append((name, payload)))
    report = a.wb.fork.prepare({"turn": 1})
    job = a.wb.fork.confirm_job({"turn": 1, "hash": report["hash"], **extra})
    binding = False
    for _ in range(n):
        try:
            value = next(job)
        except StopIteration:
            return None, None
        binding = binding or bool(getattr(value, "binding", False))
    job.close()
    return events, binding


@pytest.mark.parametrize("where", ["in-place", "worktree"])
def test_closing_a_fork_at_every_yield(tmp_path, where, slow_syncs):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    a = Agent(pristine)
    three_turns(a)
    a.close()
    before = tree(pristine)
    done = Agent(shutil.copytree(pristine, tmp_path / "done"))
    report = done.wb.fork.prepare({"turn": 1})
    assert done.wb.fork.confirm({"turn": 1, "hash": report["hash"]})["status"] == "forked"
    after = tree(done.root)
    done.close()
    n, closed_before, closed_after = 0, 0, 0
    while True:
        n += 1
        work = shutil.copytree(pristine, tmp_path / f"w{n}")
        target = tmp_path / f"wt{n}"
        extra = {"worktree": str(target)} if where == "worktree" else {}
        a = Agent(work)
        events, binding = _closed_at(a, n, extra)
        if events is None:
            a.close()
            break
        names = [name for name, _p in events]
        forks = lineage.forks(a.wb.store)
        busy = [r for r in forks if r["phase"] == "begun"]
        assert not busy, f"closed at yield {n}: a fork record is left busy"
        again = a.wb.fork.prepare({"turn": 1})
        assert "refusal" not in again, (n, again.get("refusal"))
        if where == "worktree":
            # The workspace and the parent are never touched. Closed after its first file, the
            # worktree fork is complete and listed; before it, a folder it made is reported
            # (abandoned), never deleted.
            assert tree(work) == before and not a.wb.state.frozen
            listed = [s for s in a.wb.sessions.list()["sessions"] if s["worktree"]]
            if binding:
                closed_after += 1
                assert [r["phase"] for r in forks] == ["complete"] and len(listed) == 1, n
                assert tree(target) == after and "status" in names
            else:
                closed_before += 1
                assert all(r["phase"] == "abandoned" for r in forks) and not listed, n
        elif binding:
            closed_after += 1
            branch = a.wb.state.session_id
            epochs = [p for name, p in events if name == "epoch"]
            assert [e["sessionId"] for e in epochs] == [branch] and "status" in names, (n, names)
            assert [r["phase"] for r in forks] == ["complete"]
            assert tree(work) == after
        else:
            closed_before += 1
            assert "epoch" not in names and tree(work) == before and not forks, n
        live = (tree(work), normalised_log(a.log()))
        a.close()
        b = Agent(work)
        assert (tree(work), normalised_log(b.log())) == live, f"closed at yield {n}: a reopen differs"
        b.close()
        assert fsck(work / ".turnback").ok
        shutil.rmtree(work)
    print(f"fork ({where}): closed at {n - 1} yields, {closed_before} before its first file, "
          f"{closed_after} after it")
    assert closed_before > 1 and closed_after > 1
