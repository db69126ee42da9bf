"""Code only, conversation only (issue 23, item 2): a rewind of the files alone keeps every turn; a
rewind of the conversation alone keeps every file, listed as kept. Both say so, both are Redo-able,
and only the one that changes the conversation starts an epoch."""

from __future__ import annotations

import pytest

from turnback.errors import TurnbackError

B2 = {"kind": "beforePrompt", "turn": 2}


def session(a):
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})
    a.turn("three", {"a.txt": "a3"})
    a.wb.turns.workflow_set({"tasks": [{"id": "t1"}]})


def rewind(a, mode, boundary=B2, **kw):
    c = a.wb.rewind.prepare({"boundary": boundary, "mode": mode})
    return c, a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"], "mode": mode, **kw})


def epochs_of(a):
    seen = []
    a.wb.events.subscribe(lambda name, p: seen.append(name) if name in ("epoch", "rewound") else None)
    return seen


def test_files_only_keeps_every_turn_and_starts_no_epoch(agent):
    a = agent()
    session(a)
    seen = epochs_of(a)
    c, out = rewind(a, "files")
    assert c["mode"] == "files" and c["discard"]["turnCount"] == 0
    assert c["keep"]["turnCount"] == 3 and c["summary"].startswith("Files only")
    assert {f["path"]: f["action"] for f in c["files"]} == {"a.txt": "restore", "b.txt": "delete"}
    assert c["workflowCleared"] == {"tasks": 0, "goals": 0, "agents": 0, "handoffs": 0}
    assert out["status"] == "committed" and "epoch" not in out
    assert seen == ["rewound"]
    assert a.files() == {"a.txt": b"a1"}
    log = a.log()
    assert [t["prompt"] for t in log["turns"]] == ["one", "two", "three"]
    assert log["restores"][0]["mode"] == "files"
    assert a.wb.turns.workflow_get()["tasks"] == [{"id": "t1"}]  # the conversation's state stays
    # and Redo brings the files back
    g = a.wb.redo.list()["groups"][0]
    p = a.wb.redo.prepare({"headSeq": g["headSeq"]})
    assert a.wb.redo.commit({"headSeq": g["headSeq"], "planHash": p["planHash"]})["status"] == \
        "committed"
    assert a.files() == {"a.txt": b"a3", "b.txt": b"b2"}


def test_conversation_only_keeps_every_file_listed_as_kept(agent):
    a = agent()
    session(a)
    seen = epochs_of(a)
    c, out = rewind(a, "conversation")
    assert c["mode"] == "conversation" and c["discard"]["turnCount"] == 2
    assert {f["path"]: f["action"] for f in c["files"]} == {"a.txt": "kept", "b.txt": "kept"}
    assert "Conversation only" in c["summary"]
    assert out["status"] == "committed" and out["epoch"] == 1
    assert seen == ["epoch", "rewound"]
    assert a.files() == {"a.txt": b"a3", "b.txt": b"b2"}
    assert [t["prompt"] for t in a.log()["turns"]] == ["one"]
    # the kept files are a change no turn made: a rewind further back still puts them back
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    flags = {f["path"]: (f["action"], f.get("userEditBy")) for f in c["files"]}
    assert flags == {"a.txt": ("restore", "kept-on-rewind"), "b.txt": ("delete", "kept-on-rewind")}
    # Redo brings the discarded turns back
    g = next(g for g in a.wb.redo.list()["groups"] if g["turnCount"] == 3)
    p = a.wb.redo.prepare({"headSeq": g["headSeq"]})
    assert a.wb.redo.commit({"headSeq": g["headSeq"], "planHash": p["planHash"]})["status"] == \
        "committed"
    assert [t["prompt"] for t in a.log()["turns"]] == ["one", "two", "three"]
    assert a.files() == {"a.txt": b"a3", "b.txt": b"b2"}


def test_the_modes_have_their_own_plan_hash(agent):
    a = agent()
    session(a)
    hashes = {m: a.wb.rewind.prepare({"boundary": B2, "mode": m})["planHash"]
              for m in ("all", "files", "conversation")}
    assert len(set(hashes.values())) == 3
    out = a.wb.rewind.commit({"boundary": B2, "planHash": hashes["all"], "mode": "files"})
    assert out["status"] == "stale" and out["candidate"]["mode"] == "files"
    assert a.files()["a.txt"] == b"a3"


def test_files_only_with_nothing_to_restore_is_nothing_to_do(agent):
    a = agent()
    session(a)
    rewind(a, "files")
    c, out = rewind(a, "files")
    assert c["noop"] is True and out == {"status": "nothing-to-do"}


def test_mode_and_dirty_are_checked(agent):
    a = agent()
    session(a)
    with pytest.raises(TurnbackError) as info:
        a.wb.rewind.prepare({"boundary": B2, "mode": "code"})
    assert info.value.code == "invalid-params"
    with pytest.raises(TurnbackError) as info:
        a.wb.rewind.prepare({"boundary": B2, "dirty": [a.uri("a.txt")]})
    assert info.value.code == "unsaved-changes"
    # the conversation alone writes no file, so an unsaved buffer does not stop it
    c = a.wb.rewind.prepare({"boundary": B2, "mode": "conversation", "dirty": [a.uri("a.txt")]})
    assert c["files"][0]["action"] == "kept"


def test_files_only_keep_user_edits(agent):
    a = agent()
    session(a)
    (a.root / "b.txt").write_text("mine")
    a.wb.turns.capture({"uris": [a.uri("b.txt")]})
    c, out = rewind(a, "files", keepUserEdits=True)
    assert out["kept"] == [a.uri("b.txt")]
    assert a.files() == {"a.txt": b"a1", "b.txt": b"mine"}
    assert a.log()["restores"][0]["paths"] == [a.uri("a.txt")]


def test_a_merged_edit_of_files_only_stays_the_users_for_the_next_rewind(agent):
    """Files only with keep-my-edits writes a merge of the user's edit, yet the edit stays the
    user's: a later rewind that would undo it flags it (issue 43, seed 7102: it was recorded as
    turnback's own restore, which the next plan undoes unflagged)."""
    a = agent()
    (a.root / "a.txt").write_text("1\n2\n3\n4\n")
    a.turn("one", {"a.txt": "1\n2\n3\nT\n"})
    a.turn("two", {"b.txt": "b"})
    (a.root / "a.txt").write_text("U\n2\n3\nT\n")
    a.wb.turns.capture({"uris": [a.uri("a.txt")]})
    c, out = rewind(a, "files", boundary={"kind": "beforePrompt", "turn": 1}, keepUserEdits=True)
    entry = next(f for f in c["files"] if f["path"] == "a.txt")
    assert entry["merge"]["result"] == "merged" and out["merged"] == [a.uri("a.txt")]
    assert a.files()["a.txt"] == b"U\n2\n3\n4\n"
    for mode in ("all", "files"):
        c = a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 1}, "mode": mode})
        f = next(f for f in c["files"] if f["path"] == "a.txt")
        assert (f["action"], f["userEdit"], f.get("userEditBy")) == ("restore", True, "capture-request")
