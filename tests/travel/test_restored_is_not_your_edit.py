"""A file turnback itself put back (Restore to Turn…) is not "your edit" in the next plan (issue 40):
the restore is recorded as a change between turns by `restore`, which a later rewind undoes like any
file of its boundary, unflagged; an edit the user saves on top of it is theirs again."""

from __future__ import annotations

END1 = {"kind": "afterResponse", "turn": 1}
END2 = {"kind": "afterResponse", "turn": 2}


def three_turns_then_restore(a):
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2"})
    a.turn("three", {"a.txt": "a3"})
    paths = [a.uri("a.txt")]
    c = a.wb.restore.prepare({"paths": paths, "boundary": END1})
    a.wb.restore.commit({"paths": paths, "boundary": END1, "planHash": c["planHash"]})
    assert (a.root / "a.txt").read_text() == "a1"


def test_a_restored_file_is_not_flagged_as_the_users_edit(agent):
    a = agent()
    three_turns_then_restore(a)
    c = a.wb.rewind.prepare({"boundary": END2})
    (entry,) = [f for f in c["files"] if f["path"] == "a.txt"]
    assert entry["action"] == "restore"
    assert entry["userEdit"] is False and "userEditBy" not in entry, entry
    assert "your" not in c["summary"].lower(), c["summary"]


def test_an_edit_saved_on_top_of_a_restore_is_the_users_again(agent):
    a = agent()
    three_turns_then_restore(a)
    (a.root / "a.txt").write_text("a1 and mine")
    a.wb.turns.capture_rels(["a.txt"], by="save")
    c = a.wb.rewind.prepare({"boundary": END2})
    (entry,) = [f for f in c["files"] if f["path"] == "a.txt"]
    assert entry["userEdit"] is True and entry["userEditBy"] == "editor-save", entry
