"""The user's own edits are never overwritten silently: flagged, named, kept on request; a rewind to the
current state does nothing."""

from __future__ import annotations

import pytest


def session(a):
    """Six turns; the sixth edits README.md; then the user edits it again between turns (seen by a
    watcher), the scenario of issue 15 §1."""
    (a.root / "README.md").write_text("r0\n")
    for i in range(1, 6):
        a.turn(f"turn {i}", {"a.txt": f"a{i}"})
    a.turn("turn 6", {"README.md": "r6\n", "a.txt": "a6"})
    (a.root / "README.md").write_text("r6\nmine\n")
    a.wb.turns.capture_rels(["README.md"], by="watch")


def prepare(a, boundary):
    return a.wb.rewind.prepare({"boundary": boundary})


def by_path(c):
    return {f["path"]: f for f in c["files"]}


def test_a_captured_edit_between_turns_is_flagged_with_who_made_it(agent):
    a = agent()
    session(a)
    c = prepare(a, {"kind": "afterResponse", "turn": 5})
    files = by_path(c)
    assert files["README.md"]["action"] == "restore"
    assert files["README.md"]["externalChange"] is False  # captured: not "external" ...
    assert files["README.md"]["userEdit"] is True  # ... but the user's all the same
    assert files["README.md"]["userEditBy"] == "disk-change"
    assert files["a.txt"]["userEdit"] is False  # turn 6 made that change
    assert "README.md (changed on disk)" in c["summary"]
    assert "keeping your edits: README.md conflict with turn 6: left as it is now" in c["summary"]


def test_a_save_in_the_editor_is_named_as_such(agent):
    a = agent()
    session(a)
    (a.root / "a.txt").write_text("my own a\n")
    a.wb.turns.capture_rels(["a.txt"], by="save")
    files = by_path(prepare(a, {"kind": "afterResponse", "turn": 5}))
    assert files["a.txt"]["userEditBy"] == "editor-save"


def test_an_uncaptured_change_is_a_user_edit_too(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2"})
    (a.root / "a.txt").write_text("behind our back")  # nobody told turnback
    files = by_path(prepare(a, {"kind": "afterResponse", "turn": 1}))
    assert files["a.txt"]["externalChange"] is True
    assert files["a.txt"]["userEdit"] is True and files["a.txt"]["userEditBy"] == "uncaptured"


def test_the_flag_survives_a_reopen(agent):
    a = agent()
    session(a)
    a.reopen()
    files = by_path(prepare(a, {"kind": "afterResponse", "turn": 5}))
    assert files["README.md"]["userEdit"] is True
    assert files["README.md"]["userEditBy"] == "disk-change"


def test_commit_without_keep_overwrites_the_listed_edit(agent):
    a = agent()
    session(a)
    boundary = {"kind": "afterResponse", "turn": 5}
    c = prepare(a, boundary)
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert out["status"] == "committed" and "kept" not in out
    assert (a.root / "README.md").read_text() == "r0\n"


def test_keep_user_edits_leaves_them_and_lists_them(agent):
    a = agent()
    session(a)
    boundary = {"kind": "afterResponse", "turn": 5}
    c = prepare(a, boundary)
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"], "keepUserEdits": True})
    assert out["status"] == "committed"
    assert out["kept"] == [a.uri("README.md")]
    assert (a.root / "README.md").read_text() == "r6\nmine\n"  # the user's edit is still there
    assert (a.root / "a.txt").read_text() == "a5"  # the turn's change is undone
    assert a.wb.state.turn_count == 5
    # The kept edit is remembered as nobody's turn: rewinding further still flags it.
    files = by_path(prepare(a, {"kind": "afterResponse", "turn": 2}))
    assert files["README.md"]["userEdit"] is True
    assert files["README.md"]["to"] != files["README.md"]["from"]


def test_keep_user_edits_must_be_a_boolean(agent):
    a = agent()
    session(a)
    boundary = {"kind": "afterResponse", "turn": 5}
    c = prepare(a, boundary)
    from turnback.errors import InvalidParams
    with pytest.raises(InvalidParams):
        a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"], "keepUserEdits": "yes"})


def test_rewind_to_the_current_state_is_nothing_to_do(agent):
    a = agent()
    session(a)
    epoch = a.wb.state.epoch
    head = a.wb.book.head.seq if a.wb.book.head else None
    events = []
    a.wb.events.subscribe(lambda kind, params: events.append(kind))
    boundary = {"kind": "afterResponse", "turn": 6}
    c = prepare(a, boundary)
    assert c["noop"] is True and c["files"] == []
    assert c["discard"]["turnCount"] == 0
    assert c["summary"].startswith("Nothing to rewind")
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert out == {"status": "nothing-to-do"}
    assert a.wb.state.epoch == epoch  # no epoch
    assert (a.wb.book.head.seq if a.wb.book.head else None) == head  # nothing published
    assert "epoch" not in events
    assert (a.root / "README.md").read_text() == "r6\nmine\n"


def test_a_file_created_and_removed_inside_one_turn_is_not_planned(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("scratch.tmp", "x")
    a.delete("scratch.tmp")
    a.write("a.txt", "a2")
    a.settle()
    c = prepare(a, {"kind": "afterResponse", "turn": 1})
    assert "scratch.tmp" not in by_path(c)
    assert by_path(c)["a.txt"]["action"] == "restore"


def test_redo_flags_and_keeps_user_edits(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})
    boundary = {"kind": "afterResponse", "turn": 1}
    c = prepare(a, boundary)
    assert a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})["status"] == "committed"
    (a.root / "b.txt").write_text("my b")  # the user recreates b.txt after the rewind
    a.wb.turns.capture_rels(["b.txt"], by="save")
    group = a.wb.redo.list({})["groups"][0]
    plan = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    files = by_path(plan)
    assert files["b.txt"]["userEdit"] is True and files["b.txt"]["userEditBy"] == "editor-save"
    assert files["a.txt"]["userEdit"] is False
    out = a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": plan["planHash"],
                            "keepUserEdits": True})
    assert out["status"] == "committed" and out["kept"] == [a.uri("b.txt")]
    assert (a.root / "b.txt").read_text() == "my b"
    assert (a.root / "a.txt").read_text() == "a2"


def test_redo_offers_only_this_sessions_states(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2"})
    boundary = {"kind": "afterResponse", "turn": 1}
    c = prepare(a, boundary)
    a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert a.wb.redo.list({})["groups"]  # the 2-turn state the rewind left behind
    a.wb.sessions.start()  # park this session; a fresh one is live
    a.turn("other", {"b.txt": "b1"})
    listing = a.wb.redo.list({"all": True})
    sessions = {a.wb.store.heads.read(g["headSeq"]).session for g in listing["groups"]}
    assert sessions <= {a.wb.state.session_id}  # never the parked session's states
    assert not any(g["lastPrompt"] in ("one", "two") for g in listing["groups"])
