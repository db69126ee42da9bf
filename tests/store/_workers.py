"""Process entry points for ownership races (importable by spawned children)."""

from turnback.errors import NotOwner
from turnback.store.ownership.lease import Lease


def lease_racer(store_dir, rounds, barrier, results):
    for r in range(rounds):
        barrier.wait()
        try:
            lease = Lease.acquire(store_dir, ttl=60.0)
            lease.check()
            results.put((r, "won", lease.epoch))
        except NotOwner:
            lease = None
            results.put((r, "lost", None))
        barrier.wait()  # both have tried before anyone lets go
        if lease is not None:
            lease.release()
        barrier.wait()
