"""The contract's requests, as a table: method name, how it runs, and the workbench call behind it.

Kinds:
* `read`    answered at once, never waits for the mutation lock (at most one slice of a job)
* `mutate`  one workbench call under the server's mutation lock
* `job`     a workbench job (generator) under the mutation lock, advanced a slice at a time
* `read-job` a job that only reads (a diff): sliced like a job, and it may read any session
* `collect` a collection, advanced a slice at a time holding the mutation lock per slice only

Every `turnback/a/b` method is also the `workspace/executeCommand` command `turnback.a.b` whose
`arguments` are `[params]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..workbench.params import obj


@dataclass(frozen=True)
class Method:
    name: str
    kind: str
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
    Method("turnback/session/info", "read", _info),
    Method("turnback/session/status", "read", _status),
    Method("turnback/session/log", "read", lambda wb, p: wb.sessions.log(p)),
    Method("turnback/session/list", "read", lambda wb, p: wb.sessions.list(p)),
    Method("turnback/session/start", "job", lambda wb, p: wb.sessions.start_params_job(p),
           "turnback: starting a session"),
    Method("turnback/fork/prepare", "job", lambda wb, p: wb.fork.prepare_job(p),
           "turnback: preparing the fork"),
    Method("turnback/fork/confirm", "job", lambda wb, p: wb.fork.confirm_job(p), "turnback: fork"),
    Method("turnback/turn/begin", "job", lambda wb, p: wb.turns.begin_job(p), "turnback: sweeping the workspace"),
    Method("turnback/turn/capture", "job", lambda wb, p: wb.turns.capture_job(p),
           "turnback: capturing"),
    Method("turnback/turn/step", "job", lambda wb, p: wb.turns.step_job(p),
           "turnback: recording a step"),
    Method("turnback/agent/transcript", "mutate", lambda wb, p: wb.turns.agent_transcript(p)),
    Method("turnback/workflow/set", "mutate", lambda wb, p: wb.turns.workflow_set(p)),
    Method("turnback/workflow/get", "read", lambda wb, p: wb.turns.workflow_get(p)),
    Method("turnback/turn/respond", "mutate", lambda wb, p: wb.turns.respond(p)),
    Method("turnback/turn/settle", "job", lambda wb, p: wb.turns.settle_job(p), "turnback: settling the turn"),
    Method("turnback/rewind/prepare", "job", lambda wb, p: wb.rewind.prepare_job(p),
           "turnback: preparing the rewind"),
    Method("turnback/rewind/commit", "job", lambda wb, p: wb.rewind.commit_job(p),
           "turnback: rewind"),
    Method("turnback/restore/prepare", "job", lambda wb, p: wb.restore.prepare_job(p),
           "turnback: preparing the restore"),
    Method("turnback/restore/commit", "job", lambda wb, p: wb.restore.commit_job(p),
           "turnback: restore"),
    Method("turnback/redo/list", "read-job", lambda wb, p: wb.redo.list_job(p),
           "turnback: listing what Redo can bring back"),
    Method("turnback/redo/prepare", "job", lambda wb, p: wb.redo.prepare_job(p),
           "turnback: preparing the redo"),
    Method("turnback/redo/commit", "job", lambda wb, p: wb.redo.commit_job(p),
           "turnback: redo"),
    # what a turn (or every turn from K on) changed, and one image's bytes (workbench/diffs.py)
    Method("turnback/diff", "read-job", lambda wb, p: wb.diffs.diff_job(p), "turnback: diffing"),
    Method("turnback/image/read", "read-job", lambda wb, p: wb.diffs.image_job(p),
           "turnback: reading an image"),
    Method("turnback/directive/upsert", "mutate", lambda wb, p: wb.directives.upsert(p)),
    Method("turnback/directive/record", "mutate", lambda wb, p: wb.directives.record(p)),
    Method("turnback/directive/list", "read", lambda wb, p: wb.directives.list(p)),
    Method("turnback/collect/run", "collect", None, "turnback: collecting unreferenced data"),
    Method("turnback/recovery/list", "read", lambda wb, p: wb.recovery.list(p)),
    Method("turnback/recovery/resolve", "mutate", lambda wb, p: wb.recovery.resolve(p)),
    Method("turnback/ownership/takeover", "mutate", lambda wb, p: _takeover(wb, p)),
]


def _takeover(wb, params):
    from ..workbench.ownership import takeover

    return takeover(wb, params)

