"""A fork in place leaves the user's own edits as they are when asked (`keepUserEdits`), as a rewind
does: the turns' changes are undone, the edits no discarded turn made stay and are listed, and the
branch remembers them as nobody's turn. Through the workbench and through `turnback fork`."""

from __future__ import annotations

import json

import pytest
from forkkit import command_line, file_turn

from turnback.errors import InvalidParams


def session(a):
    """Three turns; then the user edits notes.md (turn 3 made it) between turns, seen by a save."""
    (a.root / "a.txt").write_text("a0")
    file_turn(a, "one", {"a.txt": "a1"})
    file_turn(a, "two", {"a.txt": "a2"})
    file_turn(a, "three", {"a.txt": "a3", "notes.md": "n3\n"})
    (a.root / "notes.md").write_text("n3\nmine\n")
    a.wb.turns.capture_rels(["notes.md"], by="save")


def by_path(files):
    return {f["path"]: f for f in files}


def test_without_keep_the_listed_edit_is_overwritten(agent):
    a = agent()
    session(a)
    report = a.wb.fork.prepare({"turn": 1})
    assert by_path(report["files"])["notes.md"]["userEdit"] is True  # listed first
    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"]})
    assert out["status"] == "forked" and "kept" not in out
    assert not (a.root / "notes.md").exists()


def test_keep_user_edits_leaves_them_and_lists_them(agent):
    a = agent()
    session(a)
    report = a.wb.fork.prepare({"turn": 1})
    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "keepUserEdits": True})
    assert out["status"] == "forked" and out["kept"] == [a.uri("notes.md")]
    assert (a.root / "notes.md").read_text() == "n3\nmine\n"  # the user's edit is still there
    assert (a.root / "a.txt").read_text() == "a1"  # the turns' changes are undone
    assert a.wb.state.session_id == out["branch"]["sessionId"] and a.wb.state.turn_count == 1
    # The branch remembers the kept edit as nobody's turn: a rewind of it still flags it.
    a.reopen()
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    assert by_path(c["files"])["notes.md"]["userEdit"] is True


def test_keep_user_edits_is_refused_for_a_worktree_fork(agent, tmp_path):
    a = agent()
    session(a)
    report = a.wb.fork.prepare({"turn": 1})
    with pytest.raises(InvalidParams) as err:
        a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "keepUserEdits": True,
                           "worktree": str(tmp_path / "elsewhere")})
    assert err.value.data.get("field") == "keepUserEdits"
    assert (a.root / "notes.md").read_text() == "n3\nmine\n" and not (tmp_path / "elsewhere").exists()
    with pytest.raises(InvalidParams):
        a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "keepUserEdits": "yes"})


def test_the_command_line_keeps_them_with_the_flag(agent):
    a = agent()
    session(a)
    root = a.root
    run = command_line(a)
    shown = run("fork", "--turn", "1", "--keep-user-edits", input="")
    assert shown.returncode == 0, shown.stderr
    assert "Your edits, kept (--keep-user-edits):" in shown.stdout
    assert "notes.md" in shown.stdout and (root / "notes.md").read_text() == "n3\nmine\n"
    done = run("--json", "fork", "--turn", "1", "--keep-user-edits", "--yes")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["confirm"]
    assert result["status"] == "forked" and [u.rsplit("/", 1)[1] for u in result["kept"]] == ["notes.md"]
    assert (root / "notes.md").read_text() == "n3\nmine\n" and (root / "a.txt").read_text() == "a1"


FORK_KEEPING = """
import sys
from turnback.workbench import Workbench
wb = Workbench.open(sys.argv[1])
r = wb.fork.prepare({"turn": 1})
out = wb.fork.confirm({"turn": 1, "hash": r["hash"], "keepUserEdits": True})
assert out["status"] == "forked" and out["kept"], out
wb.close()
"""


@pytest.mark.slow
def test_a_crash_at_every_operation_of_a_fork_keeping_edits(tmp_path):
    from sessionkit import Agent, crash_every_operation

    pristine = tmp_path / "pristine"
    pristine.mkdir()
    a = Agent(pristine)
    session(a)
    a.close()

    def snapshot(root):
        b = Agent(root)
        try:
            return b.files(), b.wb.state.turn_count, b.wb.state.frozen
        finally:
            b.close()

    outcomes = crash_every_operation(tmp_path, pristine, FORK_KEEPING, (), snapshot)
    assert outcomes["old"] > 3 and outcomes["new"] >= 1, outcomes
    print(f"crashed at {outcomes['old'] + outcomes['new']} points: {outcomes}")
