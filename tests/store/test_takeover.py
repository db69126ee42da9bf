"""Defect 10: a holder on another machine (or a hung one) is taken over only explicitly, after a
confirmation: `turnback/ownership/takeover` and `turnback takeover [--yes]`."""

import json

import pytest

from turnback.cli.main import main
from turnback.errors import NotOwner
from turnback.store import records
from turnback.store.ownership.pidlock import PidLock
from turnback.workbench import Options, Workbench


@pytest.fixture
def held_elsewhere(tmp_path):
    """A pid store whose lock was written by a process on another machine."""
    root = tmp_path / "ws"
    root.mkdir()
    wb = Workbench.open(root, Options(store_kind="pid"))
    wb.close()
    store = root / ".turnback"
    lock = PidLock.acquire(store)
    rec = records.read_record(lock.path, None)
    rec.update(host="elsewhere.example", machine="e" * 32, boot="b" * 32, pid=4242)
    records.write_record(lock.path, "pidlock", rec)
    return root, lock


def test_protocol_takeover_needs_confirmation_then_owns(held_elsewhere):
    root, old = held_elsewhere
    wb = Workbench.open(root, Options(store_kind="pid"))
    try:
        assert not wb.is_owner  # another machine's lock is never stale on its own
        asked = wb_takeover(wb, {})
        assert asked["status"] == "needs-confirmation"
        assert asked["owner"]["host"] == "elsewhere.example" and asked["owner"]["sameMachine"] is False
        assert not wb.is_owner
        statuses = []
        wb.events.subscribe(lambda name, payload: statuses.append(payload.get("ownership")))
        done = wb_takeover(wb, {"confirm": True})
        assert done["status"] == "taken" and wb.is_owner and "owner" in statuses
        assert done["previous"]["host"] == "elsewhere.example"
        with pytest.raises(NotOwner):
            old.check()  # the old holder is fenced out
        wb.run(wb.turns.begin_job({"prompt": "after the takeover"}))
        assert wb_takeover(wb, {"confirm": True})["status"] == "owner"
    finally:
        wb.close()


def wb_takeover(wb, params):
    from turnback.lsp.methods import METHODS

    spec = next(m for m in METHODS if m.name == "turnback/ownership/takeover")
    assert spec.kind == "mutate"
    return spec.call(wb, params)


def test_cli_takeover_asks_and_takes_with_yes(held_elsewhere, capsys):
    root, old = held_elsewhere
    args = ["--workspace", str(root), "--store-kind", "pid"]
    assert main([*args, "--json", "takeover"]) != 0
    refused = json.loads(capsys.readouterr().out)
    assert refused["status"] == "needs-confirmation"
    old.check()  # nothing changed without a yes
    assert main([*args, "--json", "takeover", "--yes"]) == 0
    taken = json.loads(capsys.readouterr().out)
    assert taken["status"] == "taken"
    with pytest.raises(NotOwner):
        old.check()
    assert main([*args, "takeover"]) == 0  # free now: nobody else holds it
    assert "nothing to take over" in capsys.readouterr().out
