"""`turnback/turn/step` and `turnback/turn/capture` are jobs: the tool result's object, or the
captured files' objects, are written (with their fsyncs) on a helper thread and the journal synced on
another, while the loop serves other requests (a tool result's fsync behind a busy disk held the loop
224 ms in a hook storm). A cancel before the record leaves nothing recorded."""

from __future__ import annotations

import threading

from turnback.capture import reader
from turnback.lsp.methods import METHODS
from turnback.store.objects.objectstore import ObjectStore
from turnback.workbench import Workbench


def _running(tmp_path):
    wb = Workbench.open(tmp_path)
    n = wb.run(wb.turns.begin_job({"prompt": "go"}))["turn"]
    return wb, n


def test_the_step_writes_its_result_off_the_jobs_thread(tmp_path, monkeypatch):
    wb, n = _running(tmp_path)
    try:
        me = threading.current_thread()
        writers = []
        real_put = ObjectStore.put

        def put(self, data):
            writers.append(threading.current_thread())
            return real_put(self, data)
        monkeypatch.setattr(ObjectStore, "put", put)
        job = wb.turns.step_job({"turn": n, "kind": "shell", "scope": "host", "result": "ok\n" * 500})
        out = wb.run(job)
        assert writers and all(t is not me for t in writers)
        (step,) = wb.state.turn(n).steps
        assert step.id == out["stepId"] and wb.store.objects.get(step.result) == b"ok\n" * 500
        (method,) = [m for m in METHODS if m.name == "turnback/turn/step"]
        assert method.kind == "job"  # the server runs it in slices, not as one call
    finally:
        wb.close()


def test_a_step_cancelled_while_its_result_is_written_records_nothing(tmp_path, monkeypatch):
    wb, n = _running(tmp_path)
    try:
        entered, gate = threading.Event(), threading.Event()
        real_put = ObjectStore.put

        def slow_put(self, data):
            entered.set()
            assert gate.wait(10)
            return real_put(self, data)
        monkeypatch.setattr(ObjectStore, "put", slow_put)
        job = wb.turns.step_job({"turn": n, "kind": "shell", "scope": "host", "result": "partial"})
        while not entered.is_set():
            next(job)
        gate.set()  # the job is parked in its wait; the close waits for the helper to end
        job.close()
        assert wb.state.turn(n).steps == []
    finally:
        gate.set()
        wb.close()


def test_a_capture_job_reads_off_the_jobs_thread_and_answers_as_the_call_does(tmp_path, monkeypatch):
    wb, n = _running(tmp_path)
    try:
        (tmp_path / "a.txt").write_text("one\n")
        (tmp_path / "b.txt").write_text("two\n")
        me = threading.current_thread()
        readers = []
        real = reader.read_image

        def recorded(ws, rel, *a, **kw):
            readers.append(threading.current_thread())
            return real(ws, rel, *a, **kw)
        monkeypatch.setattr("turnback.capture.recorder.read_image", recorded)
        uris = [wb.ws.to_uri("a.txt"), "file:///elsewhere/x.txt", wb.ws.to_uri("b.txt")]
        got = wb.run(wb.turns.capture_job({"uris": uris}))
        assert len(readers) == 2 and all(t is not me for t in readers)
        assert [c["uri"] for c in got["captured"]] == uris
        assert [g["reason"] for g in got["gaps"]] == ["outside-workspace"]
        files = wb.state.turn(n).files
        assert sorted(files) == ["a.txt", "b.txt"]
        assert wb.store.objects.get(got["captured"][2]["digest"]) == b"two\n"
        (tmp_path / "a.txt").write_text("one, then more\n")
        monkeypatch.undo()
        again = wb.turns.capture({"uris": uris[:1]})  # the one-call form, for the command line
        assert wb.store.objects.get(again["captured"][0]["digest"]) == b"one, then more\n"
        (method,) = [m for m in METHODS if m.name == "turnback/turn/capture"]
        assert method.kind == "job"
    finally:
        wb.close()


def test_a_capture_cancelled_while_it_reads_records_nothing(tmp_path, monkeypatch):
    wb, n = _running(tmp_path)
    try:
        (tmp_path / "a.txt").write_text("one\n")
        entered, gate = threading.Event(), threading.Event()
        real = reader.read_image

        def slow(ws, rel, *a, **kw):
            entered.set()
            assert gate.wait(10)
            return real(ws, rel, *a, **kw)
        monkeypatch.setattr("turnback.capture.recorder.read_image", slow)
        last = wb.state.last_op
        job = wb.turns.capture_job({"uris": [wb.ws.to_uri("a.txt")]})
        while not entered.is_set():
            next(job)
        gate.set()
        job.close()
        assert wb.state.last_op == last and "a.txt" not in wb.state.turn(n).files
    finally:
        gate.set()
        wb.close()


def test_the_ownership_check_stays_on_the_jobs_thread_and_a_scratch_file_syncs_nothing(tmp_path,
                                                                                     monkeypatch):
    """Losing the lease changes the session (`lose_ownership`), so the check is never a helper's;
    and a capture that records nothing (an editor's scratch file) makes no journal fsync."""
    from turnback.store.journal import Journal
    from turnback.timeline.book import Book

    wb, n = _running(tmp_path)
    try:
        (tmp_path / "a.txt").write_text("one\n")
        (tmp_path / ".notes.txt.swp").write_text("scratch\n")
        me = threading.current_thread()
        checks, syncs = [], []
        real_check, real_sync = Book.require_owner, Journal.sync

        def check(self):
            checks.append(threading.current_thread())
            return real_check(self)

        def sync(self):
            syncs.append(1)
            return real_sync(self)
        monkeypatch.setattr(Book, "require_owner", check)
        monkeypatch.setattr(Journal, "sync", sync)
        wb.run(wb.turns.capture_job({"uris": [wb.ws.to_uri("a.txt")]}))
        assert checks and all(t is me for t in checks) and len(syncs) == 1
        syncs.clear()
        assert wb.recorder.junk(".notes.txt.swp")
        last = wb.state.last_op
        wb.turns.capture({"uris": [wb.ws.to_uri(".notes.txt.swp")]})
        wb.run(wb.turns.capture_job({"uris": [wb.ws.to_uri(".notes.txt.swp")]}))
        assert wb.state.last_op == last and syncs == []
    finally:
        wb.close()
