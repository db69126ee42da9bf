"""Shared test support: drive a real session through the workbench the way an agent and editor do.

A uniquely named module (not conftest.py) so imports never pick up another folder's conftest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


from pychild import run_python
from turnback.workbench import Options, Workbench

STAMPS = ("started", "ended", "created", "uri")  # uri: copies of a workspace differ in folder


class Agent:
    """A thin driver: each method is one thing an agent or an editor does."""

    def __init__(self, root: Path, **options):
        self.root = Path(root)
        self.options = Options(**options)
        self.wb = Workbench.open(self.root, self.options)

    def reopen(self) -> "Agent":
        self.wb.close()
        self.wb = Workbench.open(self.root, self.options)
        return self

    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    def begin(self, prompt: str = "do it", **kw) -> int:
        return self.wb.run(self.wb.turns.begin_job({"prompt": prompt, **kw}))["turn"]

    def write(self, rel: str, data, *, capture: bool = True, phase_before: bool = True) -> None:
        """The agent writes a file (with before/after capture hooks, as a well-behaved agent does)."""
        if capture and phase_before:
            self.wb.turns.capture({"uris": [self.uri(rel)], "phase": "before"})
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        if capture:
            self.wb.turns.capture({"uris": [self.uri(rel)], "phase": "after"})

    def delete(self, rel: str, *, capture: bool = True) -> None:
        if capture:
            self.wb.turns.capture({"uris": [self.uri(rel)], "phase": "before"})
        (self.root / rel).unlink()
        if capture:
            self.wb.turns.capture({"uris": [self.uri(rel)], "phase": "after"})

    def step(self, **kw) -> str:
        turn = self.wb.state.running.n
        return self.wb.turns.step({"turn": turn, **kw})["stepId"]

    def settle(self, status: str = "settled"):
        turn = self.wb.state.running.n
        return self.wb.run(self.wb.turns.settle_job({"turn": turn, "status": status}))

    def turn(self, prompt: str, files: dict | None = None, **kw) -> int:
        n = self.begin(prompt, **kw)
        for rel, data in (files or {}).items():
            if data is None:
                self.delete(rel)
            else:
                self.write(rel, data)
        self.settle()
        return n

    def log(self) -> dict:
        return self.wb.turns.log()

    def files(self) -> dict[str, bytes]:
        """Every file of the workspace outside the store, as bytes."""
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d not in (".turnback", ".git")]
            for name in filenames:
                p = Path(dirpath) / name
                out[p.relative_to(self.root).as_posix()] = p.read_bytes()
        return out

    def close(self) -> None:
        self.wb.close()


def normalised_log(log: dict) -> dict:
    """A session log without wall-clock stamps, for comparing a reopened session with an expected one."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in STAMPS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(log)


MIN_FAULTED_SHARE = 0.8  # of the points a fault loop samples, at least this share must fault


def assert_faulted(faulted: int, sampled: int, what: str) -> None:
    """The last word of every fault loop: it says how many of the points it sampled really faulted
    (failed, filled the disk, crashed or cut the power), and fails unless at least 80 % did. A loop
    whose points mostly miss (counted in another run, past the end of the operation) tests little
    while looking thorough; one that needed a single hit hid exactly that."""
    print(f"{what}: {faulted} of {sampled} sampled points faulted")
    assert sampled > 0, f"{what}: the loop sampled no point"
    assert faulted <= sampled, f"{what}: {faulted} faulted of {sampled} sampled (miscounted)"
    assert faulted >= MIN_FAULTED_SHARE * sampled, (
        f"{what}: only {faulted} of the {sampled} sampled points faulted; at least "
        f"{MIN_FAULTED_SHARE:.0%} must, or the loop does not test what it says")


def run_child(code: str, *args, crash_at: int | None = None, fail_at: int | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess:
    """Run Python code in a fresh process, optionally killed (or failed) at the Nth fs operation."""
    env = dict(os.environ)
    env.pop("TURNBACK_CRASH_AT", None)
    env.pop("TURNBACK_FAIL_AT", None)
    if crash_at is not None:
        env["TURNBACK_CRASH_AT"] = str(crash_at)
    if fail_at is not None:
        env["TURNBACK_FAIL_AT"] = str(fail_at)
    return run_python(code, *args, env=env, timeout=timeout)


def child_json(code: str, *args, **kw):
    proc = run_child(code, *args, **kw)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def crash_every_operation(tmp_path: Path, pristine: Path, code: str, args: tuple, snapshot) -> dict:
    """Run `code` on a copy of `pristine`, killed at its 1st, 2nd, ... file-system operation until it
    finishes. After each crash, `snapshot(copy)` (which reopens, so recovery runs) must equal the
    state before the operation or after it, and fsck must find the store sound."""
    import shutil

    from turnback.store.fsck import fsck
    from turnback.store.testing.faultplan import CRASH_EXIT

    before = snapshot(pristine_copy(tmp_path, pristine, "before"))
    done = pristine_copy(tmp_path, pristine, "done")
    proc = run_child(code, done, *args)
    assert proc.returncode == 0, proc.stderr
    after = snapshot(done)
    assert after != before, "the operation under test changed nothing"
    outcomes = {"old": 0, "new": 0}
    n = 0
    while True:
        n += 1
        work = pristine_copy(tmp_path, pristine, f"crash{n}")
        proc = run_child(code, work, *args, crash_at=n)
        if proc.returncode == 0:
            break
        assert proc.returncode == CRASH_EXIT, proc.stderr
        got = snapshot(work)
        assert got in (before, after), f"a crash at operation {n} left a mix"
        outcomes["old" if got == before else "new"] += 1
        report = fsck(work / ".turnback")
        assert report.ok, (n, [str(p) for p in report.problems])
        shutil.rmtree(work)
    assert_faulted(outcomes["old"] + outcomes["new"], n - 1, "crash at every operation")
    assert outcomes["old"] and outcomes["new"], outcomes
    return outcomes


def pristine_copy(tmp_path: Path, pristine: Path, name: str) -> Path:
    import shutil

    target = tmp_path / name
    shutil.copytree(pristine, target, symlinks=True)
    return target


# Child programs for the crash loops (argv: workspace, store kind): a rewind to before turn 2, and
# the redo of the first Redo group.
REWIND_CHILD = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
b = {"kind": "beforePrompt", "turn": 2}
c = wb.rewind.prepare({"boundary": b})
assert wb.rewind.commit({"boundary": b, "planHash": c["planHash"]})["status"] == "committed"
wb.close()
"""

REDO_CHILD = """
import sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
g = wb.redo.list()["groups"][0]
p = wb.redo.prepare({"headSeq": g["headSeq"]})
assert wb.redo.commit({"headSeq": g["headSeq"], "planHash": p["planHash"]})["status"] == "committed"
wb.close()
"""


def tree_with_modes(root) -> dict:
    """Every workspace file outside the store and .git: (bytes, permission bits)."""
    import os
    import stat

    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".turnback", ".git")]
        for name in filenames:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (fh.read(), stat.S_IMODE(os.lstat(p).st_mode))
    return out


def counting_reads(monkeypatch, module, before=None) -> list[int]:
    """Every size `module`'s `os.read` is asked for, in order (`before(asked)` runs first)."""
    asked: list[int] = []
    real_read = os.read

    def counting_read(fd, n):
        if before is not None:
            before(asked)
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(module.os, "read", counting_read)
    return asked
