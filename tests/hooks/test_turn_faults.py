"""Fail-at-N loops for the turn paths this round adds: a rewind settling an idle agent turn first (its
unfinished tool calls recorded as steps, the settle, the agent record), and a settled turn going on
(`turn/begin {continues}`). After each fault the store reopens sound, the turn is running or settled
(never a mix), and doing it again ends with every unfinished tool call recorded exactly once.
Each loop counts the points it faulted and fails when it faulted too few."""

from __future__ import annotations

import json
import random
import shutil

import pytest
from agentkit import Hooked, backdate, workspace
from sessionkit import assert_faulted

from turnback.errors import TurnbackError
from turnback.store.testing import faultplan
from turnback.agents.agentrecord import IDLE_SECONDS
from turnback.store.fsck import fsck
from turnback.workbench import Options, Workbench

SEED = 22
SAMPLE = 20
BOUNDARY = {"kind": "afterResponse", "turn": 1}


def sampled(count: int) -> list[int]:
    return sorted(random.Random(SEED).sample(range(1, count + 1), min(SAMPLE, count)))


def opened(root):
    return Workbench.open(root, Options(store_path=str(root / ".turnback")))


def agent_record(root) -> dict:
    return json.loads((root / ".turnback" / "agents" / "state.json").read_text())


@pytest.fixture
def idle_turn(tmp_path):
    """A workspace whose second turn its agent left with two tool calls unfinished, silent since."""
    root = workspace(tmp_path, {"a.txt": "zero\n"})
    a = Hooked(root)
    a.prompt("first")
    a.write("a.txt", "one\n")
    a.stop("First.")
    a.prompt("second")
    a.write("b.txt", "half\n")
    a.write("c.txt", "never\n", finish=False)
    a.bash("make", finish=False)
    backdate(root, "claude-code:s-1", IDLE_SECONDS + 5)
    return root


def fault_loop(tmp_path, root, action, check) -> None:
    """Fail `action(wb)` at each sampled operation, from the same starting store each time (the same
    path: the record names files by absolute path); then `check(wb, n)` on the reopened store, and
    fsck. Fails when it faulted fewer than 80 % of the points."""
    pristine = tmp_path / "pristine"
    shutil.copytree(root, pristine, symlinks=True)
    wb = opened(root)
    with faultplan.faults() as counter:
        action(wb)
    wb.close()
    points = sampled(counter.count)
    faulted = 0
    for n in points:
        shutil.rmtree(root)
        shutil.copytree(pristine, root, symlinks=True)
        wb = opened(root)
        with faultplan.faults(fail_at=n) as plan:
            try:
                action(wb)
            except (OSError, TurnbackError):
                pass
        faulted += plan.faulted
        try:
            wb.close()
        except (OSError, TurnbackError):
            pass
        wb = opened(root)
        try:
            check(wb, n)
        finally:
            wb.close()
        report = fsck(root / ".turnback")
        assert report.ok, (n, report.errors)
    assert_faulted(faulted, len(points), "a turn's action failed at each sampled operation")


def never_finished(wb) -> list[str]:
    return sorted(s.summary for s in wb.state.turns[1].steps if "never finished" in s.summary)


def test_fail_at_each_operation_of_settling_an_idle_turn_first(tmp_path, idle_turn):
    root = idle_turn

    def check(wb, n):
        assert wb.state.turns[1].state in ("running", "cancelled"), n
        assert len(never_finished(wb)) <= 2, n
        candidate = wb.rewind.prepare({"boundary": BOUNDARY})  # again, nothing failing
        assert wb.state.turns[1].state == "cancelled", n
        assert never_finished(wb) == [
            "Bash: make (began but never finished: denied, failed or interrupted)",
            "Write c.txt (began but never finished: denied, failed or interrupted)"], n
        assert candidate["keep"]["turnCount"] == 1
        assert agent_record(root)["sessions"]["claude-code:s-1"]["turn"] is None, n

    fault_loop(tmp_path, root, lambda wb: wb.rewind.prepare({"boundary": BOUNDARY}), check)


def test_fail_at_each_operation_of_a_settled_turn_going_on(tmp_path):
    root = workspace(tmp_path)
    a = Hooked(root)
    a.prompt("only")
    a.write("a.txt", "one\n")
    a.stop("Done.")

    def check(wb, n):
        assert [t.state for t in wb.state.turns] in (["settled"], ["running"]), n
        if wb.state.turns[0].state == "settled":
            wb.run(wb.turns.begin_job({"continues": 1}))
        assert [t.state for t in wb.state.turns] == ["running"], n
        assert wb.state.turns[0].steps[0].summary == "Write a.txt"

    fault_loop(tmp_path, root, lambda wb: wb.run(wb.turns.begin_job({"continues": 1})), check)
