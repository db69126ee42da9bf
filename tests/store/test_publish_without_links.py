"""Defect 8: without hard links, a crash never leaves a head the store cannot open.

The final name shows a complete record or, at worst, an empty placeholder; readers pass over a
placeholder and the next owner removes it."""

import errno
import os

import pytest

from sessionkit import assert_faulted
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.heads import HeadStore
from turnback.store.layout import Store

COMMON = dict(session="s", created=0.0, turn_count=0, fork_point="f", settled=True, body="0" * 32)


@pytest.fixture
def no_hard_links(monkeypatch):
    def refuse(src, dst, **kw):
        raise PermissionError(errno.EPERM, "hard links are not supported here", str(dst))

    monkeypatch.setattr(fs.ops.os, "link", refuse)


@pytest.fixture(params=["renameat2", "placeholder"])
def publish_way(request, monkeypatch, no_hard_links):
    if request.param == "placeholder":
        def unsupported(src, dst):
            raise NotImplementedError("no renameat2 here")

        monkeypatch.setattr(fs.publish, "rename_noreplace", unsupported)  # where create_exclusive calls it
    return request.param


def test_exclusive_publish_without_hard_links(tmp_path, publish_way):
    p = tmp_path / "x"
    assert fs.create_exclusive(p, b"first")
    assert not fs.create_exclusive(p, b"second")
    assert p.read_bytes() == b"first"
    assert [n for n in os.listdir(tmp_path) if fs.is_temp_name(n)] == []


def test_final_name_is_never_partial_at_any_failure(tmp_path, publish_way):
    data = b"x" * 4096
    n, faulted = 1, 0
    while True:
        p = tmp_path / f"f{n}"
        with faultplan.faults(fail_at=n) as plan:
            try:
                fs.create_exclusive(p, data)
            except faultplan.FaultInjected:
                pass
        if os.path.lexists(p):
            assert p.read_bytes() in (b"", data), n
        if plan.count < n:
            break  # no operation numbered n any more: every point was tried
        faulted += plan.faulted > 0
        n += 1
    assert n > 4  # the publication has operations enough to be worth faulting
    assert_faulted(faulted, n - 1, f"exclusive publication ({publish_way}) failed at every operation")


def test_crashed_placeholder_head_is_passed_over_and_cleared(tmp_path):
    from turnback.workbench import Workbench

    wb = Workbench.open(tmp_path)
    seq = wb.book.publish()
    wb.close()
    store = Store.open(tmp_path / ".turnback")
    store.heads.path(seq + 1).write_bytes(b"")  # a crash between the placeholder and the rename
    assert store.heads.current().seq == seq  # was: RecordError truncated, on every open
    wb = Workbench.open(tmp_path)
    try:
        assert wb.is_owner and wb.book.head.seq == seq
        assert seq + 1 not in wb.store.heads.list_seqs()  # the owner removed the placeholder
    finally:
        wb.close()


def test_placeholder_is_not_a_real_empty_file_confusion(tmp_path):
    heads = HeadStore(tmp_path / "heads")
    heads.publish(parent=None, epoch=1, **COMMON)
    heads.path(1).write_bytes(b"TBR1garbage-that-is-not-a-record")
    with pytest.raises(Exception):
        heads.current()  # real damage is reported, never skipped
