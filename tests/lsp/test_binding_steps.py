"""The waits that follow a job's own change are binding (`store/waiting.binding_steps`): a cancel
that lands in them lets the job run to its end and answers with its outcome, as a cancel during a
transaction's apply does. Before the change a cancel still closes the job. Settle's publication,
turn begin's journal sync and session start's publication wait this way (they used to be one
synchronous call, where no cancel could land)."""

from __future__ import annotations

import asyncio

import pytest

from turnback.lsp.slices import run_job
from turnback.store import waiting


def _job(changed: list):
    yield "looking"  # before the change: cancellable
    changed.append("settled")

    def publication():
        for _ in range(3):
            yield None  # a wait in slices
        return "published"

    return (yield from waiting.binding_steps(publication()))


async def _run_and_cancel_at(first_value, changed):
    task, sent = None, []

    def on_step(value):
        if (value is first_value or value == first_value) and not sent:
            sent.append(value)
            task.cancel()  # once; it lands at the next breath between slices

    task = asyncio.ensure_future(run_job(_job(changed), on_step=on_step, budget=0.0))
    return await task


async def test_a_cancel_in_the_waits_after_the_change_runs_the_job_to_its_outcome():
    changed: list = []
    assert await _run_and_cancel_at(waiting.BOUND, changed) == "published"
    assert changed == ["settled"]


async def test_a_cancel_before_the_change_closes_the_job():
    changed: list = []
    with pytest.raises(asyncio.CancelledError):
        await _run_and_cancel_at("looking", changed)
    assert changed == []


def test_settle_waits_bound_from_its_record_on(agent):
    a = agent()
    n = a.begin("a turn")
    a.write("a.txt", "1")
    job = a.wb.turns.settle_job({"turn": n})
    values = []
    while True:
        try:
            values.append(next(job))
        except StopIteration as done:
            assert "headSeq" in done.value
            break
        if values[-1] is waiting.BOUND:
            assert a.wb.state.turns[-1].state == "settled"  # the change came first
    first = values.index(waiting.BOUND)
    assert all(v is waiting.BOUND for v in values[first:])


def _settle_over_a_slow_sweep_sync(agent, events: list):
    """A running turn whose file a shell changed, and its settle job, whose sweep syncs the capture
    record in three slices (a busy disk); `events` hears the turn's state as the sync starts, then
    "finished"."""
    a = agent()
    n = a.begin("a turn")
    a.write("a.txt", "changed behind our back")
    book = a.wb.book

    def slow_sync(real=book.iter_sync):
        def job():
            events.append(a.wb.state.turns[-1].state)
            for _ in range(3):
                yield None
            yield from real()
            events.append("finished")
        return job()

    book.iter_sync = slow_sync
    return a, a.wb.turns.settle_job({"turn": n})


def test_a_settle_sweep_whose_sync_takes_steps_stays_cancellable_until_the_settle(agent):
    """The settle sweep finds a shell's change and syncs its capture record in slices: those waits
    bind the sweep's own record (finished if cut off), not the settle, which has changed nothing
    yet. Run as one more step each, they must not reach the caller as BOUND."""
    events: list = []
    a, job = _settle_over_a_slow_sweep_sync(agent, events)
    values = []
    while True:
        try:
            values.append(next(job))
        except StopIteration:
            break
        if values[-1] is waiting.BOUND:
            assert a.wb.state.turns[-1].state == "settled"  # the change came first
    assert events[:2] == ["running", "finished"]  # the sweep's sync ran, before the settle record
    assert waiting.BOUND in values


def test_a_settle_cut_off_in_its_sweeps_sync_finishes_the_sync_and_leaves_the_turn_running(agent):
    events: list = []
    a, job = _settle_over_a_slow_sweep_sync(agent, events)
    while events != ["running"]:
        assert next(job) is not waiting.BOUND  # a cancel may still close the settle here
    job.close()  # a cancel, in the sweep's sync
    assert events == ["running", "finished"]  # its capture record is durable all the same
    assert a.wb.state.turns[-1].state == "running"  # and the settle never happened
