"""`turnback restore` and `turnback rewind --files-only|--conversation-only` from the command line,
in this process and through a live owner; without a boundary and without a terminal they name the
flags (exit 2)."""

from __future__ import annotations

import json

from cli_helpers import cli, run_turnback, ws  # noqa: F401  (fixtures)


def session(cli):
    (cli.root / "src").mkdir()
    (cli.root / "a.txt").write_text("a0")
    (cli.root / "src" / "x.py").write_text("x0")
    for n, files in ((1, {"a.txt": "a1", "src/x.py": "x1"}), (2, {"a.txt": "a2", "src/x.py": "x2"})):
        cli.ok("turn", "begin", "--prompt", f"turn {n}")
        for rel, text in files.items():
            cli.ok("turn", "capture", "--phase", "before", rel)
            (cli.root / rel).write_text(text)
            cli.ok("turn", "capture", rel)
        cli.ok("turn", "settle")


def test_restore_paths_relative_to_where_you_are(cli):
    session(cli)
    rc, out, err = cli("restore", "x.py", "--turn", "1", cwd=cli.root / "src")
    assert rc == 0 and "restore  src/x.py" in out and "Run again with --yes" in out
    assert (cli.root / "src" / "x.py").read_text() == "x2"  # asked, not done
    rc, out, err = cli("restore", "*.py", "--turn", "1", "--yes", cwd=cli.root / "src")
    assert rc == 0 and "restore committed" in out and "Redo brings the files back" in out
    assert (cli.root / "src" / "x.py").read_text() == "x1" and (cli.root / "a.txt").read_text() == "a2"
    doc = cli.json("restore", ".", "--before-prompt", "1", "--yes")
    assert doc["commit"]["status"] == "committed"
    assert sorted(doc["commit"]["restored"]) == [(cli.root / p).as_uri() for p in ("a.txt", "src/x.py")]
    assert (cli.root / "a.txt").read_text() == "a0"
    log = cli.ok("log")
    assert "then a restore" in log and "back to how they were before prompt 1" in log


def test_restore_refusals(cli):
    session(cli)
    rc, _, err = cli("restore", "a.txt")
    assert rc == 2 and "error [needs-boundary]" in err and "--turn K or --before-prompt K" in err
    rc, _, err = cli("restore", "/etc/passwd", "--turn", "1")
    assert rc == 1 and "error [outside-workspace]" in err
    rc, _, err = cli("restore", "*.md", "--turn", "1")
    assert rc == 1 and "error [no-match]" in err
    rc, _, err = cli("rewind")
    assert rc == 2 and "--after-response N, --before-prompt N or --before-directive ID" in err
    rc, _, _ = cli("rewind", "--files-only", "--conversation-only", "--before-prompt", "1")
    assert rc == 2  # one mode at a time (argparse)


def test_rewind_modes_from_the_command_line(cli):
    session(cli)
    rc, out, _ = cli("rewind", "--before-prompt", "2", "--files-only", "--yes")
    assert rc == 0 and "Files only: every turn of the conversation stays." in out
    assert "rewind committed (head" in out and "epoch" not in out.split("rewind committed")[1]
    assert (cli.root / "a.txt").read_text() == "a1"
    assert len(cli.json("log")["turns"]) == 2
    doc = cli.json("rewind", "--before-prompt", "2", "--conversation-only", "--yes")
    assert {f["action"] for f in doc["candidate"]["files"]} <= {"kept"}
    assert doc["commit"]["epoch"] == 1 and len(cli.json("log")["turns"]) == 1
    assert (cli.root / "a.txt").read_text() == "a1"


def test_restore_through_a_live_owner(cli):
    session(cli)
    root = str(cli.root)
    started = run_turnback("serve", "--background", "--workspace", root)
    assert started.returncode == 0, started.stderr
    try:
        proc = run_turnback("restore", "src/x.py", "--turn", "1", "--yes", "--json",
                            "--workspace", root, cwd=root)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["commit"]["restored"] == [(cli.root / "src/x.py").as_uri()]
        assert (cli.root / "src" / "x.py").read_text() == "x1"
        info = json.loads(run_turnback("info", "--json", "--workspace", root).stdout)
        assert info["socket"]  # it was the owner that answered
    finally:
        run_turnback("daemon", "stop", "--workspace", root)
