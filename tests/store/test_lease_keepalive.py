"""A command-line job keeps its lease through one step longer than the lease (issue 24: the first
checkpoint of 250,000 files on a loaded machine lost it after 4 minutes of work). `Workbench.run`
renews between steps; a watchdog renews while one step runs long. A real clock and a short lease;
the long step is a gate on the lease record, not a sleep of a guessed length."""

import time

from turnback.store.records import read_record
from turnback.workbench import Options, Workbench

from tests.live.test_lease_loss import until

TTL = 1.0


def _expires(root) -> float:
    return read_record(root / ".turnback" / "lease.cbor", "lease")["expires"]


def test_a_step_longer_than_the_lease_keeps_it_and_the_work_is_published(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one")
    wb = Workbench.open(root, Options(lease_ttl=TTL))
    try:
        first = _expires(root)
        seen = {}

        def job():
            # one step that outlives the lease it began with: it ends only once the wall clock is
            # past that first expiry and the record says the lease still runs (renewed meanwhile)
            until(lambda: time.time() > first + TTL and _expires(root) > time.time(),
                  "the lease to be renewed during one long step")
            seen["renewals"] = _expires(root) - first
            yield
            turn = yield from wb.turns.begin_job({"prompt": "after the long step"})
            return turn

        result = wb.run(job())
        assert result["turn"] == 1  # published by the owner that kept its lease
        assert wb.is_owner and seen["renewals"] > TTL
        # nobody could take the store meanwhile: a second opener finds the lease held
        other = Workbench.open(root, Options(lease_ttl=TTL))
        try:
            assert not other.is_owner
        finally:
            other.close()
    finally:
        wb.close()


def test_no_watchdog_runs_once_the_job_is_done(tmp_path):
    import threading

    root = tmp_path / "ws"
    root.mkdir()
    wb = Workbench.open(root, Options(lease_ttl=TTL))
    try:
        def job():
            assert any(t.name == "turnback-lease-keepalive" for t in threading.enumerate())
            yield
            return "done"

        assert wb.run(job()) == "done"
        assert not any(t.name == "turnback-lease-keepalive" for t in threading.enumerate())
    finally:
        wb.close()
