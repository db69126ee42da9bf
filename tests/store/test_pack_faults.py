"""Writing a pack under every fault the seam models: fail the Nth operation, a device that stays
broken from N on, a full disk from N on, a crash at N (process death, and a power cut that loses
every unsynced write). After each: fsck is sound, every object is absent or reads back exactly, and
the next owner's open leaves neither a temp file nor a pack without an index. Each loop says how
many points it tried and fails when it faulted fewer than 80 % of them."""

from __future__ import annotations

import errno
import shutil

import pytest

from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.store.layout import Store
from turnback.store.objects.batch import PACK_AFTER

from .conftest import run_py

SOURCE = "".join(f"line {i} of a module that compresses\n" for i in range(300))
DATAS = [(SOURCE + f"# file {i}\n").encode() for i in range(PACK_AFTER + 20)]
# Three objects of 3 MiB: more than one 8 MiB block, so a block is compressed on the helper thread
BIGS = [b"".join(f"big {k}.{i}\n".encode() for i in range(300_000))[: 3 << 20] for k in range(3)]


def _write_all(store):
    with store.objects.batch():
        for d in DATAS + BIGS:
            store.objects.put(d)


def _check(path, completed):
    report = fsck(path)
    assert report.ok, report.errors
    store = Store.open(path, create=False)
    everything = DATAS + BIGS
    for data in everything:
        d = store.hasher.digest(data)
        if store.objects.has(d):
            assert store.objects.get(d) == data
        else:
            assert not completed
    if completed:
        (pack,) = store.objects.packs.packs.values()
        assert pack.doc.segment_count >= 2
    owner = Store.open(path)  # what the next owner's open does first
    owner.sweep_temp()
    left = [p.name for p in path.rglob("*") if fs.is_temp_name(p.name)]
    assert left == []
    assert fsck(path).ok and not [p for p in fsck(path).problems if "without an index" in p.what]


def _empty(path):
    shutil.rmtree(path / "objects")
    (path / "objects").mkdir(mode=0o700)


def _fault_loop(tmp_path, plan_for):
    from sessionkit import assert_faulted  # here: a child imports this module without tests/ on its path

    path = tmp_path / ".turnback"
    Store.open(path)
    points = faulted = 0
    for n in range(1, 400):
        _empty(path)
        store = Store.open(path)
        with faultplan.faults(**plan_for(n)) as plan:
            try:
                _write_all(store)
                completed = True
            except OSError:
                completed = False
        _check(path, completed)
        if completed and plan.faulted == 0:
            break
        points += 1
        faulted += plan.faulted > 0
    assert points >= 10, points
    assert_faulted(faulted, points, "pack writes failed at every operation")


def test_fail_every_operation_of_writing_a_pack(tmp_path):
    _fault_loop(tmp_path, lambda n: {"fail_at": n})


@pytest.mark.slow
def test_a_device_that_stays_broken_from_every_operation_on(tmp_path):
    _fault_loop(tmp_path, lambda n: {"fail_at": n, "sticky": True})


@pytest.mark.slow
def test_a_disk_that_fills_at_every_operation(tmp_path):
    _fault_loop(tmp_path, lambda n: {"disk_full_at": n, "errno": errno.ENOSPC})


CHILD = """
from turnback.store.layout import Store
from tests.store.test_pack_faults import _write_all
_write_all(Store.open(STORE))
print("finished")
"""


@pytest.mark.parametrize("model", ["process-death", "power-cut"])
def test_a_crash_at_every_operation_of_writing_a_pack(tmp_path, model):
    path = tmp_path / ".turnback"
    Store.open(path)
    env = {"TURNBACK_CRASH_MODEL": "lose-unsynced"} if model == "power-cut" else {}
    points = crashed = 0
    for n in range(1, 400):
        _empty(path)
        r = run_py(CHILD.replace("STORE", repr(str(path))), env={**env, "TURNBACK_CRASH_AT": str(n)})
        assert r.returncode in (0, faultplan.CRASH_EXIT), r.stderr
        _check(path, r.returncode == 0)
        if r.returncode == 0:
            break
        points += 1
        crashed += 1
    print(f"{points} crash points, {crashed} crashed")
    assert points >= 10 and crashed >= 0.8 * points
