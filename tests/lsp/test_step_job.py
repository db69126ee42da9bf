"""`turnback/turn/step` is a job: the tool result's object is written (with its fsyncs) on a helper
thread and the journal synced on another, while the loop serves other requests (a tool result's
fsync behind a busy disk held the loop 224 ms in a hook storm). A cancel before the record leaves
no step."""

from __future__ import annotations

import threading

from turnback.lsp.methods import METHODS
from turnback.store.objects import ObjectStore
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
