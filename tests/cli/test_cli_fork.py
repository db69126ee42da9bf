"""`turnback fork`, `turnback branch` and `turnback compare` on the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fork"))

from forkkit import three_turns  # noqa: E402
from sessionkit import Agent  # noqa: E402

from cli_helpers import cli, run_turnback, ws  # noqa: E402,F401  (fixtures)


def _build(ws) -> str:
    a = Agent(ws)
    three_turns(a)
    sid = a.wb.state.session_id
    a.close()
    return sid


def test_fork_shows_the_report_and_forks_only_with_yes(cli, ws):
    parent = _build(ws)
    before = cli.files()
    rc, out, _err = cli("fork", "--turn", "1")
    assert rc == 0 and "Fork at turn 1" in out and "does not preserve" in out
    assert "Nothing changed" in out and cli.files() == before
    rc, out, err = cli("fork", "--turn", "1", "--yes")
    assert rc == 0, err
    assert "Forked: branch" in out and "is frozen" in out
    assert cli.files() == {"a.txt": b"a1"}
    listing = cli.json("branch")
    frozen = {s["sessionId"]: s["frozen"] for s in listing["sessions"]}
    assert frozen[parent] is True and listing["edges"][0]["kind"] == "fork"
    rc, out, _err = cli("branch")
    assert rc == 0 and "fork at turn 1" in out and "frozen" in out
    c = cli.json("compare", parent, "current")
    assert c["sharedTurns"] == 1 and c["liveReport"]["agrees"]
    rc, out, _err = cli("compare", parent[:10], "current")
    assert rc == 0 and "share 1 turn(s)" in out and "matches" in out


def test_a_refused_fork_exits_1_and_names_the_code(cli, ws):
    a = Agent(ws)
    three_turns(a)
    a.begin("opaque")
    a.step(kind="shell", scope="host", summary="make install")
    a.settle()
    a.close()
    rc, out, _err = cli("fork", "--turn", "2", "--yes")
    assert rc == 1 and "fork-opaque-step" in out
    doc = json.loads(cli("--json", "fork", "--turn", "2")[1])
    assert doc["report"]["refusal"]["code"] == "fork-opaque-step" and doc["confirm"] is None


def test_worktree_fork_from_the_command_line(cli, ws, tmp_path):
    _build(ws)
    target = tmp_path / "elsewhere"
    rc, out, err = cli("fork", "--turn", "2", "--worktree", str(target), "--yes")
    assert rc == 0, err
    assert "stays live" in out and (target / "b.txt").read_text() == "b2"
    assert cli.files()["b.txt"] == b"b2" and "a.txt" not in cli.files()  # the workspace as it was


def test_branch_and_compare_read_the_store_beside_a_live_owner(ws):
    parent = _build(ws)
    owner = Agent(ws)  # holds the store while the command line reads it
    try:
        proc = run_turnback("--workspace", str(ws), "--json", "branch")
        assert proc.returncode == 0, proc.stderr
        assert [s["sessionId"] for s in json.loads(proc.stdout)["sessions"]] == [parent]
        proc = run_turnback("--workspace", str(ws), "--json", "compare", parent, parent)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["sharedTurns"] == 3
    finally:
        owner.close()
