"""`turnback hook AGENT`: one payload from standard input, mapped onto the session, never in the way.

Through a live sidecar, the hook process only forwards the payload (`fast.py`) and the sidecar runs
`handle` below; without one, `run` does the whole of it in the hook process.

The hook exits 0 and prints nothing of its own on any turnback failure: the failure (and the payload,
so nothing is lost) goes to the store's hook log, `.turnback/agents/hook.log`. Only a user who set
`[hooks] block = true` gets exit 2 (the agent's "block this action") when recording a prompt or a
tool call fails. What it does print is what the agent asked for: additional context for the model
after a rewind, or a message for the person (JSON on stdout, in the agent's own output shape).

A payload whose `cwd` is in no workspace turnback knows (no `.turnback/` store and no
`turnback.toml` in it or a folder above) is ignored without a trace.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..store.agentrecord import AgentRecord
from .agents import ADAPTERS
from .event import BadPayload
from .fast import EXIT_BLOCK, EXIT_OK, cwd_of, find_workspace, parse, read_body

PAYLOAD_LOG_LIMIT = 4096


def run(agent: str, stdin=None, stdout=None, stderr=None, event: str | None = None,
        body: bytes | None = None) -> int:
    """The whole hook in this process (the fast path, `fast.py`, found no live sidecar): the
    payload goes through the socket of a sidecar started for it, or the store opened here."""
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    if body is None:
        body = read_body(stdin if stdin is not None else sys.stdin.buffer)
    raw = parse(body, event)
    place = find_workspace(cwd_of(raw))
    if place is None:
        return EXIT_OK
    root, store = Path(place[0]), Path(place[1])
    from .port import LazyPort

    def in_process(config, record):
        return LazyPort(root, store, start_owner=config.start_owner and not _env_direct(),
                        log=record.log)

    return handle(agent, raw, body, root, store, in_process, stdout, stderr)


def handle(agent: str, raw, body: bytes | None, root: Path, store: Path, make_port, stdout,
           stderr) -> int:
    """One parsed payload mapped onto the session through the port `make_port(config, record)`
    gives; the exit status the agent gets. Runs in the hook process, or in the live sidecar
    (`lsp/hookhost.py`), which sends back what would have been printed."""
    record = AgentRecord(store)
    if raw is None:
        body = body or b""
        record.log(f"{agent}: the payload is not JSON ({len(body)} bytes): "
                   f"{body[:PAYLOAD_LOG_LIMIT].decode('utf-8', 'replace')!r}")
        return EXIT_OK
    try:
        ev = ADAPTERS[agent](raw)
    except BadPayload as exc:
        record.log(f"{exc}; payload: {_clip(raw)}")
        return EXIT_OK
    from .config import load

    config = load(root, store)
    for problem in config.problems:
        record.log(f"config: {problem}")
    try:
        reply = _map(ev, make_port(config, record), record, config)
    except Exception as exc:  # never in the agent's way: log it, with the payload
        return failed(ev.agent, ev.name, ev.kind, raw, exc, record, config, stderr)
    _print_reply(ev, reply, stdout)
    return EXIT_OK


def failed(agent: str, name: str, kind: str | None, raw, exc, record: AgentRecord, config,
           stderr) -> int:
    """A payload that could not be recorded: a line in the hook log (with the payload), and exit 0
    unless the user asked prompts and tool calls to be blocked when that happens."""
    code = getattr(exc, "code", type(exc).__name__)
    record.log(f"{agent} {name}: not recorded: [{code}] {exc}; payload: {_clip(raw)}")
    if config.block and kind in ("prompt", "pre-tool"):
        print(f"turnback could not record this {name} ({exc}); blocked because "
              "[hooks] block = true", file=stderr)
        return EXIT_BLOCK
    return EXIT_OK


def lost(agent: str, raw: dict, root, store, exc) -> int:
    """The fast path reached the owner but lost the exchange (`fast._lost`)."""
    from .config import load

    try:
        ev = ADAPTERS[agent](raw)
        name, kind = ev.name, ev.kind
    except BadPayload:
        name = raw.get("hook_event_name") if isinstance(raw, dict) else None
        name, kind = str(name or "event"), None
    return failed(agent, name, kind, raw, exc, AgentRecord(store), load(Path(root), Path(store)),
                  sys.stderr)


def _map(ev, port, record: AgentRecord, config):
    from .mapper import Mapper

    # One hook at a time per workspace: parallel tool calls queue here, so each sees the others'
    # notes. The port closes inside the lock: a direct-path hook releases the store's lease before
    # the next hook may open it (closed after the lock, the next one met the lease and was refused).
    with record.locked() as data:
        try:
            return Mapper(ev, port, data, config, record.log).run()
        finally:
            port.close()


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
    text = json.dumps(raw, default=str)
    return text if len(text) <= PAYLOAD_LOG_LIMIT else text[:PAYLOAD_LOG_LIMIT] + "…"
