"""A long job shows its progress on a terminal, and nothing anywhere else."""

from __future__ import annotations

import io

from turnback.capture.sweep import SweepProgress
from turnback.cli import progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def _job(clock, n=6):
    for i in range(n):
        clock[0] += 0.4  # a sweep that looks at 1,000 files every 0.4 s
        yield SweepProgress(i * 1000, i * 900)
    return "done"


def _run(stream, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    gen = progress.shown(_job(clock), stream)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def test_a_terminal_sees_the_files_looked_at_and_a_clean_line_at_the_end(monkeypatch):
    out = Tty()
    assert _run(out, monkeypatch) == "done"
    text = out.getvalue()
    assert "\rturnback: 2,000 files looked at, 1,800 read\rturnback: 4,000 files" in text  # twice a second
    assert "1,000 files" not in text  # nothing in its first second
    assert text.endswith("\r\033[K")


def test_a_pipe_sees_nothing(monkeypatch):
    out = io.StringIO()
    assert _run(out, monkeypatch) == "done"
    assert out.getvalue() == ""
