"""Without an owner the command line collects by itself once the store passes a threshold
(collect/auto.py, git's `gc.auto`): after a settle, the loose objects of the turns before go into a
pack, and the command's outcome is the same. Without it nothing was ever collected: requests after
200 command-line turns held 18.5 MiB, 5.2x git."""

from __future__ import annotations

import os

import pytest

from turnback.collect import auto
from turnback.store.testing import faultplan
from turnback.store.objects.packformat import DELTA
from turnback.store.fsck import fsck
from turnback.store.layout import Store

from cli_helpers import cli, ws  # noqa: F401  (fixtures)


def _turns(cli, ws, first: int, count: int) -> None:
    for n in range(first, first + count):
        cli.ok("turn", "begin", "--prompt", f"edit {n}")
        for k in range(3):
            (ws / f"src/m{k}.py").write_text(f"# version {n}\n" + f"value_{k} = {n}\n" * 40)
        cli.ok("turn", "settle")


def _packs(ws) -> list:
    store = Store.open(ws / ".turnback", kind=None, create=False)
    store.objects.packs.refresh(force=True)
    return list(store.objects.packs.packs.values())


@pytest.mark.parametrize("on", [False, True])
def test_a_settle_past_the_threshold_packs_the_loose_objects(cli, ws, monkeypatch, on):
    (ws / "src").mkdir()
    monkeypatch.setenv(auto.ENV, "0")  # off while the loose objects pile up
    _turns(cli, ws, 1, 12)
    before = auto.loose_estimate(ws / ".turnback")
    assert not _packs(ws) and sum(1 for _ in Store.open(ws / ".turnback", kind=None, create=False)
                                  .objects.list_loose()) >= 64
    monkeypatch.setenv(auto.ENV, "16" if on else "0")
    monkeypatch.setattr(auto, "BUDGET_SECONDS", 600.0)  # a loaded machine: the whole of it
    _turns(cli, ws, 13, 1)
    packs = _packs(ws)
    loose = sum(1 for _ in Store.open(ws / ".turnback", kind=None, create=False).objects.list_loose())
    if on:
        assert [p.made_at() for p in packs] == [3]  # the quick run's pack, at the put-time level
        assert loose < 20, (before, loose)
    else:
        assert not packs and loose >= 64
    assert fsck(ws / ".turnback").ok
    log = cli.json("log")
    assert len(log["turns"]) == 13


def test_a_failed_automatic_collection_leaves_the_command_done_and_the_store_sound(cli, ws,
                                                                                  monkeypatch):
    (ws / "src").mkdir()
    monkeypatch.setenv(auto.ENV, "0")
    _turns(cli, ws, 1, 12)
    monkeypatch.setenv(auto.ENV, "16")
    monkeypatch.setattr(auto, "BUDGET_SECONDS", 600.0)
    real, faulted = auto.run_bounded, []

    def failing(wb, budget=None):  # every file-system operation of the collection from its 3rd on
        with faultplan.faults(fail_at=3, sticky=True) as plan:
            try:
                return real(wb, budget)
            finally:
                faulted.append(plan.faulted)

    monkeypatch.setattr(auto, "run_bounded", failing)
    cli.ok("turn", "begin", "--prompt", "edit 13")
    (ws / "src/m0.py").write_text("# version 13\n")
    rc, _out, err = cli("turn", "settle")
    assert rc == 0 and faulted and faulted[0] > 0
    assert "automatic collection" in err and "did not run" in err, err
    assert fsck(ws / ".turnback").ok
    assert len(cli.json("log")["turns"]) == 13
    monkeypatch.setattr(auto, "run_bounded", real)  # the next command's run does the work
    _turns(cli, ws, 14, 1)
    assert [p.made_at() for p in _packs(ws)] == [3]
    assert fsck(ws / ".turnback").ok
    cli.ok("rewind", "--after-response", "13", "--yes")  # turn 14 goes: 13's file back, from the pack
    assert (ws / "src/m0.py").read_text() == "# version 13\n"


def _module(k: int, n: int) -> str:
    return "".join(f"def f{k}_{i}(x):\n    return x * {i} + {k}\n" for i in range(120)) + f"# {n}\n"


def test_turnback_gc_leaves_one_pack_where_each_version_is_a_delta(cli, ws, monkeypatch):
    (ws / "src").mkdir()
    monkeypatch.setenv(auto.ENV, "0")
    for n, count in ((0, 200), (1, 70), (2, 70)):  # a collection after each turn, as an owner's
        cli.ok("turn", "begin", "--prompt", f"turn {n}")
        for k in range(count):
            (ws / f"src/m{k}.py").write_text(_module(k, n))
        cli.ok("turn", "settle")
        for f in (ws / ".turnback/objects/pack").glob("*"):  # older than the gc (it leaves new ones)
            os.utime(f, (f.stat().st_mtime - 60,) * 2)
        cli.ok("gc")
    packs = _packs(ws)
    assert len(packs) == 1, packs  # geometric alone: the later turns' versions in packs apart
    deltas = sum(1 for i in range(packs[0].doc.count) if packs[0].doc.entry(i)[0].kind == DELTA)
    assert deltas >= 2 * 70, deltas
    assert fsck(ws / ".turnback").ok
    cli.ok("rewind", "--after-response", "2", "--yes")  # turn 2 wrote version 1
    assert (ws / "src/m5.py").read_text() == _module(5, 1)
