"""The command line of issue 26: `turnback diff --turn K | --since K [PATH]`, the keep that merges
(`--keep-user-edits`, `--conflict-markers`) and the effects and directives of a confirmation in
words. In-process (`cli`), plus one real process through a live owner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "travel"))

from sessionkit import Agent  # noqa: E402
from test_keep_merge import APP1, COMMENT, TEST1, issue_session, renamed  # noqa: E402

from cli_helpers import cli, run_turnback, ws  # noqa: E402,F401  (fixtures)


def build(ws) -> None:
    a = Agent(ws)
    issue_session(a)
    a.close()


def test_diff_of_one_turn_in_words(cli, ws):
    build(ws)
    out = cli.ok("diff", "--turn", "3")
    assert out.startswith("Turn 3 \u201crename bye to farewell\u201d:\n")
    assert "  src/app.py: changed, 2 lines added, 2 removed" in out
    assert "--- src/app.py\tbefore turn 3\n+++ src/app.py\tafter turn 3\n" in out
    assert "+def farewell():" in out and "Greetings" not in out
    assert not any(len(w) == 32 and set(w) <= set("0123456789abcdef") for w in out.split())


def test_diff_since_shows_your_own_edit_as_yours(cli, ws):
    build(ws)
    out = cli.ok("diff", "--since", "3", "src/app.py")
    turn, mine = out.split("\n\n")
    assert turn.startswith("Turn 3 ")
    assert mine.startswith("Your own edits after turn 3, before turn 4:\n"
                           "  src/app.py: changed (saved in the editor), 1 line added, 0 removed")
    assert "+++ src/app.py\tyour edit after turn 3, saved in the editor" in mine
    assert "+# Greetings" in mine
    doc = cli.json("diff", "--since", "3", "--stat")
    assert [(c["source"], c["path"]) for c in doc["changes"]] == [
        ("turn", "src/app.py"), ("turn", "tests/test_app.py"), ("user", "src/app.py"),
        ("turn", "README.md")]
    assert all("diff" not in c for c in doc["changes"])
    rc, _out, err = cli("diff", "--turn", "9")
    assert rc == 1 and "error [unknown-turn]" in err
    rc, _out, err = cli("diff", "--turn", "1", "/etc/passwd")
    assert rc == 1 and "outside-workspace" in err


def test_rewind_keeping_edits_merges_and_the_code_runs(cli, ws):
    build(ws)
    rc, out, err = cli("rewind", "--before-prompt", "3", "--keep-user-edits", "--yes")
    assert rc == 0, err
    assert "Your edits, kept (--keep-user-edits):\n  src/app.py  (saved in the editor)\n" \
        "    keeping it: your edit is carried onto the restored file (turn 3 changed it too)" in out
    assert "  merged your edit onto the restored file: src/app.py" in out
    assert (ws / "src/app.py").read_text() == COMMENT + APP1
    assert (ws / "tests/test_app.py").read_text() == TEST1
    proc = subprocess.run([sys.executable, str(ws / "tests/test_app.py")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_conflicts_are_said_and_markers_only_on_request(cli, ws):
    a = Agent(ws)
    a.turn("write", {"app.py": "x = 1\n"})
    a.turn("change", {"app.py": "x = 2\n"})
    (ws / "app.py").write_text("x = 3\n")
    a.wb.turns.capture_rels(["app.py"], by="save")
    a.close()
    rc, _out, err = cli("rewind", "--after-response", "1", "--conflict-markers", "--yes")
    assert rc == 1 and "--conflict-markers goes with --keep-user-edits" in err
    out = cli.ok("rewind", "--after-response", "1", "--keep-user-edits")
    assert "keeping it: conflict with turn 2: left as it is now" in out
    assert "--conflict-markers writes a conflicting file with markers" in out
    out = cli.ok("rewind", "--after-response", "1", "--keep-user-edits", "--conflict-markers",
                 "--yes")
    assert "  conflict, written with conflict markers: app.py" in out
    assert (ws / "app.py").read_text() == \
        "<<<<<<< your edit\nx = 3\n=======\nx = 1\n>>>>>>> as restored\n"


def test_the_confirmation_names_steps_and_directives_in_words(cli, ws):
    a = Agent(ws)
    d = a.wb.directives.upsert({"uri": a.uri("app.py"), "anchor": {"line": 0, "character": 0},
                                "request": "Log every call\nwith the logging module"})
    a.turn("write", {"app.py": "x = 1\n"})
    a.begin("Log every call", kind="directive", directiveId=d["id"])
    a.write("app.py", "import logging\nx = 1\n")
    a.step(kind="shell", scope="crossing", summary="Bash: git push origin main")
    a.step(kind="read", scope="none", summary="Read app.py")
    a.settle()
    a.close()
    out = cli.ok("rewind", "--after-response", "1")
    assert "What the discarded steps did:\n  Already left this machine; nothing undoes them:\n" \
        "    ran \u201cgit push origin main\u201d (turn 2)\n  Changed nothing:\n" \
        "    Read app.py (turn 2)" in out
    assert f"Directive \u201cLog every call\u201d: 1 attempt(s) discarded" in out
    assert d["id"] not in out and "crossedUncompensated" not in out and "s2.1" not in out


def test_diff_through_a_live_owner(ws):
    build(ws)
    owner = run_turnback("--workspace", str(ws), "serve", "--background", "--idle-exit", "20")
    assert owner.returncode == 0, owner.stderr
    try:
        proc = run_turnback("--workspace", str(ws), "diff", "--turn", "3", "tests/test_app.py",
                            cwd=ws)
        assert proc.returncode == 0, proc.stderr
        assert "tests/test_app.py: changed, 2 lines added, 2 removed" in proc.stdout
        assert "+from app import farewell, hello" in proc.stdout
    finally:
        run_turnback("--workspace", str(ws), "daemon", "stop")
    assert renamed(TEST1) in (ws / "tests/test_app.py").read_text()
