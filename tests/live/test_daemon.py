"""The background owner and the command line through it: same output, one owner, idle exit."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from turnback.remote import client as remote

TB = [sys.executable, "-m", "turnback"]


def tb(root: Path, *args: str, check: bool = True, env: dict | None = None):
    proc = subprocess.run([*TB, "--workspace", str(root), *args], capture_output=True, text=True,
                          cwd=root, timeout=60, env={**os.environ, **(env or {})})
    if check:
        assert proc.returncode == 0, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


def daemons(root: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info.get("cmdline") or []
        if "turnback.lsp.daemon" in cmd and str(root) in cmd:
            found.append(p)
    return found


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "ws"
    r.mkdir()
    (r / "a.txt").write_text("one\n")
    r = r.resolve()
    yield r
    for p in daemons(r):
        p.kill()


def _script(root: Path) -> list[str]:
    """A hook-like session; returns every command's stdout with the workspace path normalised."""
    outs = []
    for args in (["turn", "begin", "--prompt", "edit a"],
                 ["turn", "capture", "--phase", "before", "a.txt"],
                 None,
                 ["turn", "capture", "a.txt"],
                 ["turn", "step", "--kind", "shell", "--scope", "host", "--summary", "sed"],
                 ["turn", "respond", "done"],
                 ["turn", "settle"],
                 ["rewind", "--before-prompt", "1", "--yes"]):
        if args is None:
            (root / "a.txt").write_text("two\n")
            continue
        out = tb(root, *args).stdout.replace(str(root), "ROOT")
        # digests are seeded per store and head numbers count publications: not the same here
        out = re.sub(r"\b[0-9a-f]{8,64}\b", "DIGEST", re.sub(r"head \d+", "head N", out))
        # through an owner a settle answers once durable, its head published right after (by
        # design, docs/protocol.md): the one line that words it differently
        out = out.replace("; its head is published next", "; published head N")
        outs.append(out if args[:2] != ["turn", "step"] else "step-id\n")
    return outs


def test_the_command_line_goes_through_the_background_owner(root, tmp_path):
    direct_root = tmp_path / "direct"
    direct_root.mkdir()
    (direct_root / "a.txt").write_text("one\n")
    direct = _script(direct_root.resolve())

    started = json.loads(tb(root, "--json", "serve", "--background", "--idle-exit", "60").stdout)
    assert started["started"] is True and started["socket"] == remote.owner_socket(root)
    # the owner holds the lease: a command that opened the store would be refused with status 3
    live = _script(root)
    assert live == direct
    assert (root / "a.txt").read_text() == "one\n"
    info = json.loads(tb(root, "--json", "info").stdout)
    assert info["owner"]["pid"] == started["pid"] and info["socket"] == started["socket"]
    assert info["background"] is True
    # an error from the owner keeps its code and exit status
    bad = tb(root, "rewind", "--before-prompt", "7", "--yes", check=False)
    assert bad.returncode == 1 and "unknown-turn" in bad.stderr
    status = json.loads(tb(root, "--json", "daemon", "status").stdout)
    assert status["running"] and status["pid"] == started["pid"] and status["background"]
    stopped = json.loads(tb(root, "--json", "daemon", "stop").stdout)
    assert stopped["stopped"] is True
    assert remote.owner_socket(root) is None
    assert tb(root, "daemon", "status", check=False).returncode == 1
    # the lease was released: the direct path owns at once
    assert tb(root, "turn", "begin", "--prompt", "after the daemon").stdout.strip() == "1"


def test_racing_starters_end_with_exactly_one_owner(root):
    starters = [subprocess.Popen([*TB, "--workspace", str(root), "--json", "serve", "--background"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root)
                for _ in range(4)]
    results = []
    for s in starters:
        out, err = s.communicate(timeout=60)
        assert s.returncode == 0, err
        results.append(json.loads(out))
    assert len({r["pid"] for r in results}) == 1
    assert sum(r["started"] for r in results) <= 1
    # the losers exit as soon as they have seen the lease taken (their imports take a moment)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        alive = [p.pid for p in daemons(root) if _running(p)]
        if alive == [results[0]["pid"]]:
            break
        time.sleep(0.1)
    assert alive == [results[0]["pid"]]
    assert remote.ensure_owner(root) == results[0]["socket"]


def test_idle_exit_releases_the_lease(root):
    started = json.loads(tb(root, "--json", "serve", "--background", "--idle-exit", "3").stdout)
    begun = json.loads(tb(root, "--json", "info").stdout)  # within the idle time: it answers
    assert begun["owner"]["pid"] == started["pid"]
    tb(root, "turn", "begin", "--prompt", "a running turn keeps it alive")
    # the gate: the owner says it was idle past its limit and stayed for the running turn
    log = root / ".turnback" / "run" / "daemon.log"
    deadline = time.monotonic() + 60
    while "but turn 1 is running: staying" not in log.read_text():
        assert time.monotonic() < deadline, "the owner never weighed leaving"
        time.sleep(0.05)
    assert psutil.pid_exists(started["pid"]) and remote.owner_socket(root) is not None
    tb(root, "turn", "settle")
    assert wait_gone(started["pid"])
    assert remote.owner_socket(root) is None
    assert tb(root, "fsck").returncode == 0
    assert tb(root, "turn", "begin", "--prompt", "direct again").stdout.strip() == "2"


def test_killing_the_background_owner_mid_turn_leaves_the_store_recoverable(root):
    started = json.loads(tb(root, "--json", "serve", "--background").stdout)
    tb(root, "turn", "begin", "--prompt", "published first")
    tb(root, "turn", "settle")
    tb(root, "turn", "begin", "--prompt", "interrupted")
    (root / "a.txt").write_text("half\n")
    tb(root, "turn", "capture", "a.txt")
    os.kill(started["pid"], signal.SIGKILL)
    assert wait_gone(started["pid"])
    # the stale socket is never trusted (once the killed process's last thread is gone)
    deadline = time.monotonic() + 15
    while remote.owner_socket(root) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert remote.owner_socket(root) is None
    assert os.path.lexists(started["socket"])
    assert tb(root, "fsck").returncode == 0
    log = json.loads(tb(root, "--json", "log").stdout)
    assert log["turns"][1]["prompt"] == "interrupted" and log["turns"][1]["state"] == "running"
    again = json.loads(tb(root, "--json", "serve", "--background").stdout)
    assert again["started"] and again["socket"] == started["socket"]
    tb(root, "turn", "settle")
    tb(root, "rewind", "--before-prompt", "2", "--yes")
    assert (root / "a.txt").read_text() == "one\n"


def test_an_owner_that_cannot_be_reached_still_refuses_with_status_3(root):
    from turnback.workbench import Workbench

    wb = Workbench.open(root)  # this test process owns the store and listens nowhere
    try:
        proc = tb(root, "turn", "begin", "--prompt", "x", check=False)
        assert proc.returncode == 3 and "owns the store" in proc.stderr
    finally:
        wb.close()


def test_every_routed_command_runs_through_the_owner_with_its_options(root):
    """rewind/redo with --keep-user-edits, recovery, gc, log and info: commands.py itself runs
    against the owner, so the options of the direct path reach the owner unchanged."""
    from turnback.cli.owner import ROUTED

    assert {"rewind", "redo", "gc", "recovery", "log", "info", "turn"} <= ROUTED
    tb(root, "--json", "serve", "--background", "--idle-exit", "60")
    tb(root, "turn", "begin", "--prompt", "agent edit")
    (root / "a.txt").write_text("agent\n")
    tb(root, "turn", "settle")
    (root / "a.txt").write_text("agent, then the user\n")  # a user edit after the turn
    out = json.loads(tb(root, "--json", "rewind", "--before-prompt", "1", "--yes",
                        "--keep-user-edits").stdout)
    assert out["commit"]["status"] == "committed"
    assert (root / "a.txt").read_text() == "agent, then the user\n"  # kept, as asked
    assert json.loads(tb(root, "--json", "recovery").stdout)["recovery"] == []
    assert "headsRetired" in json.loads(tb(root, "--json", "gc").stdout)
    redo = json.loads(tb(root, "--json", "redo").stdout)
    assert redo["available"] is True
    text = tb(root, "log").stdout
    info = json.loads(tb(root, "--json", "info").stdout)
    assert info["background"] is True and info["turnCount"] == 0 and text
    tb(root, "daemon", "stop")


def test_fork_runs_through_the_owner(root, tmp_path):
    if tb(root, "fork", "--help", check=False).returncode != 0:
        pytest.skip("`turnback fork` is not registered on the command line of this build")
    tb(root, "--json", "serve", "--background", "--idle-exit", "60")
    tb(root, "turn", "begin", "--prompt", "first")
    (root / "a.txt").write_text("two\n")
    tb(root, "turn", "settle")
    out = json.loads(tb(root, "--json", "fork", "--turn", "1", "--worktree", "../branch", "--yes").stdout)
    assert out["confirm"]["status"] == "forked", out
    assert (root.parent / "branch" / "a.txt").read_text() == "two\n"  # relative to this command
    tb(root, "daemon", "stop")
