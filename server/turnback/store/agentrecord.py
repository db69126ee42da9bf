"""The agent record: what agent hooks remember between two hook processes, kept in the store.

An agent runs one short process per hook event, often several at once (parallel tool calls). What they
share lives in `agents/state.json` inside the store: which agent session feeds which turnback session,
the tool calls begun and not yet finished, and, per turn, the agent transcript's record id at the end
of that turn (so a rewind can name the exact point to resume the agent's conversation). Every change
happens under an exclusive `flock` on `agents/lock` (given up after a budget, store/locks.py), and the
file is replaced atomically through the file-system seam, so concurrent hooks never lose each other's
updates. Every file here is checked to be the user's own before it is used (store/trust.py).

Standard library and the seam only: a hook's fast path imports this.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from . import fsio, locks, trust

FOLDER = "agents"
STATE_NAME = "state.json"
LOCK_NAME = "lock"
LOG_NAME = "hook.log"
LOG_LIMIT = 1 << 20  # the hook log is cut to its newer half past this size
VERSION = 1
LOCK_SECONDS = 10.0  # the longest a change waits for another process's hold on the record


def empty() -> dict:
    return {"version": VERSION, "sessions": {}, "current": None}


class AgentRecord:
    def __init__(self, store_path: str | os.PathLike):
        self.folder = Path(store_path) / FOLDER
        self.state_path = self.folder / STATE_NAME
        self.lock_path = self.folder / LOCK_NAME
        self.log_path = self.folder / LOG_NAME

    # -- reading (no lock: the file is only ever replaced whole) ----------------------------------
    def read(self) -> dict:
        problem = trust.check(self.state_path, "agent record")
        if problem is not None:  # not the user's own: read as empty (a change refuses: `locked`)
            _note(problem)
            return empty()
        try:
            data = json.loads(fsio.read_file(self.state_path))
        except FileNotFoundError:
            return empty()
        except (OSError, ValueError):
            return empty()  # a damaged record is reported by the writer, which starts afresh
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), dict):
            return empty()
        return data

    # -- changing ---------------------------------------------------------------------------------
    def _ensure_folder(self) -> None:
        if not os.path.lexists(self.folder):
            fsio.mkdir(self.folder, 0o700)
        trust.require(self.folder, "agent folder", folder=True)

    @contextlib.contextmanager
    def locked(self, budget: float = LOCK_SECONDS, stop=None):
        """Hold the record exclusively; yields the data, written back (atomically) if it changed.
        Raises `lock-timeout` when another process holds it past `budget` seconds (or `stop()`
        says this process is stopping), and `untrusted` when the lock is not the user's own."""
        self._ensure_folder()
        fd = fsio.open_for_append(self.lock_path)
        try:
            trust.require_fd(fd, self.lock_path, "agent lock")
            locks.acquire(fd, budget, what=f"agent record's lock {self.lock_path}", stop=stop,
                          on_wait=lambda: self.log(f"waiting for the agent record's lock (held by "
                                                   f"another process), up to {budget:g} s"))
            trust.require(self.state_path, "agent record")
            data = self.read()
            before = json.dumps(data, sort_keys=True)
            yield data
            after = json.dumps(data, sort_keys=True)
            if after != before:
                # No fsync: losing the last note in a crash costs a Post without its Pre, which
                # the mapper records as a step of its own; the session itself is in the journal.
                fsio.write_atomic(self.state_path, after.encode(), sync=False)
        finally:
            os.close(fd)  # closing releases the flock

    def log(self, line: str) -> None:
        """One line in the hook log; never raises (the log is where failures go to be read)."""
        try:
            self._ensure_folder()
            trust.require(self.log_path, "hook log")
            try:
                if os.lstat(self.log_path).st_size > LOG_LIMIT:
                    tail = fsio.read_file(self.log_path)[-LOG_LIMIT // 2:]
                    fsio.write_atomic(self.log_path, tail.split(b"\n", 1)[-1], sync=False)
            except FileNotFoundError:
                pass
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
            fd = fsio.open_for_append(self.log_path)
            try:
                trust.require_fd(fd, self.log_path, "hook log")
                fsio.append(fd, f"{stamp} {line.rstrip()}\n".encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except OSError:
            pass
        except Exception as exc:  # noqa: BLE001 - refused (not the user's own): never written to
            _note(f"not written to the hook log: {exc}")

    def log_lines(self) -> list[str]:
        try:
            return self.log_path.read_text("utf-8", "replace").splitlines()
        except OSError:
            return []


def _note(text: str) -> None:
    """A refusal, for the owner's log (info level: a hook's own process prints nothing)."""
    import logging

    logging.getLogger("turnback.hooks").info("%s", text)


def sessions_of(data: dict, turnback_session: str | None = None) -> list[dict]:
    """The agent sessions of the record (optionally only those feeding one turnback session), the
    most recently active first."""
    out = [s for s in data.get("sessions", {}).values() if isinstance(s, dict)
           and (turnback_session is None or s.get("turnback") == turnback_session)]
    return sorted(out, key=lambda s: s.get("active", 0), reverse=True)
