import multiprocessing
import os
import subprocess
import sys
import time

import psutil
import pytest

from turnback.errors import InvalidParams, NotOwner
from turnback.store.ownership.lease import Lease
from turnback.store.ownership.pidlock import PidLock
from turnback.store.ownership.owners import open_ownership, who_owns
from turnback.store.ownership.host import process_alive
from . import _workers
from .conftest import REPO


def test_lease_acquire_refuse_release(store):
    a = Lease.acquire(store.path, ttl=30)
    a.check()
    with pytest.raises(NotOwner) as info:
        Lease.acquire(store.path, ttl=30)
    owner = info.value.data["owner"]
    assert owner == {"id": a.owner_id, "pid": os.getpid(), "host": a.host}
    assert who_owns(store.path, "heads")["id"] == a.owner_id
    a.release()
    assert who_owns(store.path, "heads") is None
    with pytest.raises(NotOwner):
        a.check()
    b = Lease.acquire(store.path)
    assert b.epoch == a.epoch + 1


# Expiry, takeover and renewal after a lapse: tests/store/test_lease_epoch.py (injected clock).


def test_damaged_lease_never_lowers_the_epoch(store):
    a = Lease.acquire(store.path)
    store.heads.publish(parent=None, session="s", created=0.0, turn_count=0, fork_point="f",
                        settled=True, epoch=a.epoch + 5, body="0" * 32)
    store.lease_path.write_bytes(b"garbage")
    b = Lease.acquire(store.path)
    assert b.epoch == a.epoch + 6
    with pytest.raises(NotOwner):
        a.check()


@pytest.mark.slow
def test_two_processes_race_for_the_lease(store):
    rounds = 200
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_workers.lease_racer, args=(str(store.path), rounds, barrier, results))
             for _ in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in range(2 * rounds)]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    by_round = {}
    for r, outcome, epoch in got:
        by_round.setdefault(r, []).append((outcome, epoch))
    epochs = []
    for r in range(rounds):
        outcomes = sorted(o for o, _ in by_round[r])
        assert outcomes == ["lost", "won"], (r, by_round[r])
        epochs.append(next(e for o, e in by_round[r] if o == "won"))
    assert epochs == sorted(epochs) and len(set(epochs)) == rounds


def _spawn_holder(store_dir, *, hold: bool):
    code = (f"import sys, time\nfrom turnback.store.ownership.pidlock import PidLock\n"
            f"PidLock.acquire({str(store_dir)!r})\nprint('ready', flush=True)\n"
            + ("time.sleep(60)\n" if hold else ""))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)


def test_pid_lock_live_holder_blocks_dead_holder_is_stale(pid_store):
    holder = _spawn_holder(pid_store.path, hold=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(NotOwner) as info:
            PidLock.acquire(pid_store.path)
        assert info.value.data["owner"]["pid"] == holder.pid
        assert who_owns(pid_store.path, "pid")["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
    assert who_owns(pid_store.path, "pid") is None
    lock = PidLock.acquire(pid_store.path)
    lock.check()
    assert lock.owner_info()["pid"] == os.getpid()


def test_pid_lock_of_exited_process_is_stale(pid_store):
    done = _spawn_holder(pid_store.path, hold=False)
    done.communicate()
    lock = PidLock.acquire(pid_store.path)
    assert lock.epoch == 2


def test_pid_reuse_is_detected():
    me = psutil.Process()
    assert process_alive(me.pid, me.create_time())
    assert not process_alive(me.pid, me.create_time() - 100)  # same pid, different process


def test_own_start_time_is_psutils(pid_store):
    """The lease stamps the start time read from /proc without psutil; `process_alive` compares it
    with psutil's, so the two must agree, here and in another process."""
    from turnback.store.ownership.host import _own_start_time

    assert abs(_own_start_time() - psutil.Process().create_time()) < 0.02
    child = subprocess.Popen([sys.executable, "-c", "import sys; from turnback.store.ownership.host import "
                              "_own_start_time as t; print(repr(t()), flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        started = float(child.stdout.readline())
        assert abs(started - psutil.Process(child.pid).create_time()) < 0.02
        assert process_alive(child.pid, started)
    finally:
        child.communicate("")
    assert not process_alive(child.pid, started)  # it has exited
    lock = PidLock.acquire(pid_store.path)
    assert process_alive(os.getpid(), lock.create_time)
    assert abs(lock.create_time - psutil.Process().create_time()) < 0.02


def _pretend_written_on(lock, *, host, machine, boot=None):
    """Rewrite our own lock record as if another host (and machine, and boot) had written it."""
    from turnback.store import records

    rec = records.read_record(lock.path, None)
    rec.update(host=host, machine=machine, boot=boot)
    records.write_record(lock.path, "pidlock", rec)


def test_pid_lock_from_another_machine_is_never_stale_without_a_confirmed_takeover(pid_store):
    from turnback.store.ownership.owners import takeover

    lock = PidLock.acquire(pid_store.path)
    _pretend_written_on(lock, host="elsewhere.example", machine="f" * 32)
    with pytest.raises(NotOwner) as info:
        PidLock.acquire(pid_store.path)
    assert info.value.data["otherMachine"] is True and "takeover" in info.value.data
    with pytest.raises(InvalidParams):
        takeover(pid_store.path, "pid", confirm=False)
    forced = takeover(pid_store.path, "pid", confirm=True)
    assert forced.epoch == lock.epoch + 1
    with pytest.raises(NotOwner):
        lock.check()
    forced.release()
    assert who_owns(pid_store.path, "pid") is None


def test_pid_lock_of_a_renamed_host_is_recognised_by_its_machine_id(pid_store):
    """The host name changed (laptops, containers), the machine did not: the holder's process is
    judged as on this host (here: it exited, so the lock is stale)."""
    from turnback.store.ownership.host import machine_id

    if machine_id() is None:
        pytest.skip("this machine has no machine id")
    done = _spawn_holder(pid_store.path, hold=False)
    done.communicate()
    lock = PidLock(pid_store.path, "x", 1)
    from turnback.store import records

    rec = records.read_record(lock.path, None)
    rec["host"] = "old-name-of-this-laptop"
    records.write_record(lock.path, "pidlock", rec)
    taken = PidLock.acquire(pid_store.path)  # was: NotOwner forever (another host name)
    assert taken.epoch == rec["epoch"] + 1


def test_pid_lock_from_an_earlier_boot_is_stale(pid_store):
    from turnback.store.ownership.host import boot_id, machine_id

    if machine_id() is None or boot_id() is None:
        pytest.skip("no machine id or boot id here")
    lock = PidLock.acquire(pid_store.path)  # a live pid: only the boot id can say it is gone
    _pretend_written_on(lock, host="old-name", machine=machine_id(), boot="0" * 32)
    taken = PidLock.acquire(pid_store.path)
    assert taken.epoch == lock.epoch + 1


def test_live_lease_is_taken_only_by_a_confirmed_takeover(store):
    from turnback.store.ownership.owners import takeover

    a = Lease.acquire(store.path, ttl=3600)
    with pytest.raises(NotOwner):
        Lease.acquire(store.path, ttl=3600)
    b = takeover(store.path, "heads", confirm=True, ttl=3600)
    assert b.epoch == a.epoch + 1
    with pytest.raises(NotOwner):
        a.check()


def test_open_ownership_kinds(tmp_path):
    from turnback.store.layout import Store

    h = Store.open(tmp_path / "h")
    p = Store.open(tmp_path / "p", kind="pid")
    assert isinstance(h.ownership(ttl=5), Lease)
    assert isinstance(p.ownership(), PidLock)
    with pytest.raises(NotOwner):
        h.ownership()
    with pytest.raises(InvalidParams):
        open_ownership(tmp_path / "h", "bogus")


def test_lease_of_a_dead_holder_on_this_host_is_taken_over_before_expiry(tmp_path):
    import subprocess
    import sys

    from turnback.store.ownership.lease import Lease

    code = ("import sys, os; from turnback.store.ownership.lease import Lease; "
            "l = Lease.acquire(sys.argv[1], ttl=3600); print(l.epoch); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                         capture_output=True, text=True)
    dead_epoch = int(out.stdout)
    lease = Lease.acquire(tmp_path, ttl=30)  # the holder exited without releasing; no wait
    assert lease.epoch == dead_epoch + 1


def test_lease_of_a_live_holder_is_not_taken_over(tmp_path):
    import subprocess
    import sys

    import pytest

    from turnback.errors import NotOwner
    from turnback.store.ownership.lease import Lease

    code = ("import sys, time; from turnback.store.ownership.lease import Lease; "
            "l = Lease.acquire(sys.argv[1], ttl=3600); print('held', flush=True); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(NotOwner):
            Lease.acquire(tmp_path, ttl=30)
    finally:
        proc.kill()
        proc.wait()
