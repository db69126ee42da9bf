"""Who may write a store: a lease (stores with heads) or a PID lock (plain file stores).

`lease.py` and `pidlock.py` the two kinds, `holder.py` what they share (records, the flock, anchors),
`host.py` which machine, boot and process, `owners.py` the entry points (`open_ownership`, `who_owns`,
`takeover`); `locks.py` every `flock` with a budget, `owned.py` the rule for a file that is the
user's own. Empty on purpose: a hook's fast path imports `owned` and `locks` alone.

Read-modify-write of an ownership record is serialised across processes by `fcntl.flock` on a
separate lock file (the record itself is replaced by rename, so its inode changes and cannot carry a
lock). Readers never take the lock: records are replaced atomically, so a read sees the old or the new.

The epoch only grows. Every acquisition bumps it, and writers stamp it into what they publish, so a
stale writer is fenced out by `check()` and is recognisable on disk.

The epoch is also enforced: `fenced()` holds the same flock while it re-checks ownership and the
caller publishes, so a takeover (which bumps the epoch under that lock) falls wholly before or wholly
after a publication; an owner that stalled past its expiry and resumes after a takeover is refused
instead of publishing at its old epoch.

Lease expiry compares wall-clock times written by different processes: hosts sharing a store must
agree on the time within a small fraction of the TTL. The clock is injectable (`clock=`), so tests move
time instead of sleeping. flock over network file systems is only as good as the server's lock support.

An owner also notices when the folders it opened are no longer at their paths (a workspace renamed or
replaced under it): a holder remembers the identity (`st_dev`, `st_ino`) of its store folder, and of
any folder it `anchor`s (the workspace root), and every check, renewal and release compares them
first. A changed identity raises `StoreMoved` before anything is written by path, so the new store
made at the old path is never touched.

A machine is identified by its machine id (`/etc/machine-id`) beside the host name, and a boot by the
boot id: a renamed host still recognises its own processes, and a record from an earlier boot of the
same machine is provably stale. A holder on another machine is never judged gone automatically;
`takeover(confirm=True)` takes the store from it explicitly.
"""
