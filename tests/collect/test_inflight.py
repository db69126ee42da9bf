"""Capture running between collection slices never loses an in-flight object.

The dangerous object is an old one that nothing retained references (it was only in an obsolete
head) and that a capture brings back: the capture reuses the existing file rather than writing a new
one, so the object looks old to the collector. It must survive whether the capture is a synchronous
one (recorded in the journal before the collector's next slice) or a sweep job whose object batch is
still open when the collector wants to delete.
"""

from __future__ import annotations

import shutil

import pytest

from .conftest import age_objects, assert_sound, open_wb, turn

TEXT = "ephemeral\n"


@pytest.fixture
def template(fast_tmp):
    ws = fast_tmp / "template"
    ws.mkdir()
    (ws / "a.txt").write_text("start\n")
    for i in range(150):  # enough entries that a sweep yields between its parts
        (ws / f"z{i:03}.txt").write_text(f"{i}\n")
    wb = open_wb(ws)
    turn(wb, ws, "one", [("a.txt", "one\n")])
    # Inside turn two, the ephemeral bytes are published in an unsettled head, then replaced.
    turn(wb, ws, "two", [("a.txt", TEXT), ("a.txt", "final\n")])
    digest = wb.store.objects.hasher.digest(TEXT.encode())
    wb.close()
    age_objects(wb.store)
    # Without interference the ephemeral object is collected: it is the case under test.
    probe = fast_tmp / "probe"
    shutil.copytree(ws, probe, symlinks=True)
    wb = open_wb(probe)
    slices = wb.collection.run()["slices"]
    assert not wb.store.objects.has(digest)
    wb.close()
    return ws, digest, slices, fast_tmp


def _step(job, n=1):
    for _ in range(n):
        try:
            next(job)
        except StopIteration as done:
            return True, done.value
    return False, None


def _finish(job):
    done, value = _step(job, 10**6)
    assert done
    return value


def _check(ws, wb, digest):
    assert wb.store.objects.has(digest)
    assert wb.state.known["a.txt"] == digest
    wb.close()  # publishes the state that references it
    assert_sound(ws / ".turnback")
    wb = open_wb(ws)
    assert wb.state.known["a.txt"] == digest
    assert wb.store.objects.verify(digest)
    wb.close()


def test_synchronous_capture_between_any_two_slices(template):
    ws0, digest, slices, scratch = template
    for k in range(0, slices + 1):
        ws = scratch / f"sync{k}"
        shutil.copytree(ws0, ws, symlinks=True)
        wb = open_wb(ws, publish_interval=3600.0)
        job = wb.collection.job()
        done, _ = _step(job, k)
        (ws / "a.txt").write_text(TEXT)
        wb.turns.capture({"uris": [(ws / "a.txt").as_uri()]})  # between turns: a loose change
        if not done:
            _finish(job)
        _check(ws, wb, digest)
        shutil.rmtree(ws)


def test_sweep_job_with_an_open_batch_between_any_two_slices(template):
    ws0, digest, slices, scratch = template
    waited = False
    for k in range(0, slices + 1):
        ws = scratch / f"sweep{k}"
        shutil.copytree(ws0, ws, symlinks=True)
        wb = open_wb(ws, publish_interval=3600.0)
        job = wb.collection.job()
        done, stats = _step(job, k)
        (ws / "a.txt").write_text(TEXT)
        begin = wb.turns.begin_job({"prompt": "three"})
        next(begin)  # the sweep has hashed a.txt (reusing the old object) and yielded, batch open
        assert wb.store.objects._batch is not None
        if not done:
            done, stats = _step(job, 40)  # the collector runs while the batch is open
        _finish(begin)
        if not done:
            stats = _finish(job)
        waited = waited or stats["waits"] > 0
        _check(ws, wb, digest)
        shutil.rmtree(ws)
    assert waited  # at least one interleaving had the collector wait for the batch
