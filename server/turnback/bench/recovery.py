"""recovery-rollback: the next owner's rollback of a rewind killed half way, beside the forward
rewind of the same files, measured in the same run.

The report (issue 21) measured 13 s for the rollback of a 3,000-file rewind: two fsyncs per file (the
file, then its folder) paid one file at a time. Restores and rollbacks now batch their durability
(travel/disk.put_many_job: one syncfs per batch of temp files, one fsync per folder touched), so the
figures here are the rewind of N files, the recovery at open of the same rewind SIGKILLed after half
its files, and how many sync calls that recovery made (file-system operations counted through the
seam) against the number of files it put back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from ..store.testing import faultplan
from ..store.fsck import fsck
from .common import begin, open_wb, settle, timed, write

KILLED = """
import os, signal, sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options())
b = {"kind": "beforePrompt", "turn": 2}
job = wb.rewind.commit_job({"boundary": b, "planHash": wb.rewind.prepare({"boundary": b})["planHash"]})
applied = 0
for value in job:
    applied += bool(getattr(value, "binding", False))
    if applied == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
raise SystemExit("the rewind ended before the kill")
"""
BOUNDARY = {"kind": "beforePrompt", "turn": 2}
SYNCS = ("fsync", "fsync_dir", "syncfs")


def _build(root, n: int) -> dict[str, bytes]:
    root.mkdir(parents=True)
    wb = open_wb(root)
    try:
        for k in ("one", "two"):
            t = begin(wb, f"turn {k}")
            for i in range(n):
                write(root, f"src/d{i % 50:02}/f{i:05}.txt", f"{k} {i}\n".encode())
            settle(wb, t)
    finally:
        wb.close()
    return _files(root)


def _files(root) -> dict[str, bytes]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".turnback"]
        for name in filenames:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def run(ctx) -> None:
    n = ctx.pick(60, 600, 3000)
    pristine = ctx.dir("pristine") / "ws"
    if pristine.exists():
        shutil.rmtree(pristine)
    two = _build(pristine, n)
    forward, crashed = ctx.dir("forward") / "ws", ctx.dir("crashed") / "ws"
    for copy in (forward, crashed):
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(pristine, copy, symlinks=True)

    wb = open_wb(forward)
    try:
        c = wb.rewind.prepare({"boundary": BOUNDARY})
        out, t_forward = timed(wb.rewind.commit, {"boundary": BOUNDARY, "planHash": c["planHash"]})
        ctx.require("the forward rewind committed", out.get("status") == "committed", str(out))
    finally:
        wb.close()
    one = _files(forward)

    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    proc = subprocess.run([sys.executable, "-c", KILLED, str(crashed), str(n // 2)], env=env,
                          capture_output=True, text=True, timeout=3600)
    ctx.require("the rewind was killed half way", proc.returncode == -9, proc.stderr[-300:])
    half = _files(crashed)
    ctx.check("the kill left the files half rewound", half not in (one, two))
    with faultplan.faults() as counter:  # counts the recovery's operations; faults nothing
        wb, t_recover = timed(open_wb, crashed)
    try:
        lines = wb.open_report.get("recovered") or []
        ctx.check("the next open rolled the rewind back, all its files",
                  [(x["action"], x["files"]) for x in lines] == [("rolled-back", n)], str(lines))
    finally:
        wb.close()
    syncs = sum(op.split(" ", 1)[0] in SYNCS for op in counter.log)
    ctx.check("the files are exactly as before the rewind", _files(crashed) == two)
    ctx.check("the store is sound", fsck(crashed / ".turnback").ok)
    ctx.fig("files", n, "files")
    ctx.fig("forward-rewind", t_forward, "s", note="the rewind of the same files (commit only)")
    ctx.fig("recovery-rollback", t_recover, "s", baseline=t_forward,
            source="the forward rewind of the same files, this run",
            note="open after a SIGKILL half way: the recovery puts every file back "
                 "(issue 21 measured 13 s for 3,000 files before batching)")
    ctx.fig("recovery-syncs", syncs, "calls", baseline=2 * n,
            source="two fsyncs per file (the file, its folder), as before batching",
            note="fsync, fsync_dir and syncfs calls of the whole open")
