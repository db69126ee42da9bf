"""`turnback rewind` keeps a file that an ignore-rule change made visible, and says why.

Each command is its own workbench (as each is its own process): the rules of the last sweep must come
from the store's cache, not from memory."""

from __future__ import annotations

from cli_helpers import cli, run_turnback, ws  # noqa: F401  (fixtures)


def test_rewind_keeps_the_users_unignored_file_and_names_the_gap(cli, ws):
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "keep.txt").write_text("the user's, from long ago\n")
    (ws / "a.txt").write_text("a0\n")
    cli.ok("turn", "begin", "--prompt", "edit a")
    (ws / "a.txt").write_text("a1\n")
    cli.ok("turn", "settle")

    cli.ok("turn", "begin", "--prompt", "stop ignoring build/")
    (ws / ".gitignore").write_text("")  # a shell command of the agent: the settle sweep sees it
    cli.ok("turn", "settle")

    rc, out, err = cli("rewind", "--before-prompt", "2")
    assert rc == 0, err
    assert "delete" not in out.lower().split("what this rewind cannot undo")[0], out
    gap_lines = [line for line in out.splitlines() if "build/keep.txt" in line
                 and "unknown-before-image" in line]
    assert gap_lines and "ignored" in gap_lines[0], out

    out = cli.ok("rewind", "--before-prompt", "2", "--yes")
    assert "committed" in out
    assert cli.files() == {".gitignore": b"build/\n", "a.txt": b"a1\n",
                           "build/keep.txt": b"the user's, from long ago\n"}


def test_the_real_command_keeps_the_file_too(ws):
    """The same through `turnback` processes (no owner: each opens the store itself)."""
    def tb(*args):
        done = run_turnback("--workspace", str(ws), *args, cwd=ws)
        assert done.returncode == 0, done.stderr
        return done.stdout

    (ws / ".gitignore").write_text("*.log\n")
    (ws / "keep.log").write_text("the user's log\n")
    (ws / "a.txt").write_text("a0\n")
    tb("turn", "begin", "--prompt", "one")
    tb("turn", "settle")
    tb("turn", "begin", "--prompt", "keep keep.log")
    (ws / ".gitignore").write_text("*.log\n!keep.log\n")
    tb("turn", "settle")
    tb("rewind", "--before-prompt", "2", "--yes")
    assert (ws / "keep.log").read_text() == "the user's log\n"
    assert (ws / ".gitignore").read_text() == "*.log\n"
