"""A failure or crash at every file-system operation of a full collection loses no retained object,
leaves a sound store in which every retained head reads back whole, and the next run completes it."""

from __future__ import annotations

import shutil

import pytest

from sessionkit import assert_faulted
from turnback.store.testing import faultplan

from .conftest import (build_template, expire_lease, finish_and_compare, open_wb, reference_run,
                       run_py, snapshot)


@pytest.fixture
def template(fast_tmp):
    ws = build_template(fast_tmp)
    plan, stats, ref = reference_run(ws, fast_tmp)
    assert stats["headsRetired"] > 0 and stats["objectsDeleted"] > 0
    return ws, snapshot(ref / ".turnback"), plan.count, fast_tmp


def test_fail_at_every_operation(template):
    ws0, expected, total, scratch = template
    assert total >= 10
    faulted = 0
    for n in range(1, total + 1):
        ws = scratch / f"fail{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        wb = open_wb(ws)
        with faultplan.faults(fail_at=n) as plan:
            with pytest.raises(OSError):
                wb.collection.run()
        assert plan.count >= n
        faulted += plan.faulted > 0
        assert not wb.collecting and wb.collection.pending  # still to do after the failure
        wb.close()
        finish_and_compare(ws, expected)
        shutil.rmtree(ws)
    assert_faulted(faulted, total, "collection failed at every operation")


CRASH = """
import sys
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.workbench import Options, Workbench
wb = Workbench.open(sys.argv[1] if len(sys.argv) > 1 else {ws!r},
                    Options(grace_heads=0, grace_seconds=0.0, publish_interval=0.0))
faultplan.install(faultplan.FaultPlan(crash_at={n}))
wb.collection.run()
print("finished")
"""


@pytest.mark.slow
def test_crash_at_every_operation(template):
    ws0, expected, total, scratch = template
    crashed = 0
    for n in range(1, total + 2):
        ws = scratch / f"crash{n}"
        shutil.copytree(ws0, ws, symlinks=True)
        r = run_py(CRASH.format(ws=str(ws), n=n))
        if n <= total:
            assert r.returncode == faultplan.CRASH_EXIT, (n, r.stdout, r.stderr)
            crashed += 1
        else:
            assert r.returncode == 0 and "finished" in r.stdout, r.stderr
        expire_lease(ws / ".turnback")
        finish_and_compare(ws, expected)
        shutil.rmtree(ws)
    assert_faulted(crashed, total, "collection crashed at every operation")
