"""Recovery as durable as the commit (issue 25, item 5): a rewind killed with its temp files in the
user's folders, then a power cut (the lost-unsynced model) at every operation of the recovery that
follows, then a reopen. Every removal recovery makes is durable before the intent naming it goes, so
no temp file ever comes back into the workspace with no intent left to remove it, and the tree
(bytes, modes, folders) is the old one, never a mix."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from sessionkit import REWIND_CHILD, Agent, assert_faulted, run_child
from travelkit import temp_files, tree
from txnkit import intents

from turnback.store.testing import faultplan
from turnback.store.fsck import fsck

LOGGING = REWIND_CHILD.replace(
    "wb = Workbench.open", "import json\nfrom turnback.store import fs\nfrom turnback.store.testing import faultplan\nplan = faultplan.FaultPlan()\n"
    "faultplan.install(plan)\nwb = Workbench.open") + "print(json.dumps(plan.log))\n"
OPEN = ("import sys\nfrom turnback.workbench import Workbench, Options\n"
        "Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2])).close()\n")


def _build(root):
    a = Agent(root)
    a.turn("one", {f"d{i % 3}/f{i}.txt": f"one {i}" for i in range(9)})
    a.turn("two", {f"d{i % 3}/f{i}.txt": f"two {i}" for i in range(9)})
    os.chmod(root / "d0" / "f0.txt", 0o755)  # a mode the rewind must put back too
    a.turn("three", {"d1/f1.txt": "three"})
    a.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the crash model needs /proc")
def test_a_power_cut_during_recovery_never_brings_a_temp_file_back(tmp_path, monkeypatch):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _build(pristine)
    before = tree(pristine)
    # Kill the rewind at its first rename into the workspace: every temp file of the batch is
    # written and durable, none is in place, the intent names them.
    proc = run_child(LOGGING, shutil.copytree(pristine, tmp_path / "count"), "heads")
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout.strip().splitlines()[-1])
    first_place = next(i for i, op in enumerate(log, 1) if op.startswith("rename ")
                       and "/.turnback/" not in op)
    crashed = shutil.copytree(pristine, tmp_path / "crashed")
    assert run_child(REWIND_CHILD, crashed, "heads", crash_at=first_place).returncode == \
        faultplan.CRASH_EXIT
    assert temp_files(crashed) and intents(crashed)
    counted = shutil.copytree(crashed, tmp_path / "counted")
    with faultplan.faults() as counter:
        Agent(counted).close()
    assert not temp_files(counted) and tree(counted) == before
    tried = cut = 0
    for n in range(1, counter.count + 1):  # recovery is short: every one of its operations
        work = shutil.copytree(crashed, tmp_path / f"cut{n}")
        with monkeypatch.context() as m:
            m.setenv("TURNBACK_CRASH_MODEL", "lose-unsynced")
            env_run = run_child(OPEN, work, "heads", crash_at=n)
        tried += 1
        cut += env_run.returncode == faultplan.CRASH_EXIT
        assert env_run.returncode in (0, faultplan.CRASH_EXIT), env_run.stderr
        assert run_child(OPEN, work, "heads").returncode == 0  # the next open, as after a reboot
        assert not temp_files(work), f"a power cut at operation {n} of recovery left a temp file"
        assert tree(work) == before, f"a power cut at operation {n} of recovery left a mix"
        assert not intents(work) and fsck(work / ".turnback").ok
        shutil.rmtree(work)
    assert_faulted(cut, tried, "power cut during recovery")
