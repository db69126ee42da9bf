"""Replaying the hook spool: the events no owner could take, recorded in order by the next one.

An owner drains the spool when it opens the store, before each hook event it is handed, and
whenever it finds one (`lsp/hookhost.py`); a hook that maps its event in its own process drains it
first too (`runtime.run`). Each frame is mapped exactly as the live event would have been
(`runtime.handle`), with its id, and what is recorded is remembered in the agent record under the
same lock as the mapping: the ids of the latest events (`delivered`), and the replay's cursor (the
spool file's id and the offset after the last frame handled, `spool`). So a frame whose event did
reach its owner after all, or that a replay cut short already recorded, is passed over: nothing is
recorded twice, and a replay that stops (a lock held, the owner stopping) resumes where it was.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

from ..store import fs
from ..agents import spool
from .fast import budget, cwd_of, find_workspace, parse

# An event waits this long for the agent record's lock, then goes to the spool (the variable is
# for tests that hold the lock on purpose).
LOCK_SECONDS = budget("TURNBACK_HOOK_LOCK_SECONDS", 3.0)
DELIVERED_KEEP = 256  # ids of the latest events recorded, kept in the agent record
KEY, CURSOR = "delivered", "spool"


def recorded_already(data: dict, event_id: str | None, cursor: dict | None, log) -> bool:
    """Whether this event (a live one, or a spool frame at `cursor`) was handled before; a frame
    whose replay was cut short while it was being recorded counts as handled (and says so)."""
    if event_id is not None and event_id in (data.get(KEY) or []):
        return True
    if cursor is None:
        return False
    mark = data.get(CURSOR)
    if not (isinstance(mark, dict) and mark.get("file") == cursor["file"]
            and isinstance(mark.get("next"), int)):
        return False
    if mark.get("pending") is not None and cursor["next"] == mark["next"]:
        log(f"spool: the replay of event {event_id} was cut short while it was being recorded; it "
            "is not recorded again (it may be recorded only in part)")
        return True
    return cursor["next"] <= mark["next"] and mark.get("pending") is None \
        or cursor["next"] < mark["next"]


def remember(data: dict, event_id: str | None, cursor: dict | None) -> None:
    if event_id is not None:
        ids = [i for i in (data.get(KEY) or []) if isinstance(i, str) and i != event_id]
        data[KEY] = (ids + [event_id])[-DELIVERED_KEEP:]
    if cursor is not None:
        mark = data.get(CURSOR)
        behind = isinstance(mark, dict) and mark.get("file") == cursor["file"] \
            and isinstance(mark.get("next"), int) and mark["next"] > cursor["next"]
        if not behind:  # the cursor only moves on (a frame passed over does not take it back)
            data[CURSOR] = dict(cursor)


@contextlib.contextmanager
def replaying(record, data: dict, event_id: str | None, cursor: dict | None, port):
    """Around the mapping of a spool frame (under the record's lock): the cursor is first written
    as pending, durably, so a replay that dies half-way never records the frame a second time; a
    mapping that failed before it changed anything takes the mark back (it will be tried again)."""
    if cursor is None:
        yield
        return
    previous = json.loads(json.dumps(data))
    try:
        _save(record, {**previous, CURSOR: {**cursor, "pending": event_id or "-"}})
        yield
    except BaseException:
        if not getattr(port, "changed", 0):
            with contextlib.suppress(OSError):
                _save(record, previous)
        raise


def _save(record, data: dict) -> None:
    """The agent record written now, and synced (the lock's own write at its end is not)."""
    fs.write_atomic(record.state_path, json.dumps(data, sort_keys=True).encode())


class Deferred(Exception):
    """A replayed event that could not be recorded now: the replay stops and keeps it."""


def drain(root: Path, store: Path, make_port, log, *, handle, stop=None, lock_seconds=None) -> dict:
    """Record every spooled event of this workspace, oldest first, each through `handle` (the
    live event's own mapping, `runtime.handle`, passed in: runtime drains before an event, so it
    sits above this module); what was done. Stops (keeping the rest) at the first event that
    cannot be recorded now (`handle` raises `Deferred`)."""
    done = {"replayed": 0, "passed": 0, "kept": 0}
    root = Path(root)
    while True:
        taken = spool.take(store)
        if taken is None:
            return done
        if taken.torn:
            log(f"spool: {taken.torn}")
        for index, frame in enumerate(taken.frames):
            rec = frame.record
            cursor = {"file": taken.file_id, "next": frame.end}
            body = spool.body_of(rec)
            raw = parse(body, rec.get("event"))
            place = find_workspace(cwd_of(raw, rec.get("cwd") or str(root)))
            agent = rec.get("agent")
            if place is None or Path(place[0]) != root.resolve() or not isinstance(agent, str):
                log(f"spool: event {rec.get('id')} is not for this workspace ({place and place[0]}); "
                    "passed over")
                done["passed"] += 1
                continue
            try:
                handle(agent, raw, body, root, store, make_port, io.StringIO(), io.StringIO(),
                       event_id=rec.get("id") if isinstance(rec.get("id"), str) else None,
                       cursor=cursor, stop=stop,
                       lock_seconds=LOCK_SECONDS if lock_seconds is None else lock_seconds)
            except Deferred as exc:
                log(f"spool: replay paused at event {rec.get('id')} ({exc}); it is kept")
                done["kept"] = len(taken.frames) - index
                return done
            done["replayed"] += 1
        kept = spool.finish(taken)
        if kept:
            log(f"spool: what could not be read is kept in {kept}")
        if done["replayed"] or done["passed"]:
            log(f"spool: {done['replayed']} event(s) replayed from {os.path.basename(taken.path)}")
