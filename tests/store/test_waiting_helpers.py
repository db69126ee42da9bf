"""`waiting.in_thread` keeps its helper threads for the next call (starting one per call cost
0.45 ms, twice for every served capture and step), yet no call ever waits for another: a call that
finds every helper busy starts one more."""

from __future__ import annotations

import threading
import time

import pytest

from turnback.store import waiting


def _until_idle(helpers, n: int) -> None:
    """Gate: `n` helpers are waiting for work (a helper answers, then counts itself idle)."""
    deadline = time.monotonic() + 10
    while helpers._idle < n:
        assert time.monotonic() < deadline, "the helper never became idle"
        time.sleep(0)


def test_a_finished_helper_takes_the_next_call():
    helpers = waiting._Helpers()
    threads, done = [], [threading.Event(), threading.Event()]
    helpers.submit(lambda: (threads.append(threading.current_thread()), done[0].set()))
    assert done[0].wait(10)
    _until_idle(helpers, 1)
    helpers.submit(lambda: (threads.append(threading.current_thread()), done[1].set()))
    assert done[1].wait(10)
    assert threads[0] is threads[1] and threads[0] is not threading.current_thread()
    assert threads[0].daemon  # a process that must exit is never held by an idle helper
    assert waiting.in_thread(threading.current_thread).result(10) is not threading.current_thread()


def test_a_call_never_waits_for_a_busy_helper():
    gate = threading.Event()
    entered = threading.Event()

    def held():
        entered.set()
        return gate.wait(10)

    busy = [waiting.in_thread(held) for _ in range(3)]  # every idle helper busy, and more
    assert entered.wait(10)
    quick = waiting.in_thread(lambda: threading.current_thread())
    try:
        helper = quick.result(5)  # answered while the three are still held
        assert not gate.is_set() and not any(f.done() for f in busy)
        assert helper is not threading.current_thread()
    finally:
        gate.set()
    assert all(f.result(10) is True for f in busy)


def test_an_error_is_raised_where_the_job_waits_and_the_helper_lives_on():
    def fail():
        raise OSError(5, "injected")

    job = waiting.wait_in_slices(waiting.in_thread(fail))
    with pytest.raises(OSError, match="injected"):
        while True:
            next(job)
    assert waiting.in_thread(lambda: 7).result(10) == 7


def test_an_idle_helper_ends_and_a_later_call_starts_another(monkeypatch):
    monkeypatch.setattr(waiting, "IDLE_SECONDS", 0.01)
    helpers = waiting._Helpers()
    ran, first_done = [], threading.Event()

    def task():
        ran.append(threading.current_thread())
        first_done.set()

    helpers.submit(task)
    assert first_done.wait(10)
    ran[0].join(10)  # idle past IDLE_SECONDS: it ends (a join that returned means it did)
    assert not ran[0].is_alive() and helpers._idle == 0
    second_done = threading.Event()
    helpers.submit(lambda: (ran.append(threading.current_thread()), second_done.set()))
    assert second_done.wait(10) and ran[1] is not ran[0]


def test_in_thread_runs_on_a_helper_that_was_already_there():
    waiting.in_thread(lambda: None).result(10)
    _until_idle(waiting._helpers, 1)
    there = set(threading.enumerate())
    helper = waiting.in_thread(threading.current_thread).result(10)
    assert helper in there and helper is not threading.current_thread()


def test_an_idle_helper_keeps_nothing_of_the_calls_it_ran():
    """A Thread keeps its `args` until it ends: the first call handed to a new helper was kept, with
    its arguments and its result, for as long as the helper lived (15-20 MiB at 250,000 files)."""
    import gc
    import weakref

    class Table:  # a call's big argument and its result
        pass

    helpers = waiting._Helpers()
    arg, done = Table(), threading.Event()
    kept = [weakref.ref(arg)]

    def first(table=arg):
        out = Table()
        kept.append(weakref.ref(out))
        done.set()
        return out

    helpers.submit(first)
    del arg, first
    assert done.wait(10)
    _until_idle(helpers, 1)
    gc.collect()
    assert all(ref() is None for ref in kept)  # the helper waits on, holding none of it
