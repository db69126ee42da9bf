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


def _settle_over_a_slow_sync(agent, events: list, files: int = 1):
    """A running turn whose files a shell changed, and its settle job, whose journal syncs take
    three slices each (a busy disk); `events` hears the turn's state as a sync starts, then
    "finished"."""
    a = agent()
    n = a.begin("a turn")
    for i in range(files):
        a.write(f"f{i}.txt", "changed behind our back", capture=False)
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
    return a, a.wb.turns.settle_job({"turn": n, "answer": "durable"})


def test_a_settle_stays_cancellable_until_its_record_and_syncs_the_sweeps_with_it(agent):
    """The settle sweep finds a shell's change and records it; the journal is synced once, for
    that record and the settle's together, after the settle's record: every step before it is
    cancellable (never BOUND), every step from it on is bound."""
    events: list = []
    a, job = _settle_over_a_slow_sync(agent, events)
    values = []
    while True:
        try:
            values.append(next(job))
        except StopIteration:
            break
        if values[-1] is waiting.BOUND:
            assert a.wb.state.turns[-1].state == "settled"  # the change came first
    assert events == ["settled", "finished"]  # one sync, after the settle's record
    assert waiting.BOUND in values
    assert a.wb.state.turns[-1].files  # the sweep's record made it


def test_a_settle_cut_off_in_its_sweep_syncs_what_the_sweep_recorded_and_leaves_the_turn_running(
        agent):
    """Cut off after its sweep recorded changes (a sweep of many changes yields between them),
    before the settle's record: what the sweep recorded is synced before the job lets go."""
    from turnback.capture.recorder import CHANGE_CHUNK

    events: list = []
    a, job = _settle_over_a_slow_sync(agent, events, files=CHANGE_CHUNK + 1)
    journal = a.wb.book.journal
    while not a.wb.state.turns[-1].files:
        assert next(job) is not waiting.BOUND  # a cancel may still close the settle here
    assert not journal.clean  # recorded, not yet synced
    job.close()  # a cancel, inside the sweep
    assert events == ["running", "finished"]  # its capture records are durable all the same
    assert journal.clean
    assert a.wb.state.turns[-1].state == "running"  # and the settle never happened
