"""The contract's requests, as a table: method name, how it runs (its `Kind`), and the workbench
call behind it. `runners.py` has one runner per kind; `server.py` registers the table.

Every `turnback/a/b` method is also the `workspace/executeCommand` command `turnback.a.b` whose
`arguments` are `[params]`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

from ..workbench.params import obj


class Kind(str, enum.Enum):
    """How a request runs: the closed set `runners.RUNNERS` has one runner for each."""

    READ = "read"          # answered at once, never waits for the mutation lock
    MUTATE = "mutate"      # one workbench call under the server's mutation lock
    JOB = "job"            # a workbench job (generator) under the mutation lock, a slice at a time
    READ_JOB = "read-job"  # a job that only reads (a diff): sliced like a job, may read any session
    COLLECT = "collect"    # a collection, holding the mutation lock per slice only
    HOOK = "hook"          # an agent hook's whole event, mapped by the owner (hookhost.py)


@dataclass(frozen=True)
class Method:
    name: str
    kind: Kind
    call: Callable[[Any, Any], Any] | None  # (workbench, params) -> result or job
    title: str = ""

    @property
    def command(self) -> str:
        return command_name(self.name)


def command_name(method: str) -> str:
    return method.replace("/", ".")


def _info(wb, params):
    obj(params)
    info = wb.info()
    running = wb.state.running
    info.setdefault("running", running.n if running is not None else None)  # for thin clients
    watcher = getattr(wb, "watcher", None)
    info["watcher"] = watcher.info() if watcher is not None else None
    listener = getattr(wb, "listener", None)  # the socket's clients and budgets (budgets.py)
    info["sockets"] = listener.stats() if listener is not None and listener.path else None
    return info


def _status(wb, params):
    obj(params)
    return wb.status()


METHODS: list[Method] = [
    Method("turnback/session/info", Kind.READ, _info),
    Method("turnback/session/status", Kind.READ, _status),
    Method("turnback/session/log", Kind.READ, lambda wb, p: wb.sessions.log(p)),
    Method("turnback/session/list", Kind.READ, lambda wb, p: wb.sessions.list(p)),
    Method("turnback/session/start", Kind.JOB, lambda wb, p: wb.sessions.start_params_job(p),
           "turnback: starting a session"),
    Method("turnback/fork/prepare", Kind.JOB, lambda wb, p: wb.fork.prepare_job(p),
           "turnback: preparing the fork"),
    Method("turnback/fork/confirm", Kind.JOB, lambda wb, p: wb.fork.confirm_job(p), "turnback: fork"),
    Method("turnback/turn/begin", Kind.JOB, lambda wb, p: wb.turns.begin_job(p), "turnback: sweeping the workspace"),
    Method("turnback/turn/capture", Kind.JOB, lambda wb, p: wb.turns.capture_job(p),
           "turnback: capturing"),
    Method("turnback/turn/step", Kind.JOB, lambda wb, p: wb.turns.step_job(p),
           "turnback: recording a step"),
    Method("turnback/agent/transcript", Kind.MUTATE, lambda wb, p: wb.turns.agent_transcript(p)),
    Method("turnback/workflow/set", Kind.MUTATE, lambda wb, p: wb.turns.workflow_set(p)),
    Method("turnback/workflow/get", Kind.READ, lambda wb, p: wb.turns.workflow_get(p)),
    Method("turnback/turn/respond", Kind.MUTATE, lambda wb, p: wb.turns.respond(p)),
    Method("turnback/turn/settle", Kind.JOB, lambda wb, p: wb.turns.settle_job(p), "turnback: settling the turn"),
    Method("turnback/rewind/prepare", Kind.JOB, lambda wb, p: wb.rewind.prepare_job(p),
           "turnback: preparing the rewind"),
    Method("turnback/rewind/commit", Kind.JOB, lambda wb, p: wb.rewind.commit_job(p),
           "turnback: rewind"),
    Method("turnback/restore/prepare", Kind.JOB, lambda wb, p: wb.restore.prepare_job(p),
           "turnback: preparing the restore"),
    Method("turnback/restore/commit", Kind.JOB, lambda wb, p: wb.restore.commit_job(p),
           "turnback: restore"),
    Method("turnback/redo/list", Kind.READ_JOB, lambda wb, p: wb.redo.list_job(p),
           "turnback: listing what Redo can bring back"),
    Method("turnback/redo/prepare", Kind.JOB, lambda wb, p: wb.redo.prepare_job(p),
           "turnback: preparing the redo"),
    Method("turnback/redo/commit", Kind.JOB, lambda wb, p: wb.redo.commit_job(p),
           "turnback: redo"),
    # what a turn (or every turn from K on) changed, and one image's bytes (workbench/diffs.py)
    Method("turnback/diff", Kind.READ_JOB, lambda wb, p: wb.diffs.diff_job(p), "turnback: diffing"),
    Method("turnback/image/read", Kind.READ_JOB, lambda wb, p: wb.diffs.image_job(p),
           "turnback: reading an image"),
    Method("turnback/directive/upsert", Kind.MUTATE, lambda wb, p: wb.directives.upsert(p)),
    Method("turnback/directive/record", Kind.MUTATE, lambda wb, p: wb.directives.record(p)),
    Method("turnback/directive/list", Kind.READ, lambda wb, p: wb.directives.list(p)),
    Method("turnback/collect/run", Kind.COLLECT, None, "turnback: collecting unreferenced data"),
    Method("turnback/recovery/list", Kind.READ, lambda wb, p: wb.recovery.list(p)),
    Method("turnback/recovery/resolve", Kind.MUTATE, lambda wb, p: wb.recovery.resolve(p)),
    Method("turnback/ownership/takeover", Kind.MUTATE, lambda wb, p: _takeover(wb, p)),
]


def _takeover(wb, params):
    from ..workbench.ownership import takeover

    return takeover(wb, params)

