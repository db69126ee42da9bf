"""A crash at every file-system operation of settle and publish loses no settled turn and no journaled
capture: each reopen shows the session as it was before the operation or after it, never a mix."""

from __future__ import annotations

import pytest
from sessionkit import Agent, crash_every_operation, normalised_log


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


def _log(kind):
    def snapshot(root):
        a = Agent(root, store_kind=kind)
        try:
            return normalised_log(a.log())
        finally:
            a.close()
    return snapshot


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_settle_and_publish(tmp_path, kind):
    root, _before = _pristine(tmp_path, kind)
    crash_every_operation(tmp_path, root, SETTLE, (kind,), _log(kind))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_crash_at_every_operation_of_a_capture(tmp_path, kind):
    root, _before = _pristine(tmp_path, kind)
    crash_every_operation(tmp_path, root, CAPTURE, (kind,), _log(kind))
