"""The agent record: what agent hooks remember between two hook processes, kept in the store.

An agent runs one short process per hook event, often several at once (parallel tool calls). What they
share lives in `agents/state.json` inside the store: which agent session feeds which turnback session,
the turn it is in and the prompt that began it, the tool calls begun and not yet finished, the helper
agents still running, and, per turn, the agent transcript's record at the end of that turn (so a
rewind can name the exact point to resume the agent's conversation). Every change happens under an
exclusive `flock` on `agents/lock` (given up after a budget, store/ownership/locks.py), and the file is
replaced atomically through the file-system seam, so concurrent hooks never lose each other's
updates. Every file here is checked to be the user's own before it is used (store/trust.py).

The rules that say whether an agent is still working on its turn (`waiting_for`) live here too: the
hooks apply them to other agent sessions, and the workbench applies them before a rewind, Redo or
fork settles an idle turn first (docs/agents/README.md, "Every turn ends").

Standard library and the seam only: a hook's fast path imports this.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path

from ..store import fs, trust
from ..store.ownership import locks

FOLDER = "agents"
STATE_NAME = "state.json"
LOCK_NAME = "lock"
LOG_NAME = "hook.log"
LOG_LIMIT = 1 << 20  # the hook log is cut to its newer half past this size
VERSION = 2
LOCK_SECONDS = 10.0  # the longest a change waits for another process's hold on the record

# How long an agent may be silent and still count as working on its turn (docs/agents/README.md):
QUIET_SECONDS = 120  # no hook event and no transcript write: the model is not answering any more
TOOL_SECONDS = 15 * 60  # a long tool call begun this long ago with no end is lost (Bash: 10 min)
LONG_TOOLS = ("shell", "helper", "mcp", "other")  # tools that may run long; the others (a file
# write, a read) end at once, so one still open after QUIET_SECONDS was denied or interrupted
HELPER_SECONDS = 15 * 60  # a helper agent silent this long is lost
IDLE_SECONDS = 30 * 60  # silent this long, a turn is over whatever it seemed to wait for
# What runs a hook command between the agent and turnback; the agent is the nearest other ancestor.
WRAPPERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "env",
                      "timeout", "nice", "nohup", "stdbuf", "setsid", "time"})


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
            data = json.loads(fs.read_file(self.state_path))
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
            fs.mkdir(self.folder, 0o700)
        trust.require(self.folder, "agent folder", folder=True)

    @contextlib.contextmanager
    def locked(self, budget: float = LOCK_SECONDS, stop=None):
        """Hold the record exclusively; yields the data, written back (atomically) if it changed.
        Raises `lock-timeout` when another process holds it past `budget` seconds (or `stop()`
        says this process is stopping), and `untrusted` when the lock is not the user's own."""
        with self._locked(budget=budget, stop=stop) as data:
            yield data

    @contextlib.contextmanager
    def try_locked(self):
        """`locked`, or None at once when a hook holds the record right now (an agent is at work this
        instant). For the workbench, which must never wait on a hook: the hook may itself be waiting
        for the workbench's mutation lock. What the block changed is kept even when it fails, so a
        change half made (steps recorded, the settle not) is not made twice."""
        with self._locked(budget=None, keep_on_error=True) as data:
            yield data

    @contextlib.contextmanager
    def _locked(self, *, budget: float | None, stop=None, keep_on_error: bool = False):
        """`budget` None: do not wait at all (yields None when the record is held, or when it is
        not the user's own: the workbench's best-effort changes then leave it alone)."""
        self._ensure_folder()
        fd = fs.open_for_append(self.lock_path)
        try:
            problem = trust.explain(os.fstat(fd), self.lock_path, "agent lock") or \
                trust.check(self.state_path, "agent record")
            if problem is not None:
                if budget is not None:
                    trust.refuse(problem, self.lock_path)
                _note(problem)
                yield None
                return
            if budget is None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    yield None
                    return
            else:
                locks.acquire(fd, budget, what=f"agent record's lock {self.lock_path}", stop=stop,
                              on_wait=lambda: self.log(f"waiting for the agent record's lock (held "
                                                       f"by another process), up to {budget:g} s"))
            data = self.read()
            before = json.dumps(data, sort_keys=True)
            try:
                yield data
            except BaseException:
                if keep_on_error:
                    self._write_if_changed(data, before)
                raise
            self._write_if_changed(data, before)
        finally:
            os.close(fd)  # closing releases the flock

    def _write_if_changed(self, data: dict, before: str) -> None:
        after = json.dumps(data, sort_keys=True)
        if after != before:
            # No fsync: losing the last note in a crash costs a Post without its Pre, which the
            # mapper records as a step of its own; the session itself is in the journal.
            fs.write_atomic(self.state_path, after.encode(), sync=False)

    def log(self, line: str) -> None:
        """One line in the hook log; never raises (the log is where failures go to be read)."""
        try:
            self._ensure_folder()
            trust.require(self.log_path, "hook log")
            try:
                if os.lstat(self.log_path).st_size > LOG_LIMIT:
                    tail = fs.read_file(self.log_path)[-LOG_LIMIT // 2:]
                    fs.write_atomic(self.log_path, tail.split(b"\n", 1)[-1], sync=False)
            except FileNotFoundError:
                pass
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
            fd = fs.open_for_append(self.log_path)
            try:
                trust.require_fd(fd, self.log_path, "hook log")
                fs.append(fd, f"{stamp} {line.rstrip()}\n".encode("utf-8", "replace"))
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


def holder(data: dict, turnback_session: str, n: int) -> tuple[str, dict] | None:
    """The agent session whose turn `n` of that turnback session is (begun or joined by its hooks)."""
    for key, s in data.get("sessions", {}).items():
        if isinstance(s, dict) and s.get("turnback") == turnback_session and s.get("turn") == n:
            return key, s
    return None


# -- turns and their ends ---------------------------------------------------------------------------
def turn_key(n: int, started) -> str:
    """A turn's identity across rewinds and Redo: its number and the moment it began (a Redo
    brings back the same turn, a new turn after a rewind has the same number but not the same
    start)."""
    return f"{n}@{started!r}"


def end_of(s: dict, n: int, started=None) -> dict | None:
    """What the record knows of turn `n`'s end (its resume point), found by the turn's identity."""
    ends = s.get("ends") or {}
    if started is not None:
        entry = ends.get(turn_key(n, started))
        if entry is not None:
            return entry
    legacy = (s.get("turns") or {}).get(str(n))  # records written before turn identities
    return legacy if isinstance(legacy, dict) else None


# -- is the agent still working? --------------------------------------------------------------------
def _proc_stat(pid: int) -> tuple[str, str, int, str] | None:
    """(command name, state, parent pid, start time in clock ticks) from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
        name = raw[raw.index("(") + 1: raw.rindex(")")]
        rest = raw[raw.rindex(")") + 2:].split()
        return name, rest[0], int(rest[1]), rest[19]
    except (OSError, ValueError, IndexError):
        return None


def agent_process(hook_parent: int | None) -> dict | None:
    """The agent's own process, found from the hook's parent (past the shells that run the hook
    command): `{pid, start}`, so a turn whose agent was killed (no Stop, no SessionEnd, no
    interrupt event: SIGKILL, a closed terminal) ends at once. None where /proc cannot tell."""
    pid = hook_parent
    for _ in range(4):
        if not isinstance(pid, int) or pid <= 1:
            return None
        stat = _proc_stat(pid)
        if stat is None:
            return None
        name, _state, parent, start = stat
        if name not in WRAPPERS:
            return {"pid": pid, "start": start, "ns": _pid_namespace()}
        pid = parent
    return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def process_gone(proc) -> bool:
    """The agent process a session's hooks came from has ended (or its pid is another process's
    now). False when nothing was recorded or /proc cannot tell (no /proc, another namespace)."""
    if not isinstance(proc, dict) or not isinstance(proc.get("pid"), int):
        return False
    if proc.get("ns") != _pid_namespace():
        return False  # recorded in another pid namespace (a container): its pids mean nothing here
    stat = _proc_stat(proc["pid"])
    if stat is None:
        return os.path.isdir("/proc/self")  # /proc works and has no such process
    return stat[3] != proc.get("start") or stat[1] in ("Z", "X")


def waiting_for(s: dict, now: float | None = None, *, transcript_mtime: float | None = None) -> list[dict]:
    """What the agent session is still working on in its turn (empty: nothing, the turn is idle and
    may be settled for it). A tool call begun and not finished (a shell, helper or MCP tool for
    TOOL_SECONDS, any other for QUIET_SECONDS), a helper agent still running, or an answer being
    written (an event or a transcript write in the last QUIET_SECONDS); none of them counts once the
    session has been silent for IDLE_SECONDS, after the person interrupted it, or once the agent's
    process has ended."""
    now = time.time() if now is None else now
    last = max(s.get("active", 0) or 0, transcript_mtime or 0)
    if s.get("interrupted") or now - last >= IDLE_SECONDS or process_gone(s.get("process")):
        return []
    out = []
    for key, p in (s.get("pending") or {}).items():
        limit = TOOL_SECONDS if p.get("group", "other") in LONG_TOOLS else QUIET_SECONDS
        if p.get("done") is None and now - p.get("at", last) < limit:
            out.append({"what": "tool", "tool": p.get("tool"), "summary": p.get("summary") or p.get("tool"),
                        "since": p.get("at"), "id": key})
    for agent_id, h in (s.get("helpers") or {}).items():
        if now - (h.get("last") or h.get("started") or last) < HELPER_SECONDS:
            out.append({"what": "helper", "agentId": agent_id, "type": h.get("type"),
                        "since": h.get("started")})
    if not out and not s.get("stopped") and now - last < QUIET_SECONDS:
        out.append({"what": "answer", "since": last})
    return out


def describe(waiting: list[dict], now: float | None = None) -> str:
    """`waiting_for` in words, for a refusal."""
    now = time.time() if now is None else now
    parts = []
    for w in waiting:
        ago = f"{int(now - w['since'])} s ago" if w.get("since") else "a while ago"
        if w["what"] == "tool":
            parts.append(f"the tool call {w.get('summary') or w.get('tool')} (begun {ago})")
        elif w["what"] == "helper":
            parts.append(f"its helper agent {w.get('type') or ''} {w.get('agentId')} (started {ago})"
                         .replace("  ", " "))
        else:
            parts.append(f"its answer (its last event came {ago})")
    return "; ".join(parts)


def unfinished_step(p: dict) -> dict:
    """The step of a tool call that began and never finished (denied, failed before it ran,
    interrupted): no scope, so its turn carries a `step-scope-unknown` gap naming it."""
    return {"kind": p.get("kind") or "other",
            "summary": f"{p.get('summary') or p.get('tool')} (began but never finished: denied, "
                       "failed or interrupted)"}


def steps_in_order(pending: dict, *, final: bool) -> list[tuple[str, dict, dict | None]]:
    """The tool calls to log now, in the order they began: (key, entry, step params). Calls begun
    while others were unfinished ran in parallel: one batch, logged in the order of their tool ids
    once all of it is done. With `final`, unfinished calls too (their params None)."""
    order = sorted(pending.items(), key=lambda kv: (kv[1].get("batch", kv[1]["seq"]), kv[0]))
    unfinished = {p.get("batch", p["seq"]) for p in pending.values() if p.get("done") is None}
    out = []
    for key, p in order:
        params = p.get("done")
        if not final and (params is None or p.get("batch", p["seq"]) in unfinished):
            break
        out.append((key, p, params))
    return out
