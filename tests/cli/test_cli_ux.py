"""Command-line wording and choices of issue 15: user edits, nothing to rewind, the redo list, gc's
words, a declined confirmation."""

from __future__ import annotations

import io

from cli_helpers import cli, ws  # noqa: F401  (fixtures)


def three_turns(cli, ws):
    (ws / "a.txt").write_text("a0\n")
    for n, text in ((1, "a1\n"), (2, "a2\n"), (3, "a3\n")):
        cli.ok("turn", "begin", "--prompt", f"turn {n}")
        cli.ok("turn", "capture", "--phase", "before", "a.txt")
        (ws / "a.txt").write_text(text)
        cli.ok("turn", "capture", "a.txt")
        cli.ok("turn", "settle")


def test_a_user_edit_is_listed_and_kept_with_keep_user_edits(cli, ws):
    three_turns(cli, ws)
    (ws / "notes.txt").write_text("n0\n")
    cli.ok("turn", "begin", "--prompt", "turn 4")  # the pre-turn sweep learns notes.txt
    (ws / "notes.txt").write_text("n4\n")
    cli.ok("turn", "capture", "notes.txt")
    cli.ok("turn", "settle")
    (ws / "notes.txt").write_text("my own notes\n")  # the user, between turns, not captured
    rc, out, _ = cli("rewind", "--after-response", "2")
    assert rc == 0
    assert "Your edits that will be overwritten (--keep-user-edits keeps them):" in out
    assert "notes.txt  (changed on disk, not captured yet)" in out
    doc = cli.json("rewind", "--after-response", "2", "--yes", "--keep-user-edits")
    assert doc["commit"]["status"] == "committed"
    assert [u.rsplit("/", 1)[-1] for u in doc["commit"]["kept"]] == ["notes.txt"]
    assert (ws / "notes.txt").read_text() == "my own notes\n"
    assert (ws / "a.txt").read_text() == "a2\n"


def test_rewind_to_the_current_state_says_nothing_to_rewind(cli, ws):
    three_turns(cli, ws)
    head = cli.json("info")["headSeq"]
    out = cli.ok("rewind", "--after-response", "3", "--yes")
    assert out.strip() == "Nothing to rewind: turn 3 is the current state."
    assert cli.json("info")["headSeq"] == head
    doc = cli.json("rewind", "--after-response", "3")
    assert doc["candidate"]["noop"] is True and doc["commit"] == {"status": "nothing-to-do"}


def test_answering_no_does_not_tell_you_to_run_it_again(cli, ws, monkeypatch):
    three_turns(cli, ws)
    from turnback.cli.context import Context

    monkeypatch.setattr(Context, "interactive", lambda self: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("no\n"))
    rc, out, _ = cli("rewind", "--after-response", "1")
    assert rc == 0
    assert "Cancelled: nothing changed." in out
    assert "--yes" not in out.split("Rewind?")[-1]
    assert (ws / "a.txt").read_text() == "a3\n"


def test_redo_lists_what_a_rewind_left_behind_and_all_states_on_request(cli, ws):
    three_turns(cli, ws)
    out = cli.ok("redo")
    assert out.startswith("nothing to redo") and "turnback redo --all" in out
    assert "Every earlier state" in cli.ok("redo", "--all")
    cli.ok("rewind", "--after-response", "1", "--yes")
    out = cli.ok("redo")
    assert out.startswith("States a rewind, Redo or fork left behind, newest first")
    lines = [line for line in out.splitlines() if line.startswith("  head")]
    assert "3 turn(s)" in lines[0] and "2 turn(s)" in lines[1]
    assert "changes 1 file(s): a.txt" in lines[0]
    heads = [int(line.split()[1]) for line in lines]
    assert heads == sorted(heads, reverse=True)
    rc, out, _ = cli("redo", "--head", str(heads[0]))
    assert out.startswith("Would bring back head") and "Brought back" not in out


def test_settle_without_a_turn_settles_the_running_one(cli, ws):
    from turnback.workbench import Workbench

    cli.ok("turn", "begin", "--prompt", "p")
    wb = Workbench.open(ws)
    try:
        wb.run(wb.turns.settle_job({}))  # the protocol's params without `turn`
        assert wb.state.turns[0].state == "settled"
        from turnback.errors import NoTurnRunning
        import pytest
        with pytest.raises(NoTurnRunning):
            wb.run(wb.turns.settle_job({}))
    finally:
        wb.close()


def test_gc_says_what_it_freed_and_why_it_kept_the_rest(cli, ws):
    three_turns(cli, ws)
    out = cli.ok("gc")
    assert "slice" not in out and " ms" not in out  # developer figures stay in --json
    assert out.startswith("freed ")
    assert "kept " in out and "the current state" in out
    doc = cli.json("gc")
    assert doc["keptFor"]["current"] == 1


def test_log_shows_a_transient_as_such():
    from turnback.cli.render import Renderer

    log = {"turns": [{"turn": 1, "kind": "chat", "state": "settled", "prompt": "p",
                      "files": [{"path": "scratch.tmp", "before": "absent", "after": "absent",
                                 "checkpoint": "1:scratch.tmp@v1"},
                                {"path": "a.txt", "before": "absent", "after": "1d2c3b4a5f",
                                 "checkpoint": "1:a.txt@v1"}]}]}
    lines = Renderer().log(log)
    assert any("scratch.tmp" in line and "created and removed in this turn" in line for line in lines)
    assert any("a.txt" in line and "(absent) -> 1d2c3b4a" in line for line in lines)


def test_candidate_text_names_who_made_each_user_edit():
    from turnback.cli.render import Renderer

    files = [{"path": "README.md", "action": "restore", "from": "aa", "to": "bb", "userEdit": True,
              "userEditBy": "editor-save"},
             {"path": "a.txt", "action": "restore", "from": "aa", "to": "bb", "userEdit": False}]
    r = Renderer()
    lines = r.files(files) + r.user_edits(files, False)
    assert "  README.md  (saved in the editor)" in lines
    assert not any("a.txt" in line and "your edit" in line for line in lines)
    assert r.user_edits(files, True)[0] == "Your edits, kept (--keep-user-edits):"
