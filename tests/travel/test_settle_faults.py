"""A rollback that fails part way names exactly what it could not put back (travel/settle.settle_all
over travel/disk.put_many_job): a failed durability pass puts the batch's own temp files in doubt,
not the removals made before it, and a failed folder sync puts in doubt only what changed in that
folder. Found by CI: a rewind's recovery whose file sync failed named the folder keep/ as well,
which it had already removed as it should."""

from __future__ import annotations

import os

from turnback.model.images import ABSENT, FOLDER
from turnback.store.testing import faultplan
from turnback.travel.settle import settle_all


def _rollback(a):
    """On disk: keep/ (the transaction made it) and no new/d.txt (it removed that); the rollback
    removes keep/ and brings d.txt back."""
    ws, objects = a.wb.ws, a.wb.store.objects
    (a.root / "keep").mkdir()
    d = objects.put(b"d1\n")
    files = [{"rel": "keep/", "backup": ABSENT, "to": FOLDER},
             {"rel": "new/d.txt", "backup": d, "to": ABSENT, "backupMode": 0o644}]
    return ws, objects, files


def _holds_backup(root) -> dict[str, bool]:
    d = root / "new" / "d.txt"
    return {"keep/": not (root / "keep").exists(),
            "new/d.txt": d.is_file() and d.read_bytes() == b"d1\n"}


def test_a_failed_file_sync_names_that_file_and_not_the_folder_removed_before_it(agent):
    a = agent()
    ws, objects, files = _rollback(a)
    with faultplan.faults() as counter:
        settle_all(ws, objects, files, "backup", max_bytes=1 << 30)
    ops = counter.log
    for p in (a.root / "new" / "d.txt", a.root / "new"):
        p.unlink() if p.is_file() else os.rmdir(p)
    (a.root / "keep").mkdir()
    # the temp file's own sync: in the batch's durability pass
    at = next(i for i, op in enumerate(ops, 1) if op.startswith(("fsync ", "syncfs "))
              and any(o.startswith("create") and ".d.txt" in o for o in ops[:i]))
    with faultplan.faults(fail_at=at):
        failed = settle_all(ws, objects, files, "backup", max_bytes=1 << 30)
    assert [f["rel"] for f in failed] == ["new/d.txt"]
    assert _holds_backup(a.root) == {"keep/": True, "new/d.txt": False}


def test_a_failure_at_every_operation_names_exactly_what_is_not_put_back_or_not_proven(agent):
    a = agent()
    ws, objects, files = _rollback(a)
    with faultplan.faults() as counter:
        settle_all(ws, objects, files, "backup", max_bytes=1 << 30)
    total, faulted = counter.count, 0
    assert total >= 6, counter.log
    for n in range(1, total + 1):
        for p in (a.root / "new" / "d.txt",):
            if p.exists():
                p.unlink()
        for p in a.root.joinpath("new").glob(".d.txt*"):
            p.unlink()
        if (a.root / "new").exists():
            os.rmdir(a.root / "new")
        if not (a.root / "keep").exists():
            (a.root / "keep").mkdir()
        with faultplan.faults(fail_at=n) as plan:
            failed = {f["rel"] for f in settle_all(ws, objects, files, "backup", max_bytes=1 << 30)}
        faulted += plan.faulted
        op = plan.log[n - 1] if len(plan.log) >= n else ""
        held = _holds_backup(a.root)
        # Nothing left unsettled goes unnamed ...
        assert {rel for rel, ok in held.items() if not ok} <= failed, (n, op, failed)
        # ... and what is named but settled is so because the failed step was its own proof: the
        # sync of its folder (d.txt renamed into new/, keep/ removed from the workspace's root).
        for rel in failed - {rel for rel, ok in held.items() if not ok}:
            folder = a.root / "new" if rel == "new/d.txt" else a.root
            assert op == f"fsync_dir {folder}", (n, op, rel)
    assert faulted == total, (faulted, total)
    print(f"settle_all: failed at each of {total} operations")
