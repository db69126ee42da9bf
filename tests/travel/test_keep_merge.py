"""Keeping the user's edits merges them onto the restored files (issue 26 §1): the scenario of the issue
ends with working code, a conflict is shown and never written silently, a binary file is kept whole,
and a file that changed between the plan and the keep gives a fresh plan, not a surprise."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from sessionkit import assert_faulted

from turnback.store.testing import faultplan

APP1 = "def hello():\n    return 'hello'\n\n\ndef bye():\n    return 'bye'\n"
TEST1 = ("import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"
         "from app import bye, hello\n\n\ndef test_app():\n    assert hello() == 'hello'\n"
         "    assert bye() == 'bye'\n\n\nif __name__ == '__main__':\n    test_app()\n"
         "    print('ok')\n")
COMMENT = "# Greetings, kept short: see the style guide.\n"


def renamed(text: str) -> str:
    return text.replace("bye", "farewell")


def issue_session(a):
    """The issue's session: turn 3 renames bye -> farewell in src/app.py and tests/test_app.py; the
    user saves a comment at the top of src/app.py between turns 3 and 4; turn 4 touches the README."""
    a.turn("write the app", {"src/app.py": APP1, "tests/test_app.py": TEST1})
    a.turn("add a readme", {"README.md": "# app\n"})
    a.turn("rename bye to farewell", {"src/app.py": renamed(APP1),
                                       "tests/test_app.py": renamed(TEST1)})
    (a.root / "src/app.py").write_text(COMMENT + renamed(APP1))
    a.wb.turns.capture_rels(["src/app.py"], by="save")  # the editor's save between turns
    a.turn("document it", {"README.md": "# app\n\nSays hello.\n"})


BEFORE_3 = {"kind": "beforePrompt", "turn": 3}


def by_path(c):
    return {f["path"]: f for f in c["files"]}


def runs(root) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "tests/test_app.py")], capture_output=True,
                          text=True, timeout=60)


def test_the_issue_scenario_keeps_the_comment_and_the_code_runs(agent):
    a = agent()
    issue_session(a)
    c = a.wb.rewind.prepare({"boundary": BEFORE_3})
    app = by_path(c)["src/app.py"]
    assert app["userEdit"] is True and app["userEditBy"] == "editor-save"
    assert app["merge"]["result"] == "merged" and app["merge"]["alsoChangedBy"] == [3]
    assert "src/app.py your edit is carried onto the restored file (turn 3 changed it too)" \
        in c["summary"]
    assert "merge" not in by_path(c)["tests/test_app.py"]  # the agent's change alone
    out = a.wb.rewind.commit({"boundary": BEFORE_3, "planHash": c["planHash"],
                              "keepUserEdits": True})
    assert out["status"] == "committed"
    assert out["merged"] == [a.uri("src/app.py")] and "conflicts" not in out
    assert (a.root / "src/app.py").read_text() == COMMENT + APP1  # the comment, and bye again
    assert (a.root / "tests/test_app.py").read_text() == TEST1
    proc = runs(a.root)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_the_merged_file_is_still_the_users_edit_for_a_later_rewind(agent):
    a = agent()
    issue_session(a)
    c = a.wb.rewind.prepare({"boundary": BEFORE_3})
    a.wb.rewind.commit({"boundary": BEFORE_3, "planHash": c["planHash"], "keepUserEdits": True})
    later = by_path(a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 2}}))
    assert later["src/app.py"]["userEdit"] is True  # the comment is still nobody's turn's work
    assert later["src/app.py"]["userEditBy"] == "editor-save"
    a.reopen()  # and the new state was published, not only held in memory
    assert (a.root / "src/app.py").read_text() == COMMENT + APP1
    assert a.wb.state.known.get("src/app.py") == a.wb.store.objects.hasher.digest(
        (COMMENT + APP1).encode())


def test_redo_brings_back_what_the_merging_rewind_replaced(agent):
    a = agent()
    issue_session(a)
    c = a.wb.rewind.prepare({"boundary": BEFORE_3})
    a.wb.rewind.commit({"boundary": BEFORE_3, "planHash": c["planHash"], "keepUserEdits": True})
    assert (a.root / "src/app.py").read_text() == COMMENT + APP1
    group = next(g for g in a.wb.redo.list()["groups"] if g["turnCount"] == 4)
    plan = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    assert a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": plan["planHash"]})[
        "status"] == "committed"
    assert (a.root / "src/app.py").read_text() == COMMENT + renamed(APP1)
    assert (a.root / "tests/test_app.py").read_text() == renamed(TEST1)


def conflicting(a):
    a.turn("write", {"app.py": "line 1\nvalue = 1\nline 3\n"})
    a.turn("change the value", {"app.py": "line 1\nvalue = 2\nline 3\n"})
    (a.root / "app.py").write_text("line 1\nvalue = 3  # mine\nline 3\n")
    a.wb.turns.capture_rels(["app.py"], by="save")


AFTER_1 = {"kind": "afterResponse", "turn": 1}


def test_a_conflict_is_shown_and_the_file_is_left_as_it_is(agent):
    a = agent()
    conflicting(a)
    c = a.wb.rewind.prepare({"boundary": AFTER_1})
    merge = by_path(c)["app.py"]["merge"]
    assert merge["result"] == "conflict" and merge["conflicts"] == 1
    assert merge["alsoChangedBy"] == [2] and merge["regions"] == [{"line": 2, "lines": 5}]
    assert "conflict with turn 2" in c["summary"]
    out = a.wb.rewind.commit({"boundary": AFTER_1, "planHash": c["planHash"], "keepUserEdits": True})
    assert out["status"] == "committed"
    assert out["conflicts"] == [a.uri("app.py")] and out["kept"] == [a.uri("app.py")]
    assert (a.root / "app.py").read_text() == "line 1\nvalue = 3  # mine\nline 3\n"  # no markers


def test_conflict_markers_are_written_only_when_asked_for(agent):
    a = agent()
    conflicting(a)
    c = a.wb.rewind.prepare({"boundary": AFTER_1})
    out = a.wb.rewind.commit({"boundary": AFTER_1, "planHash": c["planHash"], "keepUserEdits": True,
                              "conflictMarkers": True})
    assert out["conflictMarkers"] == [a.uri("app.py")] and "kept" not in out
    assert (a.root / "app.py").read_text() == (
        "line 1\n<<<<<<< your edit\nvalue = 3  # mine\n=======\nvalue = 1\n>>>>>>> as restored\n"
        "line 3\n")


def test_conflict_markers_alone_are_refused_and_change_nothing(agent):
    """A flag that means nothing alone is refused, never ignored (issue 25 item 7): markers alone
    would otherwise overwrite the very edit the client asked to keep with markers."""
    from turnback.errors import InvalidParams

    a = agent()
    conflicting(a)
    c = a.wb.rewind.prepare({"boundary": AFTER_1})
    assert by_path(c)["app.py"]["merge"]["result"] == "conflict"
    before = (a.root / "app.py").read_text()
    with pytest.raises(InvalidParams) as err:
        a.wb.rewind.commit({"boundary": AFTER_1, "planHash": c["planHash"], "conflictMarkers": True})
    assert err.value.data["field"] == "conflictMarkers"
    assert (a.root / "app.py").read_text() == before and a.wb.state.turn_count == 2


def test_a_binary_file_is_kept_whole_and_said_so(agent):
    a = agent()
    a.turn("write", {"logo.png": b"\x89PNG\0one"})
    a.turn("redraw", {"logo.png": b"\x89PNG\0two"})
    (a.root / "logo.png").write_bytes(b"\x89PNG\0two, touched up")
    a.wb.turns.capture_rels(["logo.png"], by="save")
    c = a.wb.rewind.prepare({"boundary": AFTER_1})
    merge = by_path(c)["logo.png"]["merge"]
    assert merge["result"] == "binary" and "kept whole" in merge["detail"]
    assert "logo.png not a text file: kept whole, as it is now" in c["summary"]
    out = a.wb.rewind.commit({"boundary": AFTER_1, "planHash": c["planHash"], "keepUserEdits": True,
                              "conflictMarkers": True})
    assert out["kept"] == [a.uri("logo.png")]
    assert (a.root / "logo.png").read_bytes() == b"\x89PNG\0two, touched up"


def test_an_uncaptured_change_is_merged_from_the_disk(agent):
    a = agent()
    a.turn("write", {"app.py": "a\nb\nc\nd\ne\nf\n"})
    a.turn("change the end", {"app.py": "a\nb\nc\nd\ne\nF\n"})
    (a.root / "app.py").write_text("A\nb\nc\nd\ne\nF\n")  # nobody told turnback
    c = a.wb.rewind.prepare({"boundary": AFTER_1})
    f = by_path(c)["app.py"]
    assert f["userEditBy"] == "uncaptured" and f["merge"]["result"] == "merged"
    out = a.wb.rewind.commit({"boundary": AFTER_1, "planHash": c["planHash"], "keepUserEdits": True})
    assert out["merged"] == [a.uri("app.py")]
    assert (a.root / "app.py").read_text() == "A\nb\nc\nd\ne\nf\n"


def test_an_edit_only_the_user_made_stays_as_it_is(agent):
    a = agent()
    a.turn("write", {"app.py": "x\n", "notes.md": "n\n"})
    a.turn("two", {"app.py": "y\n"})
    (a.root / "notes.md").write_text("n\nmine\n")
    a.wb.turns.capture_rels(["notes.md"], by="save")
    c = a.wb.rewind.prepare({"boundary": AFTER_1})
    assert by_path(c)["notes.md"]["merge"] == {"result": "yours", "alsoChangedBy": []}
    out = a.wb.rewind.commit({"boundary": AFTER_1, "planHash": c["planHash"], "keepUserEdits": True})
    assert out["kept"] == [a.uri("notes.md")] and "merged" not in out
    assert (a.root / "notes.md").read_text() == "n\nmine\n"
    assert (a.root / "app.py").read_text() == "x\n"


@pytest.mark.parametrize("change", ["deleted", "renamed", "folder"])
def test_a_file_changed_between_the_plan_and_the_keep_gives_a_fresh_plan(agent, change):
    a = agent()
    issue_session(a)
    c = a.wb.rewind.prepare({"boundary": BEFORE_3})
    assert by_path(c)["src/app.py"]["merge"]["result"] == "merged"
    app = a.root / "src/app.py"
    if change == "deleted":
        app.unlink()
    elif change == "renamed":
        app.rename(a.root / "src/main.py")
    else:
        app.unlink()
        app.mkdir()
    before = {p: (a.root / p).read_bytes() for p in ("tests/test_app.py", "README.md")}
    out = a.wb.rewind.commit({"boundary": BEFORE_3, "planHash": c["planHash"],
                              "keepUserEdits": True})
    assert out["status"] == "stale"  # nothing written: the user approved another plan
    assert {p: (a.root / p).read_bytes() for p in before} == before
    fresh = by_path(out["candidate"])
    if change == "folder":
        assert fresh["src/app.py"]["action"] == "unchanged"
        assert any(g["reason"] == "not-a-file" for g in out["candidate"]["gaps"])
    else:
        assert fresh["src/app.py"]["externalChange"] is True
        assert fresh["src/app.py"]["merge"]["result"] == "conflict"  # you deleted it, we restore
    again = a.wb.rewind.commit({"boundary": BEFORE_3, "planHash": out["candidate"]["planHash"],
                                "keepUserEdits": True})
    assert again["status"] == "committed"
    assert (a.root / "tests/test_app.py").read_text() == TEST1
    if change == "folder":
        assert app.is_dir()
    else:
        assert not app.exists()  # the user's deletion is theirs: kept, listed as a conflict
        assert again["conflicts"] == [a.uri("src/app.py")]


def test_a_fault_at_every_operation_of_a_merging_keep_leaves_old_or_new(tmp_path):
    from sessionkit import Agent

    pristine = tmp_path / "pristine"
    pristine.mkdir()
    a = Agent(pristine)
    issue_session(a)
    old = a.files()
    a.close()
    new = dict(old)
    new["src/app.py"], new["tests/test_app.py"] = (COMMENT + APP1).encode(), TEST1.encode()
    new["README.md"] = b"# app\n"
    seen = {"old": 0, "new": 0}
    tried = faulted = 0
    for n in range(1, 400):
        work = tmp_path / f"w{n}"
        shutil.copytree(pristine, work, symlinks=True)
        b = Agent(work)
        c = b.wb.rewind.prepare({"boundary": BEFORE_3})
        with faultplan.faults(fail_at=n) as plan:
            try:
                b.wb.rewind.commit({"boundary": BEFORE_3, "planHash": c["planHash"],
                                    "keepUserEdits": True})
            except Exception:
                pass
        try:
            b.close()
        except Exception:
            pass
        tried += 1
        faulted += plan.faulted
        if not plan.faulted:
            shutil.rmtree(work)
            break
        reopened = Agent(work)
        files = reopened.files()
        state = "new" if files == new else "old" if files == old else "mix"
        assert state != "mix", (n, plan.log[-3:], files)
        assert reopened.wb.state.turn_count == (2 if state == "new" else 4), n
        reopened.close()
        seen[state] += 1
        shutil.rmtree(work)
    assert seen["old"] > 3, (tried, faulted, seen)
    # the last point tried is the one past the commit's end (it faulted nothing, and ended the loop)
    assert_faulted(faulted, tried - 1, f"a keep-user-edits rewind failed at each operation {seen}")


def test_redo_groups_say_which_turns_they_bring_back(agent):
    a = agent()
    issue_session(a)
    c = a.wb.rewind.prepare({"boundary": BEFORE_3})
    a.wb.rewind.commit({"boundary": BEFORE_3, "planHash": c["planHash"]})
    groups = {g["turnCount"]: g for g in a.wb.redo.list()["groups"]}
    assert sorted(groups) == [3, 4]  # the state after turn 3 and the one after turn 4
    # the two kept turns are shared; Redo brings back turns 3-4 (or 3), and says which files change
    assert groups[4]["sharedTurns"] == 2 and groups[3]["sharedTurns"] == 2
    assert set(groups[4]["changes"]["paths"]) == {"README.md", "src/app.py", "tests/test_app.py"}


def test_a_slow_merge_runs_off_the_loop_and_the_job_yields_while_it_runs(agent, monkeypatch):
    """A line merge of a long file takes tens of milliseconds: the derivation (a server advances it
    in ~10 ms slices) yields while a worker thread merges. Gated: the merge waits on an event."""
    import threading

    from turnback.travel import user_edits
    from turnback.travel.rewind import derive_job

    a = agent()
    issue_session(a)
    gate, started = threading.Event(), threading.Event()
    real = user_edits.merge3_images

    def held(*args):
        started.set()
        assert gate.wait(30), "the test never opened the gate"
        return real(*args)

    monkeypatch.setattr(user_edits, "merge3_images", held)
    job = derive_job(a.wb.state, a.wb.ws, a.wb.store.objects, BEFORE_3, max_bytes=1 << 24)
    waits = 0
    try:
        while waits < 3:  # the loop gets the job back, again and again, while the merge waits
            if next(job) == ("merging",):
                assert started.wait(30)
                waits += 1
    finally:
        gate.set()
    try:
        while True:
            next(job)
    except StopIteration as done:
        derived = done.value
    assert {f["path"]: f.get("merge", {}).get("result") for f in derived.candidate["files"]}[
        "src/app.py"] == "merged"
