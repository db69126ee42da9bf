import multiprocessing
import os
import subprocess
import sys
import time

import psutil
import pytest

from turnback.errors import InvalidParams, NotOwner
from turnback.store.ownership import Lease, PidLock, open_ownership, process_alive, who_owns
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


def test_takeover_after_expiry_fences_the_stale_owner(store):
    a = Lease.acquire(store.path, ttl=0.2)
    with pytest.raises(NotOwner):
        Lease.acquire(store.path, ttl=5)
    time.sleep(0.3)
    with pytest.raises(NotOwner, match="expired"):
        a.check()
    b = Lease.acquire(store.path, ttl=5)
    assert b.epoch == a.epoch + 1
    with pytest.raises(NotOwner) as info:
        a.check()
    assert info.value.data["current_epoch"] == b.epoch
    with pytest.raises(NotOwner):
        a.renew()
    a.release()  # a stale owner's release must not free b's lease
    b.check()


def test_renew_extends_and_survives_a_lapse_nobody_used(store):
    a = Lease.acquire(store.path, ttl=0.2)
    time.sleep(0.25)
    a.renew()
    a.check()
    assert a.expires > time.time()


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
    code = (f"import sys, time\nfrom turnback.store.ownership import PidLock\n"
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


def test_pid_lock_other_host_is_never_stale(pid_store):
    lock = PidLock.acquire(pid_store.path)
    lock.host = "elsewhere.example"
    lock._write()
    with pytest.raises(NotOwner):
        PidLock.acquire(pid_store.path)
    forced = PidLock.acquire(pid_store.path, force=True)
    with pytest.raises(NotOwner):
        lock.check()
    forced.release()
    assert who_owns(pid_store.path, "pid") is None



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

    from turnback.store.ownership import Lease

    code = ("import sys, os; from turnback.store.ownership import Lease; "
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
    from turnback.store.ownership import Lease

    code = ("import sys, time; from turnback.store.ownership import Lease; "
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
