"""`turnback` as real processes: the console script, `python -m turnback`, the demo, and ownership."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

from turnback.cli import demo as demo_mod
from turnback.cli.commands import ProgressBar
from turnback.workbench import Workbench

from cli_helpers import HOLDER, cli, run_turnback, ws  # noqa: F401  (fixtures)


def test_demo_exits_zero(cli):
    rc, out, err = cli("demo")
    assert rc == 0, out + err
    assert "checks hold" in out and "FAILED" not in out
    for heading in ("Turn 1", "Turn 4", "Rewind to just before prompt 2", "What the rewind could not undo",
                    "Redo", "fsck"):
        assert heading in out


def test_demo_json_is_one_document(cli):
    rc, out, _ = cli("--json", "demo")
    assert rc == 0
    doc = json.loads(out)
    assert doc["ok"] is True and all(c["ok"] for c in doc["checks"])
    assert doc["candidate"]["discard"]["turnCount"] == 3
    assert doc["rewind"]["status"] == "committed" and doc["redo"]["commit"]["status"] == "committed"
    assert doc["fsck"]["ok"] is True


def test_demo_keep_leaves_the_workspace_as_a_real_process(tmp_path):
    keep = tmp_path / "kept"
    proc = run_turnback("demo", "--keep", str(keep))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = {p.relative_to(keep).as_posix(): p.read_text() for p in keep.rglob("*")
             if p.is_file() and ".turnback" not in p.parts}
    from turnback.cli import demo_fork

    assert files == {  # after the fork at turn 2: the end of turn 2, plus the branch's own turn 3
        "README.md": demo_mod.START["README.md"], "notes/todo.md": demo_mod.START["notes/todo.md"],
        "src/app.py": demo_mod.APP_V1, "src/util.py": demo_mod.UTIL_V2,
        "src/farewell.py": demo_fork.FAREWELL}
    assert (keep / ".turnback" / "FORMAT").exists()
    # The kept workspace is a live session the command line can read.
    proc = run_turnback("--workspace", str(keep), "--json", "log")
    assert proc.returncode == 0 and len(json.loads(proc.stdout)["turns"]) == 3  # the live branch
    assert run_turnback("--workspace", str(keep), "fsck").returncode == 0
    # A second demo refuses a folder that is not empty.
    proc = run_turnback("demo", "--keep", str(keep))
    assert proc.returncode == 1 and "must be new or empty" in proc.stderr


def test_python_dash_m_turnback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "turnback", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "rewind" in proc.stdout and "demo" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "turnback", "--workspace", str(tmp_path), "fsck"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "not a store folder" in proc.stdout


def test_mutations_refuse_with_exit_3_when_another_process_owns_the_store(cli, ws):
    (ws / "a.txt").write_text("a\n")
    cli.ok("turn", "begin", "--prompt", "p")
    (ws / "a.txt").write_text("b\n")
    cli.ok("turn", "settle")
    files, log = cli.files(), cli.json("log")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(ws)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        for args in (["turn", "begin", "--prompt", "q"], ["turn", "capture", "a.txt"],
                     ["rewind", "--before-prompt", "1", "--yes"], ["gc"]):
            rc, out, err = cli(*args)
            assert rc == 3, (args, out, err)
            assert f"pid {holder.pid}" in err and "error [not-owner]" in err
        # Reading still works, as an observer, and naming the owner.
        info = cli.json("info")
        assert info["ownership"] == "observer" and info["owner"]["pid"] == holder.pid
        rc, out, _ = cli("rewind", "--before-prompt", "1")  # prints the candidate, commits nothing
        assert rc == 0 and "Nothing changed" in out
        assert cli("fsck")[0] == 0
        # A real command-line process is refused the same way.
        proc = run_turnback("--workspace", str(ws), "turn", "begin", "--prompt", "q")
        assert proc.returncode == 3 and f"pid {holder.pid}" in proc.stderr
        assert cli.files() == files and cli.json("log") == log
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    cli.ok("turn", "begin", "--prompt", "now it is free")


def test_owner_in_this_process_also_refuses(cli, ws):
    (ws / "a.txt").write_text("a\n")
    wb = Workbench.open(ws)
    try:
        rc, _, err = cli("turn", "begin", "--prompt", "p")
        assert rc == 3 and "owns the store" in err
    finally:
        wb.close()


def test_progress_bar_draws_and_clears():
    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar({"phase": "scan", "done": 3, "total": 6}, 0)
    bar({"phase": "sweep"}, 1)
    bar(None, 2)
    bar.finish()
    text = stream.getvalue()
    assert "scan" in text and "3/6" in text and "sweep" in text and text.endswith("\r")


def test_serve_and_bench_are_wired(monkeypatch, cli):
    import types

    called = {}
    fake_lsp = types.ModuleType("turnback.lsp.stdio")
    fake_lsp.serve = lambda: called.setdefault("serve", True) and 0
    monkeypatch.setitem(sys.modules, "turnback.lsp.stdio", fake_lsp)
    assert cli("serve")[0] == 0 and called["serve"]
    import turnback.bench as bench
    from turnback.command import main as command

    monkeypatch.setattr(bench, "main", lambda argv: called.setdefault("bench", argv) and 0, raising=False)
    ws = ["--workspace", str(cli.root)]
    assert command([*ws, "--json", "bench", "alternating-snapshots"]) == 0
    assert called["bench"] == ["alternating-snapshots", "--json"]
    called.pop("bench")
    assert command([*ws, "bench", "--help", "--scale", "tiny"]) == 0
    assert called["bench"] == ["--help", "--scale", "tiny"]  # the benchmarks' own options, untouched
    called.pop("bench")
    # the command line alone (cli/, a floor below bench) has no runner: it says so, runs nothing
    rc, _, err = cli("bench", "alternating-snapshots")
    assert rc == 2 and "turnback.command" in err and "bench" not in called
