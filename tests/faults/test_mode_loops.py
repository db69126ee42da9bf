"""Permission bits under faults. The crash model loses a chmod (or utime) no fsync of its file made
durable; a rewind and a redo whose plan changes modes (bytes and bits, bits alone, an executable
deleted) are crashed at every operation, and after each reopen every file's bytes AND bits are all
old or all new, never a mix."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from sessionkit import REDO_CHILD as REDO
from sessionkit import REWIND_CHILD as REWIND
from sessionkit import Agent, assert_faulted, normalised_log, run_child, tree_with_modes
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/fd"),
                                reason="the crash model needs /proc")
BOUNDARY = {"kind": "beforePrompt", "turn": 2}


def mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


# -- the model -------------------------------------------------------------------------------------
@linux_only
def test_a_chmod_no_fsync_made_durable_is_lost_at_the_crash(tmp_path):
    lazy, durable, moved = tmp_path / "lazy", tmp_path / "durable", tmp_path / "moved"
    for p in (lazy, durable, moved):
        p.write_bytes(b"x")
        os.chmod(p, 0o644)
    stamp = os.stat(lazy).st_mtime_ns
    with faultplan.faults(lose_unsynced=True) as plan:
        fs.chmod(lazy, 0o755)
        fs.chmod(lazy, 0o700)  # two changes, none synced: the crash goes back to the first bits
        fs.utime(lazy, (1, 1))
        fs.chmod(durable, 0o755, sync=True)
        fs.chmod(durable, 0o750)  # after the sync: lost, the synced bits stay
        fs.chmod(moved, 0o755)
        fs.rename(moved, tmp_path / "there")  # renamed away unsynced: both undone
        assert plan.unsynced.lose_unsynced() > 0
    assert mode(lazy) == 0o644 and os.stat(lazy).st_mtime_ns == stamp
    assert mode(durable) == 0o755
    assert mode(moved) == 0o644 and not (tmp_path / "there").exists()


@linux_only
def test_a_folder_fsync_does_not_make_a_chmod_durable(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    os.chmod(f, 0o600)
    with faultplan.faults(lose_unsynced=True) as plan:
        fs.chmod(f, 0o755)
        fs.fsync_dir(tmp_path)  # names, not the inode's metadata
        plan.unsynced.lose_unsynced()
    assert mode(f) == 0o600


def test_chmod_never_goes_through_a_link(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"x")
    os.chmod(target, 0o600)
    os.symlink(target, tmp_path / "link")
    with pytest.raises(OSError):
        fs.chmod(tmp_path / "link", 0o777, sync=True)
    assert mode(target) == 0o600


# -- the loops -------------------------------------------------------------------------------------
tree = tree_with_modes


def modes_session(root, kind, *, rewound=False) -> None:
    """Turn 2 changes a.txt's bytes, run.sh's bytes and bits, tool's bits alone, and creates an
    executable new/x.sh: a rewind to before prompt 2 restores, chmods and deletes."""
    a = Agent(root, store_kind=kind)
    for rel, data, bits in (("run.sh", "echo one\n", 0o644), ("tool", "x", 0o755)):
        (a.root / rel).write_text(data)
        os.chmod(a.root / rel, bits)
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("a.txt", "a2")
    a.write("run.sh", "echo two\n")
    for rel, bits in (("run.sh", 0o755), ("tool", 0o644)):
        a.wb.turns.capture({"uris": [a.uri(rel)], "phase": "before"})
        os.chmod(a.root / rel, bits)
        a.wb.turns.capture({"uris": [a.uri(rel)]})
    a.write("new/x.sh", "echo x\n", phase_before=True)
    os.chmod(a.root / "new" / "x.sh", 0o700)
    a.wb.turns.capture({"uris": [a.uri("new/x.sh")]})
    a.settle()
    if rewound:
        c = a.wb.rewind.prepare({"boundary": BOUNDARY})
        assert a.wb.rewind.commit({"boundary": BOUNDARY, "planHash": c["planHash"]})["status"] == \
            "committed"
    a.close()


def snapshot(root, kind):
    a = Agent(root, store_kind=kind)
    try:
        return tree(root), normalised_log(a.log())
    finally:
        a.close()


def copy(tmp_path, pristine, name):
    work = tmp_path / name
    shutil.copytree(pristine, work, symlinks=True)
    return work


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("kind,code,model", [
    ("heads", REWIND, "process-death"), ("heads", REWIND, "lose-unsynced"),
    ("pid", REWIND, "lose-unsynced"), ("heads", REDO, "lose-unsynced")],
    ids=["rewind-death", "rewind-power-cut", "rewind-pid-power-cut", "redo-power-cut"])
def test_a_crash_at_every_operation_of_a_commit_that_changes_modes(tmp_path, monkeypatch, kind,
                                                                   code, model):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    modes_session(pristine, kind, rewound=code is REDO)
    before = snapshot(copy(tmp_path, pristine, "before"), kind)
    done = copy(tmp_path, pristine, "done")
    assert run_child(code, done, kind).returncode == 0
    after = snapshot(done, kind)
    changed = {rel for rel in set(before[0]) | set(after[0]) if before[0].get(rel) != after[0].get(rel)}
    assert {"a.txt", "run.sh", "tool", "new/x.sh"} <= changed, changed
    assert before[0]["tool"][0] == after[0]["tool"][0]  # tool: a change of bits alone
    if model == "lose-unsynced":
        monkeypatch.setenv("TURNBACK_CRASH_MODEL", model)
    outcomes = {"old": 0, "new": 0}
    n = 0
    while True:
        n += 1
        work = copy(tmp_path, pristine, f"crash{n}")
        proc = run_child(code, work, kind, crash_at=n)
        if proc.returncode == 0:
            break
        assert proc.returncode == faultplan.CRASH_EXIT, proc.stderr
        got = snapshot(work, kind)
        if got not in (before, after):
            mixed = {rel: (before[0].get(rel), got[0].get(rel), after[0].get(rel))
                     for rel in sorted(changed)}
            raise AssertionError(f"a crash at operation {n} left a mix (before, now, after): {mixed}")
        outcomes["old" if got == before else "new"] += 1
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
        shutil.rmtree(work)
    assert_faulted(outcomes["old"] + outcomes["new"], n - 1,
                   f"modes, {kind} {'redo' if code is REDO else 'rewind'} ({model})")
    assert outcomes["old"] and outcomes["new"], outcomes
