"""The merged whole of round 3 (issue 25 with issue 26's keep that merges): a fork in place that keeps
the user's edits merges them and says so (`merged`, in the result and in `turnback fork`'s words);
the Redo list after such a fork marks the frozen parent's states, counts the turns they share by
content, offers the *before* state that holds the overwritten edit, and hides it once a Redo made it
the current state again; Redo of the state a file restore left behind changes no conversation, so it
sends no epoch."""

from __future__ import annotations

import json

import pytest
from forkkit import command_line

from turnback.errors import InvalidParams

APP = "def hello():\n    return 'hello'\n\n\ndef bye():\n    return 'bye'\n"
RENAMED = APP.replace("bye", "farewell")
COMMENT = "# Greetings, kept short.\n"


def session(a):
    """Turn 3 renames bye -> farewell; then the user adds a comment at the top, on disk only
    (turnback never captured it): a fork at turn 2 that keeps it merges it onto turn 2's file."""
    a.turn("write the app", {"src/app.py": APP, "t.txt": "t1\n"})
    a.turn("add a readme", {"README.md": "# app\n"})
    a.turn("rename bye", {"src/app.py": RENAMED, "t.txt": "t3\n"})
    (a.root / "src/app.py").write_text(COMMENT + RENAMED)


def by_path(files):
    return {f["path"]: f for f in files}


def groups(a, **p):
    return {g["headSeq"]: g for g in a.wb.redo.list(p)["groups"]}


def test_a_fork_keeping_edits_merges_and_redo_after_it(agent):
    a = agent()
    session(a)
    events = []
    a.wb.events.listeners.append(lambda kind, doc: events.append((kind, doc)))
    report = a.wb.fork.prepare({"turn": 2})
    app = by_path(report["files"])["src/app.py"]
    assert app["userEdit"] is True and app["merge"]["result"] == "merged"
    out = a.wb.fork.confirm({"turn": 2, "hash": report["hash"], "keepUserEdits": True})
    assert out["status"] == "forked"
    assert out["merged"] == [a.uri("src/app.py")] and "kept" not in out and "conflicts" not in out
    assert (a.root / "src/app.py").read_text() == COMMENT + APP  # the comment, and bye again
    assert (a.root / "t.txt").read_text() == "t1\n"
    assert [d["source"] for k, d in events if k == "epoch"] == ["fork"]
    branch = out["branch"]["sessionId"]

    # The Redo list of the branch: the frozen parent's states, marked, shared turns by content.
    every = groups(a, all=True)
    last = next(g for g in every.values() if g["turnCount"] == 3)
    assert last["frozenParent"] and last["sessionId"] != branch and last["sharedTurns"] == 2
    assert last["keptBefore"] and not last["ancestor"]  # the parent's last state with the comment
    assert sorted(last["changes"]["paths"]) == ["src/app.py", "t.txt"]
    two = next(g for g in every.values() if g["turnCount"] == 2 and g["frozenParent"])
    assert not two["ancestor"]  # same turns as the branch, other files (the merge): offered
    assert last["headSeq"] in groups(a) and two["headSeq"] in groups(a)

    # Redo of it brings the user's exact bytes back (the safety net), in the live branch.
    plan = a.wb.redo.prepare({"headSeq": last["headSeq"]})
    done = a.wb.redo.commit({"headSeq": last["headSeq"], "planHash": plan["planHash"]})
    assert done["status"] == "committed" and "epoch" in done
    assert (a.root / "src/app.py").read_text() == COMMENT + RENAMED
    assert a.wb.state.session_id == branch and a.wb.state.turn_count == 3
    assert [d["source"] for k, d in events if k == "epoch"] == ["fork", "redo"]
    # Now the current state: the list no longer offers it (nothing to redo), `all` still shows it.
    after = groups(a, all=True)[last["headSeq"]]
    assert after["sharedTurns"] == 3 and after["changes"]["files"] == 0 and after["ancestor"]
    assert last["headSeq"] not in groups(a)
    a.reopen()
    assert (a.root / "src/app.py").read_text() == COMMENT + RENAMED and a.wb.state.turn_count == 3


def test_the_command_line_says_what_keeping_did(agent):
    a = agent()
    session(a)
    root = a.root
    run = command_line(a)
    shown = run("fork", "--turn", "2", "--keep-user-edits", "--yes")
    assert shown.returncode == 0, shown.stderr
    assert "merged your edit onto the restored file: src/app.py" in shown.stdout, shown.stdout
    assert (root / "src/app.py").read_text() == COMMENT + APP
    listed = run("--json", "redo")
    assert listed.returncode == 0, listed.stderr
    marked = [g for g in json.loads(listed.stdout)["groups"] if g["turnCount"] == 3]
    assert marked and marked[0]["frozenParent"] and marked[0]["sharedTurns"] == 2
    words = run("redo")
    assert words.returncode == 0 and "frozen" in words.stdout, words.stdout


def test_redo_of_the_state_a_restore_left_sends_no_epoch(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1\n"})
    a.turn("two", {"a.txt": "a2\n", "b.txt": "b2\n"})
    events = []
    a.wb.events.listeners.append(lambda kind, doc: events.append((kind, doc)))
    boundary = {"kind": "afterResponse", "turn": 1}
    c = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": boundary})
    out = a.wb.restore.commit({"paths": ["a.txt"], "boundary": boundary, "planHash": c["planHash"]})
    assert out["status"] == "committed" and (a.root / "a.txt").read_text() == "a1\n"
    before = next(g for g in a.wb.redo.list({})["groups"] if g["turnCount"] == 2)
    epoch = a.wb.state.epoch
    plan = a.wb.redo.prepare({"headSeq": before["headSeq"]})
    done = a.wb.redo.commit({"headSeq": before["headSeq"], "planHash": plan["planHash"]})
    assert done["status"] == "committed" and (a.root / "a.txt").read_text() == "a2\n"
    assert "epoch" not in done and "agentResume" not in done  # the conversation did not change
    assert [k for k, _ in events if k == "epoch"] == [] and a.wb.state.epoch == epoch
    rewound = [d for k, d in events if k == "rewound"]
    assert [d["operation"] for d in rewound] == ["restore", "redo"]
    # a Redo that does bring turns back still sends its one epoch
    c = a.wb.rewind.prepare({"boundary": boundary})
    a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    back = next(g for g in a.wb.redo.list({})["groups"] if g["turnCount"] == 2)
    plan = a.wb.redo.prepare({"headSeq": back["headSeq"]})
    done = a.wb.redo.commit({"headSeq": back["headSeq"], "planHash": plan["planHash"]})
    assert done["status"] == "committed" and "epoch" in done
    assert [d["source"] for k, d in events if k == "epoch"] == ["rewind", "redo"]


def conflict_session(a):
    a.turn("write", {"app.py": "x = 1\n"})
    a.turn("change", {"app.py": "x = 2\n"})
    (a.root / "app.py").write_text("x = 3\n")  # the user's edit of the very line turn 2 changed
    a.wb.turns.capture_rels(["app.py"], by="save")


MARKED = "<<<<<<< your edit\nx = 3\n=======\nx = 1\n>>>>>>> as restored\n"


def test_a_fork_keeping_a_conflict_writes_markers_only_when_asked(agent):
    a = agent()
    conflict_session(a)
    report = a.wb.fork.prepare({"turn": 1})
    assert by_path(report["files"])["app.py"]["merge"]["result"] == "conflict"
    for p in ({"conflictMarkers": True}, {"conflictMarkers": True, "keepUserEdits": False}):
        with pytest.raises(InvalidParams) as err:  # alone it means nothing: refused, not ignored
            a.wb.fork.confirm({"turn": 1, "hash": report["hash"], **p})
        assert err.value.data["field"] == "conflictMarkers"
    with pytest.raises(InvalidParams):
        c = a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 1}})
        a.wb.rewind.commit({"boundary": {"kind": "afterResponse", "turn": 1},
                            "planHash": c["planHash"], "conflictMarkers": True})
    assert (a.root / "app.py").read_text() == "x = 3\n" and a.wb.state.turn_count == 2
    out = a.wb.fork.confirm({"turn": 1, "hash": report["hash"], "keepUserEdits": True,
                             "conflictMarkers": True})
    assert out["status"] == "forked" and out["conflictMarkers"] == [a.uri("app.py")]
    assert (a.root / "app.py").read_text() == MARKED


def test_the_command_line_fork_writes_markers_with_the_flag(agent):
    a = agent()
    conflict_session(a)
    root = a.root
    run = command_line(a)
    alone = run("fork", "--turn", "1", "--conflict-markers", "--yes")
    assert alone.returncode != 0 and "--conflict-markers goes with --keep-user-edits" in alone.stderr
    assert (root / "app.py").read_text() == "x = 3\n"
    shown = run("fork", "--turn", "1", "--keep-user-edits", input="")
    assert "keeping it: conflict with turn 2: left as it is now" in shown.stdout, shown.stdout
    done = run("fork", "--turn", "1", "--keep-user-edits", "--conflict-markers", "--yes")
    assert done.returncode == 0, done.stderr
    assert "keeping it: conflict with the later turns: written with conflict markers" in done.stdout
    assert "  conflict, written with conflict markers: app.py" in done.stdout, done.stdout
    assert (root / "app.py").read_text() == MARKED
