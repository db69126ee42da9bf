"""The format upgrade (a format-1 store opened by the owner of this version) failed at every one of
its operations (issue 21, item 7): an open that returns says the current format only when FORMAT on
disk says it (a swallowed failure would claim it), an open that fails leaves format 1 or the current
one, never a broken store, and the next open upgrades it."""

from __future__ import annotations

import shutil

from sessionkit import assert_faulted

from turnback.errors import TurnbackError
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.store.layout import FORMAT_VERSION as NOW
from turnback.store.layout import Store
from turnback.store.records import encode_record, read_record


def _format1(path) -> None:
    """What an older turnback made: FORMAT says 1 (written the way the tests of compression do)."""
    body = read_record(path / "FORMAT", "format")
    (path / "FORMAT").write_bytes(encode_record("format", {**body, "format": 1}))


def _on_disk(path) -> int:
    return read_record(path / "FORMAT", "format")["format"]


def test_the_format_upgrade_failed_at_every_operation(tmp_path):
    pristine = tmp_path / "pristine"
    Store.open(pristine).objects.put(b"an object of format 1\n")
    _format1(pristine)
    counting = tmp_path / "count"
    shutil.copytree(pristine, counting)
    with faultplan.faults() as counter:
        assert Store.open(counting).version == NOW
    total = counter.count
    assert total >= 3, total  # the upgrade writes FORMAT anew: a temp file, its sync, the rename...
    faulted, outcomes = 0, set()
    for n in range(1, total + 1):
        work = tmp_path / f"w{n}"
        shutil.copytree(pristine, work)
        with faultplan.faults(fail_at=n) as plan:
            try:
                opened = Store.open(work)
            except (OSError, TurnbackError):
                opened = None
        faulted += plan.faulted > 0
        if opened is not None:  # it says what is on disk, and that is the new format
            assert opened.version == _on_disk(work) == NOW, (n, opened.version, _on_disk(work))
            outcomes.add("upgraded")
        else:
            assert _on_disk(work) in (1, NOW), n
            outcomes.add(f"failed, format {_on_disk(work)} on disk")
        again = Store.open(work)  # the next open finishes the job
        assert again.version == _on_disk(work) == NOW
        assert fsck(work).ok, (n, [str(p) for p in fsck(work).problems])
        shutil.rmtree(work)
    assert_faulted(faulted, total, "format upgrade")
    assert "failed, format 1 on disk" in outcomes, outcomes
