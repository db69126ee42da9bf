"""The fsck check for session records: every parked or frozen session's body, and every fork's
record of its parent's state, reads and references only objects that exist (they are collection
roots, so a missing one means the collector or a crash lost a session's history)."""

from __future__ import annotations

from ..store import fsck as fsck_mod
from ..store import lineage
from ..timeline.codec import StateCodec
from .fsck_check import _check_body


def check_session_bodies(store, report) -> None:
    codec = StateCodec(store.objects)
    seen: set[str] = set()
    try:
        sessions, forks = lineage.sessions(store), lineage.forks(store)
    except Exception as exc:
        report.add(store.path / "sessions", f"a session record does not read: "
                                            f"{getattr(exc, 'message', exc)}")
        return
    for rec in sessions:
        if isinstance(rec.get("body"), str):
            _check_body(store, codec, rec["body"], lineage.session_path(store, rec["sessionId"]),
                        f"session {rec['sessionId']}", report, seen)
    for rec in forks:
        if isinstance(rec.get("parentBody"), str):
            _check_body(store, codec, rec["parentBody"], lineage.fork_path(store, rec["branchId"]),
                        f"the parent of fork {rec['branchId']}", report, seen)


if check_session_bodies not in fsck_mod.EXTRA_CHECKS:
    fsck_mod.EXTRA_CHECKS.append(check_session_bodies)
