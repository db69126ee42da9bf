"""Fail or kill the Nth file-system operation, for every N, and prove the store is old or new.

Temp files left by an interrupted write are tolerated (fsck reports them as warnings; the owner sweeps
them with Store.sweep_temp). Everything else must be sound after every single fault.
"""

import shutil

import pytest

from sessionkit import assert_faulted
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.store.journal import Journal
from turnback.store.layout import Store
from turnback.store.objects.loose import CHUNK
from .conftest import SESSION_BODY_CODE, run_py, session_body

OLD, NEW = b"old content " * 10, b"new content " * 10


def assert_sound(path):
    report = fsck(path)
    assert report.ok, report.errors


def fail_every_op(action, check, reset=lambda: None, limit=200):
    """Run `action` with a fault at op 1, 2, ... until it completes before reaching the fault."""
    faulted = 0
    for n in range(1, limit):
        reset()
        with faultplan.faults(fail_at=n) as plan:
            try:
                action()
                completed = plan.count < n
            except faultplan.FaultInjected:
                completed = False
        faulted += plan.faulted > 0
        check(completed)
        if completed:
            assert_faulted(faulted, n - 1, "store operation failed at every operation")
            return n
    raise AssertionError("the operation never completed")


def crash_every_op(template, script, check, limit=200):
    """Copy the template store, run `script` in a child killed at op N, check; until it finishes."""
    work = template.parent / "work"
    crashed = 0
    for n in range(1, limit):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(template, work, symlinks=True)
        r = run_py(script.replace("STORE", repr(str(work))), env={"TURNBACK_CRASH_AT": str(n)})
        assert r.returncode in (0, faultplan.CRASH_EXIT), r.stderr
        crashed += r.returncode == faultplan.CRASH_EXIT
        check(work, r.returncode == 0)
        assert_sound(work)
        if r.returncode == 0:
            assert_faulted(crashed, n - 1, "store operation crashed at every operation")
            return n
    raise AssertionError("the operation never completed")


def old_or_new(store, digest, data):
    if store.objects.has(digest):
        assert store.objects.get(digest) == data


# ---------------------------------------------------------------- fail the Nth operation


@pytest.mark.slow
def test_fail_every_op_of_object_put(store):
    old = store.objects.put(OLD)
    new = store.hasher.digest(NEW)

    def check(completed):
        assert store.objects.get(old) == OLD
        old_or_new(store, new, NEW)
        assert store.objects.has(new) or not completed
        assert_sound(store.path)

    def reset():
        store.objects.remove(new)

    assert fail_every_op(lambda: store.objects.put(NEW), check, reset) > 5


@pytest.mark.slow
def test_fail_every_op_of_repairing_a_damaged_object(store):
    d = store.objects.put(NEW)
    damaged = b"X" + NEW[1:]

    def reset():
        fs.write_atomic(store.objects.path(d), damaged)

    def check(completed):
        assert store.objects.path(d).read_bytes() in (damaged, NEW)
        if completed:
            assert store.objects.get(d) == NEW

    fail_every_op(lambda: store.objects.put(NEW), check, reset)


@pytest.mark.slow
def test_fail_every_op_of_a_batch(store):
    blobs = [b"batch %d" % i * 20 for i in range(6)]
    digests = [store.hasher.digest(b) for b in blobs]

    def reset():
        for d in digests:
            store.objects.remove(d)

    def action():
        with store.objects.batch():
            for b in blobs:
                store.objects.put(b)

    def check(completed):
        for d, b in zip(digests, blobs):
            old_or_new(store, d, b)
            assert store.objects.has(d) or not completed
        assert_sound(store.path)

    fail_every_op(action, check, reset)


@pytest.mark.slow
def test_fail_every_op_of_a_streamed_put_file(store, tmp_path):
    src = tmp_path / "big"
    data = b"0123456789abcdef" * (CHUNK // 8 + 3)  # > 2 MiB, streamed in three chunks
    src.write_bytes(data)
    d = store.hasher.digest(data)

    def check(completed):
        old_or_new(store, d, data)
        assert store.objects.has(d) or not completed
        assert_sound(store.path)

    fail_every_op(lambda: store.objects.put_file(src), check, lambda: store.objects.remove(d))


@pytest.mark.slow
def test_fail_every_op_of_journal_append(store):
    jp = store.journal_path("s")
    old_frames = [{"n": 1}, {"n": 2, "data": b"x" * 50}]
    j, _, _ = Journal.open(jp)
    for f in old_frames:
        j.append(f)
    j.sync()
    j.close()
    pristine = jp.read_bytes()

    def reset():
        fs.write_atomic(jp, pristine)

    def action():
        j, _, _ = Journal.open(jp)
        try:
            j.append({"n": 3})
            j.append({"n": 4})
            j.sync()
        finally:
            j.close()

    def check(completed):
        assert_sound(store.path)
        j, frames, _ = Journal.open(jp)
        j.close()
        assert frames in (old_frames, old_frames + [{"n": 3}], old_frames + [{"n": 3}, {"n": 4}])
        assert frames == old_frames + [{"n": 3}, {"n": 4}] or not completed

    fail_every_op(action, check, reset)


@pytest.mark.slow
def test_fail_every_op_of_head_publish(store):
    body = session_body(store)
    first = store.heads.publish(parent=None, session="s", created=1.0, turn_count=1,
                                fork_point="f", settled=True, epoch=1, body=body)

    def reset():
        store.heads.retire(2)

    def action():
        store.heads.publish(parent=1, session="s", created=2.0, turn_count=2, fork_point="f",
                            settled=True, epoch=1, body=body)

    def check(completed):
        assert_sound(store.path)
        assert store.heads.list_seqs() in ([1], [1, 2])
        assert store.heads.read(1) == first
        if store.heads.list_seqs() == [1, 2]:
            assert store.heads.read(2).turn_count == 2
        assert store.heads.list_seqs() == [1, 2] or not completed

    fail_every_op(action, check, reset)


@pytest.mark.slow
def test_fail_every_op_of_store_creation(tmp_path):
    path = tmp_path / "s"

    def reset():
        shutil.rmtree(path, ignore_errors=True)

    def check(completed):
        if not completed:
            Store.open(path)  # a half-created store is finished on the next open
        assert_sound(path)

    assert fail_every_op(lambda: Store.open(path), check, reset) > 10


# ---------------------------------------------------------------- kill the process at the Nth operation

PRELUDE = """
from turnback.store.layout import Store
from turnback.store.journal import Journal
s = Store.open(STORE)
"""


@pytest.fixture
def template(tmp_path):
    s = Store.open(tmp_path / "template" / ".turnback")
    body = session_body(s, "old")
    s.heads.publish(parent=None, session="s", created=1.0, turn_count=1, fork_point="f",
                    settled=True, epoch=1, body=body)
    j, _, _ = Journal.open(s.journal_path("s"))
    j.append({"n": 1})
    j.sync()
    j.close()
    return s.path


@pytest.mark.slow
def test_crash_at_every_op_of_object_put(template):
    new = Store.open(template).hasher.digest(NEW)

    def check(work, completed):
        s = Store.open(work)
        from turnback.timeline.codec import StateCodec

        assert StateCodec(s.objects).read(s.heads.read(1).body).config["note"] == "old"
        old_or_new(s, new, NEW)
        assert s.objects.has(new) or not completed

    # How many operations the put makes depends on the store's digest seed (its fan-out folder may
    # exist already, or need a mkdir and a sync): counted on a copy, and every one of them crashed.
    counted = template.parent / "counted"
    shutil.copytree(template, counted, symlinks=True)
    with faultplan.faults() as plan:
        Store.open(counted).objects.put(NEW)
    assert plan.count >= 5, plan.log  # a temp made, written, synced, renamed; a folder synced
    assert crash_every_op(template, PRELUDE + f"s.objects.put({NEW!r})\n", check) == plan.count + 1


@pytest.mark.slow
def test_crash_at_every_op_of_batch_put(template):
    blobs = [b"crash batch %d" % i for i in range(4)]

    def check(work, completed):
        s = Store.open(work)
        for b in blobs:
            old_or_new(s, s.hasher.digest(b), b)
            assert s.objects.has(s.hasher.digest(b)) or not completed

    script = PRELUDE + f"with s.objects.batch():\n    [s.objects.put(b) for b in {blobs!r}]\n"
    assert crash_every_op(template, script, check) >= 4 * 3 + 4


@pytest.mark.slow
def test_crash_at_every_op_of_journal_append(template):
    def check(work, completed):
        j, frames, _ = Journal.open(Store.open(work).journal_path("s"))
        j.close()
        assert frames in ([{"n": 1}], [{"n": 1}, {"n": 2}])
        assert len(frames) == 2 or not completed

    script = PRELUDE + "j, _, _ = Journal.open(s.journal_path('s'))\nj.append({'n': 2})\nj.sync()\n"
    assert crash_every_op(template, script, check) == 4  # open, write, fsync, then done


@pytest.mark.slow
def test_crash_at_every_op_of_head_publish(template):
    def check(work, completed):
        s = Store.open(work)
        seqs = s.heads.list_seqs()
        assert seqs in ([1], [1, 2])
        if seqs == [1, 2]:
            from turnback.timeline.codec import StateCodec

            head = s.heads.read(2)
            assert head.parent == 1 and StateCodec(s.objects).read(head.body).config["note"] == "new"
        assert seqs == [1, 2] or not completed

    script = PRELUDE + SESSION_BODY_CODE + (
        "with s.objects.batch():\n    body = StateCodec(s.objects).write(new_session({'note': 'new'}))\n"
        "s.heads.publish(parent=1, session='s', created=2.0, turn_count=2, fork_point='f',"
        " settled=True, epoch=1, body=body)\n")
    assert crash_every_op(template, script, check) > 10
