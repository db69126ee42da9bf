"""A format-2 store (loose objects only) opened by this turnback: FORMAT says 3, and the first
collection packs its small objects, versions as deltas. A crash at every operation of that open and
that collection (process death and a power cut) leaves a store that opens, passes fsck, and reads
back every head whole; the run that finishes leaves format 3 and a pack."""

from __future__ import annotations

import shutil

import pytest
from sessionkit import assert_faulted

from turnback.store.testing import faultplan
from turnback.store.layout import FORMAT_VERSION, Store
from turnback.store.records import read_record

from tests.collect.conftest import assert_sound, expire_lease, fast_tmp, open_wb, run_py, turn  # noqa: F401
from tests.collect.test_repack import age, edits

CHILD = """
from turnback.collect import repackplan
from turnback.workbench import Options, Workbench
repackplan.MIN_LOOSE = 16
wb = Workbench.open({ws!r}, Options(grace_heads=0, grace_seconds=0.0, publish_interval=0.0))
wb.collection.run()
wb.close()
print("finished")
"""


@pytest.fixture
def old_store(fast_tmp, monkeypatch):
    ws = fast_tmp / "old"
    ws.mkdir()
    monkeypatch.setattr("turnback.store.layout.FORMAT_VERSION", 2)  # an older turnback at work
    wb = open_wb(ws)
    assert wb.store.version == 2 and not wb.store.objects.pack
    for t in range(3):
        turn(wb, ws, f"t{t}", edits("turn", t, files=4))
    wb.close()
    monkeypatch.undo()
    age(ws / ".turnback")
    assert not (ws / ".turnback" / "objects" / "pack").exists()
    return ws, fast_tmp


def _format(ws) -> int:
    return read_record(ws / ".turnback" / "FORMAT", "format")["format"]


def test_a_crash_at_every_operation_of_the_upgrade_and_its_first_repack(old_store):
    ws0, scratch = old_store
    counted = scratch / "counted"
    shutil.copytree(ws0, counted, symlinks=True)
    probe = run_py("""
from turnback.store import fs
from turnback.store.testing import faultplan
plan = fs.install_from_env()
""" + CHILD.format(ws=str(counted)) + """
import sys
sys.stderr.write("\\n".join(plan.log))
""", env={"TURNBACK_FAIL_AT": "1000000"})  # a plan that only counts
    assert probe.returncode == 0 and "finished" in probe.stdout, probe.stderr
    log = probe.stderr.splitlines()
    assert _format(counted) == FORMAT_VERSION and (counted / ".turnback" / "objects" / "pack").is_dir()
    own = {n for n, line in enumerate(log, 1) if "FORMAT" in line or "/objects/pack" in line}
    chosen = sorted({n for n in own | {m + 1 for m in own} if n <= len(log)}
                    | set(range(1, len(log) + 1, 10)))
    for lose in (False, True):
        points = crashed = 0
        for n in chosen:
            ws = scratch / f"crash{int(lose)}-{n}"
            shutil.copytree(ws0, ws, symlinks=True)
            env = {"TURNBACK_CRASH_AT": str(n),
                   **({"TURNBACK_CRASH_MODEL": "lose-unsynced"} if lose else {})}
            r = run_py(CHILD.format(ws=str(ws)), env=env)
            assert r.returncode in (0, faultplan.CRASH_EXIT), (n, r.stderr)
            points += 1
            crashed += r.returncode == faultplan.CRASH_EXIT
            assert _format(ws) in (2, FORMAT_VERSION), n  # old or new, never a damaged FORMAT
            expire_lease(ws / ".turnback")
            assert_sound(ws / ".turnback")  # opens, fsck sound, every head reads back whole
            wb = open_wb(ws)  # and the next owner finishes the job
            wb.collection.run()
            wb.close()
            assert _format(ws) == FORMAT_VERSION
            assert_sound(ws / ".turnback")
            shutil.rmtree(ws)
        assert points >= 12, points
        assert_faulted(crashed, points, f"the upgrade and its first repack ({'power cut' if lose else 'process death'})")
    assert any("FORMAT" in line for line in log)
    store = Store.open(counted / ".turnback", create=False)
    assert list(store.objects.packs.digests()) and store.version == FORMAT_VERSION
