"""`TURNBACK_LOOP_TRACE`: a loop held past the threshold is named with the stack that holds it, and
how long it lasted once it runs again. The hold is a gate the tracer's own report opens."""

import asyncio
import logging
import re
import threading
import time

from turnback.lsp import stalls

GATE = 30.0


class _Seen(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []
        self.reported = threading.Event()
        self.ended = threading.Event()

    def emit(self, record):
        text = record.getMessage()
        self.messages.append(text)
        (self.reported if "so far" in text else self.ended).set()


def _holds_the_loop(seen: _Seen) -> bool:
    return seen.reported.wait(GATE)  # blocks the loop until the tracer has named this frame


def _traced(monkeypatch, before=lambda seen: None, *, settle=0.0) -> list[str]:
    """Start the tracer (50 ms) on a fresh loop, after `before(seen)`, wait `settle` seconds, hold
    the loop until the tracer names the hold, run until it reports the hold's end; its messages."""
    seen = _Seen()
    stalls.log.addHandler(seen)
    monkeypatch.setenv("TURNBACK_LOOP_TRACE", "50")
    monkeypatch.delenv("TURNBACK_LOOP_TRACE_FILE", raising=False)

    async def main():
        before(seen)
        tracer = stalls.start_from_env(asyncio.get_running_loop())
        assert tracer is not None
        if settle:
            await asyncio.sleep(settle)  # a few beats first: the loop runs freely
            assert not seen.messages
        assert _holds_the_loop(seen), "the hold was never reported"
        while not seen.ended.is_set():
            await asyncio.sleep(0.005)
        tracer.stop.set()

    try:
        asyncio.run(asyncio.wait_for(main(), GATE))
    finally:
        stalls.log.removeHandler(seen)
    return seen.messages


def test_a_held_loop_is_reported_with_its_stack_and_its_length(monkeypatch):
    messages = _traced(monkeypatch, settle=0.02)
    held, ended = messages[0], messages[-1]
    assert "_holds_the_loop" in held and "test_stalls.py" in held  # the frame that held it
    assert "in all" in ended and "its thread's" in ended  # how much of it the loop's own CPU was


def test_a_hold_counts_only_its_own_cpu(monkeypatch):
    """The CPU a hold reports is the loop thread's during the hold: not what the thread spent
    before the tracer started (a first hold counted it all: 544 ms for an 11 ms wait). The hold
    is a wait that begins before the tracer's first beat."""
    def work(_seen):
        start = time.thread_time()
        while time.thread_time() - start < 0.3:  # work before the tracer starts
            pass

    ended = _traced(monkeypatch, work)[-1]
    cpu = int(re.search(r"its thread's (\d+) ms", ended).group(1))
    assert cpu < 150, ended


def test_off_unless_asked(monkeypatch):
    loop = asyncio.new_event_loop()
    try:
        monkeypatch.delenv("TURNBACK_LOOP_TRACE", raising=False)
        assert stalls.start_from_env(loop) is None
        monkeypatch.setenv("TURNBACK_LOOP_TRACE", "soon")
        assert stalls.start_from_env(loop) is None
    finally:
        loop.close()
