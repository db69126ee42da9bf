"""`TURNBACK_START_OWNER=1`: a `turnback turn …` command that finds no live owner starts a background
one (as the agent hooks do) and goes through it, so every later command of the session costs a
process start and a round trip instead of opening the store. Without the variable nothing is
started (docs/live.md, "The command line's own owner")."""

from __future__ import annotations

import json
import os
import subprocess

from cli_helpers import HOLDER, turnback_exe


def _run(ws, *args, start: bool, idle_set: bool = True):
    env = {k: v for k, v in os.environ.items() if k != "TURNBACK_START_OWNER"}
    if start:
        env["TURNBACK_START_OWNER"] = "1"
    if not idle_set:  # the suite's conftest sets TURNBACK_IDLE_EXIT, which overrides every owner's
        env.pop("TURNBACK_IDLE_EXIT", None)
    return subprocess.run([*turnback_exe(), "--workspace", str(ws), *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _owner(ws) -> dict:
    proc = _run(ws, "--json", "daemon", "status", start=False)
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_a_turn_command_starts_an_owner_and_goes_through_it(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    try:
        first = _run(ws, "turn", "begin", "--prompt", "first", start=True, idle_set=False)
        assert first.stdout.strip() == "1"
        assert "started a background owner" in first.stderr and "300 s" in first.stderr
        owner = _owner(ws)
        assert owner.get("running") is True and owner.get("pid"), owner
        with open(f"/proc/{owner['pid']}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
        assert float(argv[argv.index(b"--idle") + 1]) == 300, argv  # sooner than a hook's owner
        (ws / "a.txt").write_text("two\n")
        settled = _run(ws, "turn", "settle", start=True)
        assert settled.returncode == 0, settled.stderr
        assert "started a background owner" not in settled.stderr  # said once
        assert _owner(ws)["pid"] == owner["pid"]  # the same owner took the settle
        rewind = _run(ws, "rewind", "--before-prompt", "1", "--yes", start=True)
        assert rewind.returncode == 0, rewind.stderr
        assert (ws / "a.txt").read_text() == "one\n"  # the owner saw the change by itself
    finally:
        _run(ws, "daemon", "stop", start=False)


def test_without_the_setting_a_turn_command_starts_nothing(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    assert _run(ws, "turn", "begin", "--prompt", "first", start=False).returncode == 0
    assert not _owner(ws).get("running")
    assert _run(ws, "turn", "settle", start=False).returncode == 0


def test_a_store_held_by_a_command_that_serves_nothing_is_said_at_once_not_waited_for(tmp_path):
    """A process that holds the store without serving its socket (a direct command, a script) never
    answers: the starter says so as soon as its owner finds the lease taken, where it waited 15 s
    for an owner that could not come, and the `turn` command then runs here and is refused."""
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    assert _run(ws, "turn", "begin", "--prompt", "first", start=False).returncode == 0
    assert _run(ws, "turn", "settle", start=False).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(ws)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        started = _run(ws, "serve", "--background", start=False)
        assert started.returncode == 3, started.stderr
        assert f"another process (pid {holder.pid}) owns the store and serves no socket" \
            in started.stderr
        refused = _run(ws, "turn", "begin", "--prompt", "second", start=True)
        assert refused.returncode == 3 and "error [not-owner]" in refused.stderr, refused.stderr
        assert not _owner(ws).get("running")
    finally:
        holder.communicate("\n", timeout=60)
