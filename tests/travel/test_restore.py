"""Selective restore (issue 23, item 1): some paths back to a boundary, every turn kept, recorded, and
undone by Redo; and what it refuses before anything is written."""

from __future__ import annotations

import pytest

from sessionkit import normalised_log
from turnback.errors import TurnbackError

END1 = {"kind": "afterResponse", "turn": 1}


def three_turns(a):
    (a.root / "a.txt").write_text("a0")
    (a.root / "src").mkdir()
    (a.root / "src" / "x.py").write_text("x0")
    (a.root / "keep.txt").write_text("k0")
    a.turn("one", {"a.txt": "a1", "src/x.py": "x1"})
    a.turn("two", {"a.txt": "a2", "src/y.py": "y2", "keep.txt": "k2"})
    a.turn("three", {"a.txt": "a3", "src/x.py": "x3"})


def restore(a, paths, boundary=END1, **kw):
    c = a.wb.restore.prepare({"paths": paths, "boundary": boundary, **kw})
    out = a.wb.restore.commit({"paths": paths, "boundary": boundary, "planHash": c["planHash"], **kw})
    return c, out


def test_one_file_goes_back_and_everything_else_stays(agent):
    a = agent()
    three_turns(a)
    log_before = normalised_log(a.log())
    epochs = []
    a.wb.events.subscribe(lambda name, p: epochs.append(p) if name == "epoch" else None)
    c, out = restore(a, [a.uri("a.txt")])
    assert c["operation"] == "restore" and c["discard"]["turnCount"] == 0
    assert [(f["path"], f["action"]) for f in c["files"]] == [("a.txt", "restore")]
    assert out["status"] == "committed" and out["restored"] == [a.uri("a.txt")]
    assert "epoch" not in out and not epochs  # the conversation did not change
    files = a.files()
    assert files["a.txt"] == b"a1"
    assert files["src/x.py"] == b"x3" and files["keep.txt"] == b"k2" and files["src/y.py"] == b"y2"
    log = a.log()
    assert [t["prompt"] for t in log["turns"]] == ["one", "two", "three"]
    assert {k: v for k, v in normalised_log(log).items() if k != "restores"} == log_before
    (rec,) = log["restores"]
    assert rec["afterTurn"] == 3 and rec["operation"] == "restore" and rec["boundary"] == END1
    assert rec["paths"] == [a.uri("a.txt")]
    # the same state after a reopen: the restore is in the published head
    a.reopen()
    assert a.log()["restores"][0]["afterTurn"] == 3 and a.files()["a.txt"] == b"a1"


def test_redo_brings_the_restored_file_back(agent):
    a = agent()
    three_turns(a)
    restore(a, [a.uri("a.txt")])
    groups = a.wb.redo.list()["groups"]
    assert groups, "the state before the restore is offered by Redo"
    g = groups[0]
    assert g["turnCount"] == 3 and g["changes"]["paths"] == ["a.txt"] and not g["ancestor"]
    plan = a.wb.redo.prepare({"headSeq": g["headSeq"]})
    assert [f["path"] for f in plan["files"] if f["action"] != "unchanged"] == ["a.txt"]
    out = a.wb.redo.commit({"headSeq": g["headSeq"], "planHash": plan["planHash"]})
    assert out["status"] == "committed"
    assert a.files()["a.txt"] == b"a3"
    assert "restores" not in a.log()  # the state before the restore knew of none


def test_end_of_turn_and_before_prompt_are_two_moments(agent):
    """--turn K is the file as turn K left it; --before-prompt K+1 includes the edits saved after."""
    a = agent()
    three_turns(a)
    a.begin("four")
    a.write("a.txt", "a4")
    a.settle()
    (a.root / "a.txt").write_text("mine after four")
    a.wb.turns.capture({"uris": [a.uri("a.txt")]})  # saved between turns
    c = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": {"kind": "afterResponse", "turn": 4}})
    (f,) = c["files"]
    assert f["action"] == "restore" and f["userEdit"] is True and f["userEditBy"] == "capture-request"
    c = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": {"kind": "beforePrompt", "turn": 2}})
    assert c["files"][0]["action"] == "restore"
    _, out = restore(a, ["a.txt"], {"kind": "afterResponse", "turn": 4})
    assert out["status"] == "committed" and a.files()["a.txt"] == b"a4"
    _, out = restore(a, ["a.txt"], {"kind": "beforePrompt", "turn": 2})
    assert a.files()["a.txt"] == b"a1"


def test_a_folder_covers_the_files_it_held_and_names_the_newer_ones(agent):
    a = agent()
    three_turns(a)
    c, out = restore(a, ["src"], {"kind": "beforePrompt", "turn": 1})
    assert [(f["path"], f["action"]) for f in c["files"]] == [("src/x.py", "restore")]
    assert c["createdSince"] == [a.uri("src/y.py")]
    assert out["status"] == "committed"
    assert a.files()["src/x.py"] == b"x0" and a.files()["src/y.py"] == b"y2"
    # naming the newer file deletes it: it did not exist then
    c, out = restore(a, ["src/y.py"], {"kind": "beforePrompt", "turn": 1})
    assert [(f["path"], f["action"]) for f in c["files"]] == [("src/y.py", "delete")]
    assert "src/y.py" not in a.files()


def test_globs(agent):
    a = agent()
    three_turns(a)
    c = a.wb.restore.prepare({"paths": ["**/*.py"], "boundary": END1})
    assert [f["path"] for f in c["files"]] == ["src/x.py"]
    c = a.wb.restore.prepare({"paths": ["*.txt"], "boundary": END1})
    assert [f["path"] for f in c["files"]] == ["a.txt", "keep.txt"]
    assert [f["action"] for f in c["files"]] == ["restore", "restore"]
    c = a.wb.restore.prepare({"paths": ["src/[xz].py", "a.tx?"], "boundary": END1})
    assert [f["path"] for f in c["files"]] == ["a.txt", "src/x.py"]


@pytest.mark.parametrize("paths,code", [
    (["*.md"], "no-match"),
    (["src/nothing/"], "no-match"),
    (["never.txt"], "unknown-path"),
    (["/etc/passwd"], "outside-workspace"),
    (["../up.txt"], "outside-workspace"),
    (["file:///etc/passwd"], "outside-workspace"),
    ([".turnback/FORMAT"], "outside-workspace"),
    ([], "invalid-params"),
    ([3], "invalid-params"),
])
def test_bad_paths_are_refused_before_anything_is_written(agent, paths, code):
    a = agent()
    three_turns(a)
    before = (a.files(), normalised_log(a.log()))
    with pytest.raises(TurnbackError) as info:
        a.wb.restore.prepare({"paths": paths, "boundary": END1})
    assert info.value.code == code, info.value.message
    with pytest.raises(TurnbackError) as info:
        a.wb.restore.commit({"paths": paths, "boundary": END1, "planHash": "x"})
    assert info.value.code == code
    assert (a.files(), normalised_log(a.log())) == before


def test_a_file_made_behind_turnbacks_back_is_deleted_when_named(agent):
    """The settle sweep saw late.txt appear in turn 4: before it, it did not exist."""
    a = agent()
    three_turns(a)
    a.begin("four")
    (a.root / "late.txt").write_text("made by a tool turnback did not hear about")
    a.settle()
    c = a.wb.restore.prepare({"paths": ["late.txt"], "boundary": END1})
    assert [f["action"] for f in c["files"]] == ["delete"]


def test_a_file_whose_image_at_the_boundary_is_unknown(agent):
    """A file ignored until a turn changed the ignore rules: turnback never saw it before."""
    a = agent()
    (a.root / ".gitignore").write_text("secret.txt\n")
    (a.root / "secret.txt").write_text("s0")
    (a.root / "open.txt").write_text("o0")
    a.turn("one", {".gitignore": "", "open.txt": "o1"})
    boundary = {"kind": "beforePrompt", "turn": 1}
    with pytest.raises(TurnbackError) as info:
        a.wb.restore.prepare({"paths": ["secret.txt"], "boundary": boundary})
    assert info.value.code == "unknown-path" and "does not know" in info.value.message
    # a glob covers what it can and names the rest as a gap
    c = a.wb.restore.prepare({"paths": ["*.txt"], "boundary": boundary})
    assert [f["path"] for f in c["files"]] == ["open.txt"]
    assert [(g["uri"], g["reason"]) for g in c["gaps"]] == [(a.uri("secret.txt"),
                                                            "unknown-before-image")]


def test_an_unsaved_buffer_is_never_overwritten(agent):
    a = agent()
    three_turns(a)
    before = a.files()
    for call in (a.wb.restore.prepare, a.wb.restore.commit):
        with pytest.raises(TurnbackError) as info:
            call({"paths": ["a.txt", "src"], "boundary": END1, "planHash": "x",
                  "dirty": [a.uri("src/x.py")]})
        assert info.value.code == "unsaved-changes"
        assert info.value.data["uris"] == [a.uri("src/x.py")]
    # a dirty buffer of a file the plan leaves alone is no reason to refuse
    c = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": END1, "dirty": [a.uri("keep.txt")]})
    assert c["files"][0]["action"] == "restore"
    assert a.files() == before


def test_stale_plan_changes_nothing(agent):
    a = agent()
    three_turns(a)
    c = a.wb.restore.prepare({"paths": ["a.txt"], "boundary": END1})
    (a.root / "a.txt").write_text("edited after the confirmation")
    out = a.wb.restore.commit({"paths": ["a.txt"], "boundary": END1, "planHash": c["planHash"]})
    assert out["status"] == "stale"
    assert out["candidate"]["files"][0]["externalChange"] is True
    assert a.files()["a.txt"] == b"edited after the confirmation"
    assert "restores" not in a.log()


def test_nothing_to_do_and_refused_while_a_turn_runs(agent):
    a = agent()
    three_turns(a)
    c = a.wb.restore.prepare({"paths": ["keep.txt"], "boundary": {"kind": "afterResponse", "turn": 3}})
    assert c["noop"] is True and c["summary"].startswith("Nothing to restore")
    assert a.wb.restore.commit({"paths": ["keep.txt"], "boundary": {"kind": "afterResponse", "turn": 3},
                                "planHash": c["planHash"]}) == {"status": "nothing-to-do"}
    a.begin("four")
    with pytest.raises(TurnbackError) as info:
        a.wb.restore.prepare({"paths": ["a.txt"], "boundary": END1})
    assert info.value.code == "turn-running"


def test_keep_user_edits_leaves_them_out_of_the_restore(agent):
    a = agent()
    three_turns(a)
    (a.root / "keep.txt").write_text("mine")
    a.wb.turns.capture({"uris": [a.uri("keep.txt")]})
    c, out = restore(a, ["a.txt", "keep.txt"], keepUserEdits=True)
    flags = {f["path"]: f["userEdit"] for f in c["files"]}
    assert flags == {"a.txt": False, "keep.txt": True}
    assert out["kept"] == [a.uri("keep.txt")] and out["restored"] == [a.uri("a.txt")]
    assert a.files()["keep.txt"] == b"mine" and a.files()["a.txt"] == b"a1"
    assert a.log()["restores"][0]["paths"] == [a.uri("a.txt")]


def test_a_later_rewind_sees_the_restore_as_a_change_no_turn_made(agent):
    a = agent()
    three_turns(a)
    restore(a, ["a.txt"])
    # rewinding to before prompt 1: a.txt goes to a0; turnback's own restore is no one's edit (issue 40)
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    f = next(f for f in c["files"] if f["path"] == "a.txt")
    assert f["action"] == "restore" and f["userEdit"] is False and "userEditBy" not in f
    # a rewind that discards turn 3 (after which the restore happened) drops its record too
    c = a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 2}})
    out = a.wb.rewind.commit({"boundary": {"kind": "afterResponse", "turn": 2},
                              "planHash": c["planHash"]})
    assert out["status"] == "committed"
    assert a.files()["a.txt"] == b"a2" and "restores" not in a.log()


def test_a_pid_store_restores_too(agent):
    a = agent(store_kind="pid")
    three_turns(a)
    _, out = restore(a, ["src/x.py"])
    assert out["status"] == "committed" and a.files()["src/x.py"] == b"x1"
    a.reopen()
    assert a.files()["src/x.py"] == b"x1" and a.log()["restores"][0]["count"] == 1
    assert a.wb.redo.list()["available"] is False


def test_redo_brings_back_an_uncaptured_edit_the_restore_overwrote(agent):
    """The restore's backups go into a *before* state, as a rewind's do (docs/rewind.md)."""
    a = agent()
    three_turns(a)
    (a.root / "a.txt").write_text("typed while turnback was not looking")  # never captured
    c, out = restore(a, ["a.txt"])
    assert c["files"][0]["externalChange"] is True and out["status"] == "committed"
    assert a.files()["a.txt"] == b"a1"
    g = a.wb.redo.list()["groups"][0]
    p = a.wb.redo.prepare({"headSeq": g["headSeq"]})
    assert a.wb.redo.commit({"headSeq": g["headSeq"], "planHash": p["planHash"]})["status"] == \
        "committed"
    assert a.files()["a.txt"] == b"typed while turnback was not looking"
