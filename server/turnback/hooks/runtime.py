"""`turnback hook AGENT`: one payload from standard input, mapped onto the session, never in the way.

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

PAYLOAD_LOG_LIMIT = 4096
EXIT_OK, EXIT_BLOCK = 0, 2


def find_workspace(cwd: str | None) -> tuple[Path, Path] | None:
    """The workspace (and its store) that holds `cwd`: the nearest folder, going up, with a
    turnback store or a `turnback.toml`."""
    if not cwd:
        return None
    try:
        here = Path(cwd).resolve()
    except (OSError, RuntimeError):
        return None
    for folder in (here, *here.parents):
        if (folder / ".turnback" / "FORMAT").is_file() or (folder / "turnback.toml").is_file():
            return folder, folder / ".turnback"
    return None


def run(agent: str, stdin=None, stdout=None, stderr=None, event: str | None = None) -> int:
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    try:
        body = stdin.read()
    except (OSError, ValueError):
        body = b""
    if isinstance(body, str):
        body = body.encode("utf-8", "replace")
    try:
        raw = json.loads(body)
    except ValueError:
        raw = None
    if isinstance(raw, dict) and event and not raw.get("hook_event_name"):
        raw["hook_event_name"] = event
    cwd = raw.get("cwd") if isinstance(raw, dict) and isinstance(raw.get("cwd"), str) else os.getcwd()
    place = find_workspace(cwd)
    if place is None:
        return EXIT_OK
    root, store = place
    record = AgentRecord(store)
    if raw is None:
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
        reply = _handle(ev, root, store, record, config)
    except Exception as exc:  # never in the agent's way: log it, with the payload
        code = getattr(exc, "code", type(exc).__name__)
        record.log(f"{agent} {ev.name}: not recorded: [{code}] {exc}; payload: {_clip(raw)}")
        if config.block and ev.kind in ("prompt", "pre-tool"):
            print(f"turnback could not record this {ev.name} ({exc}); blocked because "
                  "[hooks] block = true", file=stderr)
            return EXIT_BLOCK
        return EXIT_OK
    _print_reply(ev, reply, stdout)
    return EXIT_OK


def _handle(ev, root: Path, store: Path, record: AgentRecord, config):
    from .mapper import Mapper
    from .port import LazyPort

    port = LazyPort(root, store, start_owner=config.start_owner and not _env_direct(),
                    log=record.log)
    try:
        # One hook at a time per workspace: parallel tool calls queue here, so each sees the
        # others' notes, and a direct-path hook never meets another over the store's lease.
        with record.locked() as data:
            return Mapper(ev, port, data, config, record.log).run()
    finally:
        port.close()


def _env_direct() -> bool:
    return os.environ.get("TURNBACK_HOOK_DIRECT") == "1"


def _print_reply(ev, reply, stdout) -> None:
    """What the agent reads back, in its own shape; nothing at all when there is nothing to say."""
    if reply is None or not (reply.context or reply.message):
        return
    out: dict = {}
    if reply.context and ev.kind in ("session-start", "prompt") and ev.agent != "copilot":
        out["hookSpecificOutput"] = {"hookEventName": ev.name, "additionalContext": reply.context}
    if reply.message and ev.agent != "copilot":
        out["systemMessage"] = reply.message
    if out:
        stdout.write(json.dumps(out) + "\n")
        stdout.flush()


def _clip(raw) -> str:
    text = json.dumps(raw, default=str)
    return text if len(text) <= PAYLOAD_LOG_LIMIT else text[:PAYLOAD_LOG_LIMIT] + "…"
