"""Permission bits in the transaction: a recovery at open, a rollback and a redo put back the mode
the plan names together with the bytes, and a change of mode alone (chmod +x) is a change."""

from __future__ import annotations

import os
import shutil

from sessionkit import Agent, assert_faulted, run_child, tree_with_modes

from turnback.store.testing import faultplan

BOUNDARY = {"kind": "beforePrompt", "turn": 2}

REWIND = """
import sys
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options())
b = {"kind": "beforePrompt", "turn": 2}
c = wb.rewind.prepare({"boundary": b})
if len(sys.argv) > 2:  # count: print every operation of the commit
    plan = faultplan.FaultPlan()
    faultplan.install(plan)
assert wb.rewind.commit({"boundary": b, "planHash": c["planHash"]})["status"] == "committed"
if len(sys.argv) > 2:
    print("\\n".join(plan.log))
wb.close()
"""


AFTER_RUN_SH = """
class AfterRunSh(faultplan.FaultPlan):
    armed = False
    def tick(self, op, path, src=None):
        if self.armed:
            self.crash()
        super().tick(op, path, src)
        self.armed = op == "rename" and str(path).endswith("/run.sh")
faultplan.install(AfterRunSh())
"""


tree = tree_with_modes


def chmod_turn(a: Agent, prompt: str, rel: str, mode: int) -> None:
    """A turn whose agent changes only the mode of `rel`, with its capture hooks."""
    a.begin(prompt)
    a.wb.turns.capture({"uris": [a.uri(rel)], "phase": "before"})
    os.chmod(a.root / rel, mode)
    a.wb.turns.capture({"uris": [a.uri(rel)]})
    a.settle()


def commit(a: Agent) -> dict:
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    return a.wb.rewind.commit({"boundary": BOUNDARY, "planHash": c["planHash"]})


def test_recovery_at_open_rolls_back_bytes_and_mode_together(tmp_path):
    """A rewind killed right after it restored run.sh (bytes and mode) and before its commit point:
    the next open rolls it back, and run.sh must come back executable, as it was."""
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    a = Agent(pristine)
    (pristine / "run.sh").write_text("#!/bin/sh\necho one\n")
    os.chmod(pristine / "run.sh", 0o644)
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("run.sh", "#!/bin/sh\necho two\n")
    os.chmod(pristine / "run.sh", 0o755)
    a.wb.turns.capture({"uris": [a.uri("run.sh")]})
    a.write("a.txt", "a2")
    a.settle()
    a.close()
    before = tree(pristine)
    assert before["run.sh"][1] == 0o755

    counted = tmp_path / "counted"
    shutil.copytree(pristine, counted, symlinks=True)
    proc = run_child(REWIND, counted, "count")
    assert proc.returncode == 0, proc.stderr
    after = tree(counted)
    assert after["run.sh"] == (b"#!/bin/sh\necho one\n", 0o644)
    # Killed at the operation right after run.sh's rename (its folder's fsync). Found by name, not by
    # number: how many operations come first varies (an object's shard folder may already exist).
    work = tmp_path / "work"
    shutil.copytree(pristine, work, symlinks=True)
    child = REWIND.replace('c = wb.rewind.prepare({"boundary": b})\n',
                           'c = wb.rewind.prepare({"boundary": b})\n' + AFTER_RUN_SH)
    assert run_child(child, work).returncode == faultplan.CRASH_EXIT
    assert tree(work)["run.sh"] == after["run.sh"]  # killed after run.sh was rewound
    b = Agent(work)
    try:
        recovered = b.wb.info()["opened"]["recovered"]
        assert [r["action"] for r in recovered] == ["rolled-back"]
        assert tree(work) == before  # bytes and modes as before the rewind: never a mix
    finally:
        b.close()


def test_a_rolled_back_chmod_only_rewind_puts_the_new_mode_back(agent, monkeypatch):
    a = agent()
    tool = a.root / "tool"
    tool.write_text("x")
    os.chmod(tool, 0o644)
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("a.txt", "a2")
    a.wb.turns.capture({"uris": [a.uri("tool")], "phase": "before"})
    os.chmod(tool, 0o755)
    a.wb.turns.capture({"uris": [a.uri("tool")]})
    a.settle()
    before = tree(a.root)

    def refused(*args, **kw):
        raise OSError(5, "disk gone before the commit point")

    monkeypatch.setattr(a.wb.book, "commit_body", refused)
    out = commit(a)
    monkeypatch.undo()
    assert out["status"] == "rolled-back" and not out.get("recovery")
    assert tree(a.root) == before  # tool is executable again, a.txt is a2


def test_a_chmod_only_rollback_through_the_seam_at_every_operation(agent):
    """Fail each operation of a rewind whose plan is a chmod alone: old or new, bytes and modes."""
    a = agent()
    tool = a.root / "tool"
    tool.write_text("x")
    os.chmod(tool, 0o644)
    a.turn("one", {"a.txt": "a1"})
    chmod_turn(a, "two", "tool", 0o755)
    a.close()
    pristine = a.root
    old = tree(pristine)
    n, statuses, faulted = 0, set(), 0
    while True:
        n += 1
        work = pristine.parent / f"fail{n}"
        shutil.copytree(pristine, work, symlinks=True)
        b = Agent(work)
        c = b.wb.rewind.prepare({"boundary": BOUNDARY})
        with faultplan.faults(fail_at=n) as plan:
            try:
                status = b.wb.rewind.commit({"boundary": BOUNDARY,
                                             "planHash": c["planHash"]})["status"]
            except Exception as exc:  # noqa: BLE001 - a refusal before any change
                status = getattr(exc, "code", type(exc).__name__)
        statuses.add(status)
        b.close()
        got = tree(work)
        if plan.count < n:
            assert status == "committed" and got["tool"] == (b"x", 0o644)
            assert_faulted(faulted, n - 1, "a rewind of a mode failed at every operation")
            break
        faulted += plan.faulted > 0
        if status == "committed":
            assert got["tool"] == (b"x", 0o644), n
        else:
            assert got == old, f"a failure at operation {n} ({status}) left {got['tool']}"
        shutil.rmtree(work)
    assert "rolled-back" in statuses


def test_redo_brings_back_a_change_of_mode_alone(agent):
    a = agent()
    tool = a.root / "tool"
    tool.write_text("x")
    os.chmod(tool, 0o644)
    a.turn("one", {"a.txt": "a1"})
    chmod_turn(a, "two", "tool", 0o755)
    head = a.wb.book.head.seq
    assert commit(a)["status"] == "committed"
    assert tree(a.root)["tool"] == (b"x", 0o644)
    group = next(g for g in a.wb.redo.list()["groups"] if g["headSeq"] == head)
    assert group["changes"] == {"files": 1, "paths": ["tool"]}  # the picker counts a chmod alone
    plan = a.wb.redo.prepare({"headSeq": head})
    files = {f["path"]: f for f in plan["files"]}
    assert files["tool"]["action"] == "restore"
    out = a.wb.redo.commit({"headSeq": head, "planHash": plan["planHash"]})
    assert out["status"] == "committed"
    assert tree(a.root)["tool"] == (b"x", 0o755)
    a.reopen()
    assert a.wb.state.known.mode("tool") == 0o755
    again = a.wb.redo.list()  # the state brought back is the current one: not offered again
    assert head not in [g["headSeq"] for g in again["groups"]]


def test_redo_after_a_rewind_over_an_uncaptured_chmod_restores_it(agent):
    """The user's chmod that no capture saw is overwritten by a rewind (the plan says so); the head
    published before the rewind keeps it, so Redo brings back the disk exactly as it was."""
    a = agent(grace_heads=0, grace_seconds=0.0)
    a.turn("one", {"a.txt": "a1", "run.sh": "echo\n"})
    os.chmod(a.root / "run.sh", 0o644)
    a.turn("two", {"a.txt": "a2", "run.sh": "echo two\n"})
    os.chmod(a.root / "run.sh", 0o700)  # uncaptured: no hook, no sweep since
    before = tree(a.root)
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    run = next(f for f in c["files"] if f["path"] == "run.sh")
    assert run["externalChange"] and run["userEdit"]
    assert commit(a)["status"] == "committed"
    assert tree(a.root)["run.sh"] == (b"echo\n", 0o644)
    a.wb.collection.run({})
    group = next(g for g in a.wb.redo.list()["groups"] if g["turnCount"] == 2)
    p = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    assert a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": p["planHash"]})["status"] \
        == "committed"
    assert tree(a.root) == before


def test_a_chmod_alone_behind_turnbacks_back_is_an_external_change(agent):
    a = agent()
    (a.root / "tool").write_text("x")
    os.chmod(a.root / "tool", 0o644)
    a.turn("one", {"a.txt": "a1"})
    chmod_turn(a, "two", "tool", 0o755)
    os.chmod(a.root / "tool", 0o700)  # the user's, uncaptured
    c = a.wb.rewind.prepare({"boundary": BOUNDARY})
    tool = next(f for f in c["files"] if f["path"] == "tool")
    assert tool["action"] == "restore" and tool["externalChange"] and tool["userEdit"]


def test_resolve_retry_puts_back_the_bits_with_the_bytes(agent, monkeypatch):
    from turnback.travel import disk

    a = agent()
    (a.root / "run.sh").write_text("echo one\n")
    os.chmod(a.root / "run.sh", 0o644)
    a.turn("one", {"z.txt": "a1"})
    a.begin("two")
    a.write("run.sh", "echo two\n")
    os.chmod(a.root / "run.sh", 0o755)
    a.wb.turns.capture({"uris": [a.uri("run.sh")]})
    a.write("z.txt", "a2")
    a.settle()
    before = tree(a.root)
    real = disk.place

    def flaky(rel, tmp, final):  # run.sh is rewound, z.txt fails, run.sh's rollback too
        if rel == "z.txt" or (rel == "run.sh" and flaky.rewound):
            raise OSError(5, "disk gone", rel)
        flaky.rewound = rel == "run.sh"
        return real(rel, tmp, final)

    flaky.rewound = False
    monkeypatch.setattr(disk, "place", flaky)
    out = commit(a)
    monkeypatch.undo()
    assert out["status"] == "rolled-back" and len(out["recovery"]) == 1
    assert tree(a.root)["run.sh"] == (b"echo one\n", 0o644)  # left as the rewind wrote it
    a.reopen()
    rid = a.wb.recovery.list()["recovery"][0]["id"]
    assert a.wb.recovery.resolve({"id": rid, "action": "retry"})["status"] == "resolved"
    assert tree(a.root) == before


def test_a_fork_in_place_puts_back_the_bits_as_a_rewind_does(agent):
    a = agent()
    (a.root / "run.sh").write_text("echo one\n")
    os.chmod(a.root / "run.sh", 0o644)
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("run.sh", "echo two\n")
    os.chmod(a.root / "run.sh", 0o755)
    a.wb.turns.capture({"uris": [a.uri("run.sh")]})
    a.settle()
    report = a.wb.fork.prepare({"turn": 1})
    assert a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})["status"] == "forked"
    assert tree(a.root)["run.sh"] == (b"echo one\n", 0o644)
