"""One runner per request `Kind` (methods.py): how a contract method is run once the server has
found its workbench. `TurnbackServer.call` looks the runner up in RUNNERS; a new kind is a new
runner here, and the table's completeness is checked at import.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..errors import InvalidParams
from .hookhost import handle_event
from .methods import Kind, Method
from .progress import token_of
from .slices import Gate, run_job

if TYPE_CHECKING:
    from ..workbench import Workbench
    from .server import TurnbackServer

log = logging.getLogger(__name__)
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
    if isinstance(params, dict) and params.get("answer") == "durable":
        return await _answer_before_the_end(server, spec, wb, params)
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


_finishing: set[asyncio.Future[Any]] = set()


async def _answer_before_the_end(server: TurnbackServer, spec: Method, wb: Workbench,
                                 params: Any) -> Any:
    """A job that may answer before its end (a settle asked to answer once durable): its early
    answer (`early_answer` on a yielded value) is sent at once, and the rest of the job runs on in
    a task that still holds the mutation lock, so the next mutating request (a begin, a rewind)
    waits for it. Cancelled before the early answer, it behaves as any job (slices.run_job)."""
    token = token_of(params)
    await server.lock.acquire()
    try:
        job = _call(spec, wb, params)
        server.work_progress.begin(token, spec.title)
    except BaseException:
        server.lock.release()
        raise
    answered: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    report = server.work_progress.job_reporter(token)

    def on_step(value: Any) -> None:
        if report is not None:
            report(value)
        early = getattr(value, "early_answer", None)
        if early is not None and not answered.done():
            answered.set_result(early)

    runner = asyncio.ensure_future(run_job(job, on_step=on_step, gate=Gate.for_method(spec.name)))
    _finishing.add(runner)  # the loop keeps only a weak reference to a task

    def ended(task: asyncio.Future[Any]) -> None:
        _finishing.discard(task)
        server.work_progress.end(token, "done")
        server.lock.release()
        server.kick_collection()
        if answered.done() and not task.cancelled() and task.exception() is not None:
            log.error("%s failed after its answer: %s", spec.name, task.exception())

    runner.add_done_callback(ended)
    try:
        await asyncio.wait({runner, answered}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        runner.cancel()  # as a cancel reaches any job: closed unless past its binding point
        return await runner
    if answered.done():
        return answered.result()
    return runner.result()


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
