"""One runner per request `Kind` (methods.py): how a contract method is run once the server has
found its workbench. `TurnbackServer.call` looks the runner up in RUNNERS; a new kind is a new
runner here, and the table's completeness is checked at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..errors import InvalidParams
from .hookhost import handle_event
from .methods import Kind, Method
from .progress import token_of
from .slices import Gate, run_job

if TYPE_CHECKING:
    from ..workbench import Workbench
    from .server import TurnbackServer

Runner = Callable[["TurnbackServer", Method, "Workbench", Any], Awaitable[Any]]


def _call(spec: Method, wb: Workbench, params: Any) -> Any:
    assert spec.call is not None, f"{spec.name} has no workbench call"
    return spec.call(wb, params)


async def run_read(server: TurnbackServer, spec: Method, wb: Workbench, params: Any) -> Any:
    return _call(spec, wb, params)


async def run_hook(server: TurnbackServer, spec: Method, wb: Workbench, params: Any) -> Any:
    return await handle_event(server, params)  # its own calls come back through call, each guarded


async def run_mutate(server: TurnbackServer, spec: Method, wb: Workbench, params: Any) -> Any:
    was_owner = wb.is_owner
    wb.sessions.guard(params)  # a mutation aimed at a frozen or parked session is refused
    async with server.lock:
        result = _call(spec, wb, params)
    if not was_owner and wb.is_owner:  # a confirmed takeover: serve as the owner now
        server.became_owner()
    server.kick_collection()
    return result


async def run_job_request(server: TurnbackServer, spec: Method, wb: Workbench, params: Any) -> Any:
    if spec.kind is not Kind.READ_JOB:  # a read in slices may read a frozen or parked session
        wb.sessions.guard(params)
    token = token_of(params)
    async with server.lock:
        job = _call(spec, wb, params)
        server.work_progress.begin(token, spec.title)
        try:
            result = await run_job(job, on_step=server.work_progress.job_reporter(token),
                                   gate=Gate.for_method(spec.name))
        finally:
            server.work_progress.end(token, "done")
    server.kick_collection()
    return result


async def run_collect(server: TurnbackServer, spec: Method, wb: Workbench, params: Any) -> Any:
    wb.sessions.guard(params)
    if not isinstance(params, (dict, type(None))):
        raise InvalidParams(f"params must be an object, not {type(params).__name__}")
    return await server.collection.collect(token_of(params), params=params)


RUNNERS: dict[Kind, Runner] = {
    Kind.READ: run_read,
    Kind.HOOK: run_hook,
    Kind.MUTATE: run_mutate,
    Kind.JOB: run_job_request,
    Kind.READ_JOB: run_job_request,
    Kind.COLLECT: run_collect,
}
assert set(RUNNERS) == set(Kind), "every request kind has its runner"
