"""`turnback hook AGENT`: one payload from standard input, mapped onto the session, never in the way.

Through a live sidecar, the hook process only forwards the payload (`fast.py`) and the sidecar runs
`handle` below; without one, `run` starts a background owner and hands the event to it, or maps it
in the hook process (the direct path).

The hook exits 0 and prints nothing of its own on any turnback failure: the failure (and the payload,
so nothing is lost) goes to the store's hook log, `.turnback/agents/hook.log`. Only a user who set
`[hooks] block = true` gets exit 2 (the agent's "block this action") when recording a prompt or a
tool call fails. What it does print is what the agent asked for: additional context for the model
after a rewind, or a message for the person (JSON on stdout, in the agent's own output shape).

An event that could not reach an owner able to record it (stopped, starting, gone, its lock held)
is kept in the store's spool (`agents/spool.py`) and recorded, in order, by the next owner
(`drain.py`); each event carries an id, so one that reached its owner after all is not recorded twice.

A payload whose `cwd` is in no workspace turnback knows (no `.turnback/` store and no
`turnback.toml` in it or a folder above), or in one that is not the user's own (`store/trust.py`), is
ignored without a trace.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..agents.agentrecord import AgentRecord
from .agents import ADAPTERS
from .event import BadPayload
from .drain import LOCK_SECONDS, Deferred
from .fast import cwd_of, find_workspace, parse, read_body
from . import EXIT_BLOCK, EXIT_OK, NO_OWNER, OLDER_OWNER, OTHER_PLACE, Missed

PAYLOAD_LOG_LIMIT = 4096
# Failures that say "not now" rather than "not this event": such an event is kept in the spool.
NOT_NOW = frozenset({"lock-timeout", "shutting-down", "not-owner", "timeout", "unreachable",
                     "recovery-pending", "cancelled", "not-initialized", "unsafe-socket",
                     "too-many-connections", "over-budget", "idle", "stalled"})
READS = frozenset({"turnback/session/info", "turnback/session/log"})


def run(agent: str, stdin=None, stdout=None, stderr=None, event: str | None = None,
        body: bytes | None = None, event_id: str | None = None, older_owner: bool = False) -> int:
    """The whole hook without a live sidecar (the fast path found none): a background owner is
    started and given the event, or the event is mapped here on the store opened in this process.
    `older_owner`: an owner answers but has no `turnback/hook/event`; its calls are used instead."""
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    if body is None:  # called as the hook itself (tests, older entry points): its clock starts
        from .fast import start_clock

        start_clock()
        body = read_body(stdin if stdin is not None else sys.stdin.buffer)
    event_id = event_id or _new_id()
    raw = parse(body, event)
    place = find_workspace(cwd_of(raw))
    if place is None:
        return EXIT_OK
    root, store = Path(place[0]), Path(place[1])
    from ..store import trust

    if trust.place_problem(root, store) is not None:
        return EXIT_OK  # not the user's own: nothing is written anywhere, not even a log line
    from . import fast
    from .config import load

    config = load(root, store)
    if isinstance(raw, dict) and config.start_owner and not _env_direct() and not older_owner:
        outcome = _through_started_owner(place, agent, body, event, event_id, cwd_of(raw, ""))
        if isinstance(outcome, int):
            return outcome
        if isinstance(outcome, Missed):
            return undelivered(agent, raw, body, event, event_id, place, outcome)
    from .port import DirectPort, RemotePort

    def in_process(config, record):
        if older_owner:
            from ..remote import client

            return RemotePort(client, root, store)
        return DirectPort(root, store)

    if not _replay_spool(root, store, in_process):  # earlier events still wait: join them
        return undelivered(agent, raw, body, event, event_id, place,
                           Missed("earlier events still wait in the spool", sent=False),
                           stderr)
    return handle(agent, raw, body, root, store, in_process, stdout, stderr, event_id=event_id,
                  lock_seconds=min(LOCK_SECONDS, fast.remaining()), hook_parent=os.getppid())


def _through_started_owner(place, agent, body, event, event_id, cwd):
    """Start a background owner and hand it the event: its answer, a `Missed` (it started but did
    not answer in time: recovering a crash, say), or None (none could be started: map it here)."""
    from ..remote import client
    from . import fast

    wait = min(fast.budget("TURNBACK_HOOK_START_SECONDS", fast.START_SECONDS), fast.remaining())
    try:
        client.ensure_owner(place[0], place[1], timeout=wait)
    except client.OwnerStarting as exc:  # still importing or recovering: never race it for the lease
        return Missed(f"no owner answered within {wait:g} s: {exc}", sent=False)
    except client.NoOwner as exc:
        from ..store.ownership import owners

        held = _held_by_other(owners, place[1])
        if held:  # an owner is on its way (or cannot be reached): do not open the store here
            return Missed(f"no owner answered within {wait:g} s ({held}): {exc}", sent=False)
        AgentRecord(place[1]).log(f"could not start a background sidecar ({exc}); "
                                  "using the direct path")
        return None
    except Exception as exc:  # noqa: BLE001 - cannot start one: say so and take the direct path
        AgentRecord(place[1]).log(f"could not start a background sidecar ({exc}); "
                                  "using the direct path")
        return None
    outcome = fast.send(place, agent, body, event, cwd, event_id)
    if outcome in (NO_OWNER, OLDER_OWNER, OTHER_PLACE):
        return Missed(f"the started owner could not take the event ({outcome})", sent=False)
    return outcome


def _held_by_other(owners, store) -> str | None:
    """Who holds the store's ownership, when a process other than this one does and is alive."""
    try:
        from ..store.layout import Store

        kind = Store.open(store, kind=None, create=False).kind
        holder = owners.who_owns(store, kind)
    except Exception:  # noqa: BLE001 - an unreadable lease is the direct path's to report
        return None
    pid = holder.get("pid") if holder else None
    if not isinstance(pid, int) or pid == os.getpid():
        return None
    if holder.get("sameMachine"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None  # a dead holder's lease: the direct path takes it (and recovers)
        except OSError:
            pass
    return f"pid {pid} holds the store"


def _replay_spool(root: Path, store: Path, make_port) -> bool:
    """Replay the spool before this event; whether it is empty now."""
    from ..agents import spool

    if not spool.pending(store):
        return True
    from .drain import drain

    record = AgentRecord(store)
    try:
        drain(root, store, make_port, record.log, handle=handle)
    except Exception as exc:  # noqa: BLE001 - the spool stays for the next owner
        record.log(f"the spool was not replayed now: {exc}")
    return not spool.pending(store)


def _new_id() -> str:
    return os.urandom(8).hex()


def handle(agent: str, raw, body: bytes | None, root: Path, store: Path, make_port, stdout,
           stderr, *, event_id: str | None = None, cursor: dict | None = None,
           lock_seconds: float = LOCK_SECONDS, stop=None, on_refused=None,
           hook_parent: int | None = None) -> int:
    """One parsed payload mapped onto the session through the port `make_port(config, record)`
    gives; the exit status the agent gets. Runs in the hook process, or in the live sidecar
    (`lsp/hookhost.py`), which sends back what would have been printed. `event_id` is the event's
    id (recorded once only); `cursor` marks a replayed spool frame (drain.py): a failure that says
    "not now" then raises `Deferred` instead of keeping the event again. `hook_parent`: the hook
    process's parent pid, which leads to the agent's process (None: a replay, not known)."""
    from ..store import trust

    problem = trust.place_problem(root, store)
    if problem is not None:  # the store changed owner or mode under us: refused, logged nowhere shared
        if cursor is not None:
            raise Deferred(problem)
        if on_refused is not None:
            on_refused(problem)
        return EXIT_OK
    record = AgentRecord(store)
    if raw is None:
        body = body or b""
        record.log(f"{agent}: the payload is not JSON ({len(body)} bytes): "
                   f"{body[:PAYLOAD_LOG_LIMIT].decode('utf-8', 'replace')!r}")
        _mark(record, event_id, cursor)
        return EXIT_OK
    try:
        ev = ADAPTERS[agent](raw)
    except BadPayload as exc:
        record.log(f"{exc}; payload: {_clip(raw)}")
        _mark(record, event_id, cursor)
        return EXIT_OK
    from ..agents.agentrecord import agent_process

    ev.process = agent_process(hook_parent)
    from .config import load

    config = load(root, store)
    for problem in config.problems:
        record.log(f"config: {problem}")
    port = _Tally(make_port(config, record))
    try:
        reply = _map(ev, port, record, config, event_id=event_id, cursor=cursor,
                     lock_seconds=lock_seconds, stop=stop)
    except Exception as exc:  # never in the agent's way: keep it, or log it with the payload
        not_now = (getattr(exc, "code", None) in NOT_NOW or isinstance(exc, OSError)) \
            and not port.changed
        if not_now and cursor is not None:
            raise Deferred(str(exc)) from exc
        if not_now and event_id is not None:
            kept = _keep(store, record, ev, raw, body, event_id, exc)
            if kept and not (config.block and ev.kind in ("prompt", "pre-tool")):
                return EXIT_OK
        _mark(record, event_id, cursor)
        return failed(ev.agent, ev.name, ev.kind, raw, exc, record, config, stderr,
                      partly=bool(port.changed))
    _print_reply(ev, reply, stdout)
    return EXIT_OK


class _Tally:
    """The port, counting the calls that changed something (a half-recorded event is not kept)."""

    def __init__(self, port):
        self.port = port
        self.changed = 0

    @property
    def name(self) -> str:
        return self.port.name

    def call(self, method: str, params: dict) -> dict:
        result = self.port.call(method, params)
        if method not in READS:
            self.changed += 1
        return result

    def close(self) -> None:
        self.port.close()


def _keep(store, record: AgentRecord, ev, raw, body, event_id: str, exc) -> bool:
    """Put an event that could not be recorded now into the spool; whether that worked."""
    from ..agents import spool

    code = getattr(exc, "code", type(exc).__name__)
    data = body if body is not None else json.dumps(raw).encode()
    try:
        spool.append(store, spool.record_of(event_id, ev.agent, None, ev.cwd, data, False,
                                            f"[{code}] {exc}"))
    except Exception as err:  # noqa: BLE001 - then it is logged as not recorded
        record.log(f"{ev.agent} {ev.name}: could not be kept in the spool: {err}")
        return False
    record.log(f"{ev.agent} {ev.name}: not recorded now ([{code}] {exc}); kept in the spool "
               "for the next owner")
    return True


def undelivered(agent: str, raw, body: bytes, event: str | None, event_id: str, place,
                missed, stderr=None) -> int:
    """The hook could not hand the event to an owner that answered (`Missed`), or earlier
    events wait in the spool: it goes to the spool, to be recorded by the next owner in order,
    unless the user asked such events to be blocked."""
    from ..agents import spool
    from ..store import trust

    stderr = stderr if stderr is not None else sys.stderr
    root, store = Path(place[0]), Path(place[1])
    if trust.place_problem(root, store) is not None:
        return EXIT_OK
    record = AgentRecord(store)
    if raw is None:
        return handle(agent, raw, body, root, store, None, sys.stdout, stderr)  # logs it
    from .config import load

    config = load(root, store)
    try:
        ev = ADAPTERS[agent](raw)
        name, kind = ev.name, ev.kind
    except BadPayload:
        name = raw.get("hook_event_name") if isinstance(raw, dict) else None
        name, kind = str(name or "event"), None
    if config.block and kind in ("prompt", "pre-tool"):
        return failed(agent, name, kind, raw, missed.why, record, config, stderr)
    try:
        spool.append(store, spool.record_of(event_id, agent, event, cwd_of(raw, ""), body,
                                            missed.sent, missed.why))
    except Exception as exc:  # noqa: BLE001 - logged with the payload: nothing is lost silently
        return failed(agent, name, kind, raw, f"{missed.why}; and it could not be kept in the "
                      f"spool: {exc}", record, config, stderr)
    record.log(f"{agent} {name}: kept in the spool ({missed.why}); the next owner records it")
    return EXIT_OK


def failed(agent: str, name: str, kind: str | None, raw, exc, record: AgentRecord, config,
           stderr, *, partly: bool = False) -> int:
    """A payload that could not be recorded (or only `partly`): a line in the hook log (with the
    payload), and exit 0 unless the user asked prompts and tool calls to be blocked then."""
    code = getattr(exc, "code", type(exc).__name__ if isinstance(exc, Exception) else "missed")
    what = "recorded only in part" if partly else "not recorded"
    record.log(f"{agent} {name}: {what}: [{code}] {exc}; payload: {_clip(raw)}")
    if config.block and kind in ("prompt", "pre-tool"):
        print(f"turnback could not record this {name} ({exc}); blocked because "
              "[hooks] block = true", file=stderr)
        return EXIT_BLOCK
    return EXIT_OK


def _map(ev, port, record: AgentRecord, config, *, event_id=None, cursor=None,
         lock_seconds: float = LOCK_SECONDS, stop=None):
    from .drain import recorded_already, remember, replaying
    from .mapper import Mapper

    # One hook at a time per workspace: parallel tool calls queue here, so each sees the others'
    # notes. The port closes inside the lock: a direct-path hook releases the store's lease before
    # the next hook may open it (closed after the lock, the next one met the lease and was refused).
    with record.locked(lock_seconds, stop) as data:
        try:
            if recorded_already(data, event_id, cursor, record.log):
                record.log(f"{ev.agent} {ev.name}: already recorded (event {event_id}); "
                           "not recorded again")
                remember(data, event_id, cursor)
                return None
            with replaying(record, data, event_id, cursor, port):
                reply = Mapper(ev, port, data, config, record.log).run()
            remember(data, event_id, cursor)
            return reply
        finally:
            port.close()


def _mark(record: AgentRecord, event_id, cursor) -> None:
    """An event that will not be recorded (bad input, or logged as failed) counts as handled: a
    replay passes over it, a copy of it in the spool is not tried again."""
    if cursor is None:
        return
    from .drain import remember

    with record.locked() as data:
        remember(data, event_id, cursor)


def _env_direct() -> bool:
    return os.environ.get("TURNBACK_HOOK_DIRECT") == "1"


def _print_reply(ev, reply, stdout) -> None:
    """What the agent reads back, in its own shape (agents.py `output`, and the guard's answer to a
    tool call, guard.py `output`); nothing at all when there is nothing to say."""
    decision = getattr(reply, "guard", None)  # hooks/guard.py: warn, ask or deny a tool call
    if reply is None or not (reply.context or reply.message or decision):
        return
    from .agents import output

    out = output(ev, reply.context, reply.message) or {}
    if decision is not None:
        from .guard import output as guard_output

        out.update(guard_output(ev, decision))
    if out:
        stdout.write(json.dumps(out) + "\n")
        stdout.flush()


def _clip(raw) -> str:
    try:
        text = json.dumps(raw, default=str)
    except (ValueError, RecursionError):
        text = repr(raw)[:PAYLOAD_LOG_LIMIT]
    return text if len(text) <= PAYLOAD_LOG_LIMIT else text[:PAYLOAD_LOG_LIMIT] + "…"
