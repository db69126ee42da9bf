"""`[hooks] after-rewind` (issue 23, item 6): run after every committed rewind, restore, Redo and fork
with the document on stdin; bounded in time; its failure logged, never undoing the commit."""

from __future__ import annotations

import json
import os
import sys
import time

import psutil
from cli_helpers import cli, run_turnback, ws  # noqa: F401  (fixtures)

# The example of docs/rewind.md ("After a rewind"): the agent's todo list goes back with the
# conversation, and stays when only files moved.
RESET_TODO = """\
import json, pathlib, sys
doc = json.load(sys.stdin)
if doc["mode"] != "files":  # the conversation went back: its todo list goes with it
    pathlib.Path(".agent").mkdir(exist_ok=True)
    pathlib.Path(".agent/todo.json").write_text(json.dumps(
        {"items": [], "reset": doc["operation"], "turnCount": doc["turnCount"]}))
"""
RECORD = "import json, sys; open('hook-docs.jsonl', 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')"


def session(cli):
    (cli.root / "a.txt").write_text("a0")
    for n, text in ((1, "a1"), (2, "a2")):
        cli.ok("turn", "begin", "--prompt", f"turn {n}")
        cli.ok("turn", "capture", "--phase", "before", "a.txt")
        (cli.root / "a.txt").write_text(text)
        cli.ok("turn", "capture", "a.txt")
        cli.ok("turn", "settle")


def config(cli, command: str, timeout: float | None = None):
    text = "[hooks]\nafter-rewind = " + json.dumps(command) + "\n"
    if timeout is not None:
        text += f"after-rewind-timeout = {timeout}\n"
    (cli.root / "turnback.toml").write_text(text)


def hook_log(cli) -> list[str]:
    path = cli.root / ".turnback" / "agents" / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


def test_the_todo_example_resets_after_a_rewind_and_not_after_a_restore(cli):
    session(cli)
    (cli.root / "reset_todo.py").write_text(RESET_TODO)
    config(cli, f"{sys.executable} reset_todo.py")
    cli.ok("restore", "a.txt", "--turn", "1", "--yes")
    assert not (cli.root / ".agent").exists()  # files only: the list stays
    cli.ok("rewind", "--before-prompt", "2", "--yes")
    todo = json.loads((cli.root / ".agent" / "todo.json").read_text())
    assert todo == {"items": [], "reset": "rewind", "turnCount": 1}
    assert any("after-rewind rewind (all)" in line and "exited 0" in line for line in hook_log(cli))


def test_every_kind_of_commit_is_announced(cli):
    session(cli)
    config(cli, f"{sys.executable} -c \"{RECORD}\"")
    cli.ok("restore", "a.txt", "--turn", "1", "--yes")
    cli.ok("rewind", "--before-prompt", "2", "--conversation-only", "--yes")
    head = max(g["headSeq"] for g in cli.json("redo")["groups"])
    cli.ok("redo", "--head", str(head), "--yes")
    cli.ok("fork", "--turn", "1", "--yes")
    docs = [json.loads(line) for line in (cli.root / "hook-docs.jsonl").read_text().splitlines()]
    assert [(d["operation"], d["mode"]) for d in docs] == [
        ("restore", "files"), ("rewind", "conversation"), ("redo", "all"), ("fork", "all")]
    restore, conversation, redo, fork = docs
    assert restore["files"] == ["a.txt"] and restore["boundary"] == {"kind": "afterResponse", "turn": 1}
    assert restore["turnCount"] == 2 and restore["workspace"] == str(cli.root.resolve())
    assert conversation["files"] == [] and conversation["turnCount"] == 1
    assert redo["boundary"] is None and redo["headSeq"] == head
    assert fork["boundary"] == {"kind": "afterResponse", "turn": 1} and fork["parentId"]
    assert len({d["sessionId"] for d in docs}) == 2  # the fork's branch is a new session


def test_a_failing_hook_is_logged_and_the_commit_stands(cli):
    session(cli)
    config(cli, "echo something went wrong >&2; exit 3")
    rc, out, err = cli("rewind", "--before-prompt", "2", "--yes")
    assert rc == 0 and "rewind committed" in out
    assert (cli.root / "a.txt").read_text() == "a1"
    line = next(x for x in hook_log(cli) if "after-rewind" in x)
    assert "exited 3" in line and "stays committed" in line and "something went wrong" in line


def test_a_hook_that_hangs_is_stopped_whole(cli):
    """Its shell, a child still holding its output open and a child on its own: all stopped at the
    timeout, and the command line goes on (a hang would run into the 120 s guard of the run)."""
    session(cli)
    config(cli, "echo $$ > hook.pid; sleep 300 & echo $! > holding.pid; "
                "sleep 300 >/dev/null 2>&1 & echo $! > detached.pid; wait", timeout=0.5)
    proc = run_turnback("rewind", "--before-prompt", "2", "--yes", "--workspace", str(cli.root),
                        cwd=cli.root, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (cli.root / "a.txt").read_text() == "a1"
    assert any("was stopped after 0.5 s" in x for x in hook_log(cli))
    for name in ("hook.pid", "holding.pid", "detached.pid"):  # the whole process group
        pid = int((cli.root / name).read_text())
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)  # waiting for the kernel to reap a killed process, not for timing
        assert not _alive(pid), name


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_no_hook_configured_runs_nothing(cli):
    session(cli)
    cli.ok("rewind", "--before-prompt", "2", "--yes")
    assert not any("after-rewind" in x for x in hook_log(cli))
    assert sorted(os.listdir(cli.root)) == [".turnback", "a.txt"]
