"""A crash at every file-system operation of settle and publish loses no settled turn and no journaled
capture: each reopen shows the session as it was before the operation or after it, never a mix."""

from __future__ import annotations

import shutil

import pytest
from sessionkit import Agent, normalised_log, run_child

from turnback.store.fsck import fsck
from turnback.store.fsio import CRASH_EXIT

SETTLE = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
wb.run(wb.turns.settle_job({"turn": 2}))
wb.close()
"""

CAPTURE = """
import sys, pathlib
from turnback.workbench import Workbench, Options
root = pathlib.Path(sys.argv[1])
wb = Workbench.open(root, Options(store_kind=sys.argv[2]))
(root / "c.txt").write_text("written in turn 2")
wb.turns.capture({"uris": [(root / "c.txt").as_uri()]})
import os; os._exit(0)  # no close: the capture must be durable on its own
"""


def _pristine(tmp_path, kind):
    root = tmp_path / "pristine"
    root.mkdir()
    a = Agent(root, store_kind=kind)
    (a.root / "a.txt").write_text("v0")
    a.turn("one", {"a.txt": "v1", "b.txt": "new"})
    a.begin("two")
    a.write("a.txt", "v2")
    a.step(kind="file-write", scope="host", uris=["a.txt"])
    a.wb.turns.respond({"turn": 2, "text": "working on it"})
    a.wb.book.sync()
    before = normalised_log(a.log())
    a.close()  # publishes an unsettled head (or sidecar) for the running turn
    return root, before


def _expected_after(tmp_path, root, kind, code):
    done = tmp_path / "done"
    shutil.copytree(root, done, symlinks=True)
    proc = run_child(code, done, kind)
    assert proc.returncode == 0, proc.stderr
    a = Agent(done, store_kind=kind)
    after = normalised_log(a.log())
    a.close()
    return after


def _crash_loop(tmp_path, kind, code):
    root, before = _pristine(tmp_path, kind)
    after = _expected_after(tmp_path, root, kind, code)
    assert after != before
    seen = {"before": 0, "after": 0}
    n = 0
    while True:
        n += 1
        work = tmp_path / f"crash{n}"
        shutil.copytree(root, work, symlinks=True)
        proc = run_child(code, work, kind, crash_at=n)
        if proc.returncode == 0:
            break
        assert proc.returncode == CRASH_EXIT, proc.stderr
        a = Agent(work, store_kind=kind)
        got = normalised_log(a.log())
        a.close()
        assert got in (before, after), f"crash at operation {n} left a mix"
        seen["before" if got == before else "after"] += 1
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
        shutil.rmtree(work)
    assert n > 5 and seen["before"] and seen["after"]
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_settle_and_publish(tmp_path, kind):
    _crash_loop(tmp_path, kind, SETTLE)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_a_capture(tmp_path, kind):
    _crash_loop(tmp_path, kind, CAPTURE)
