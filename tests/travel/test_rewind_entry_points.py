"""Rewind: the three entry points, staleness, the candidate's honesty, and the fence."""

from __future__ import annotations

import os

import pytest

from turnback.errors import InvalidParams, TurnRunning, UnknownTurn


def four_turns(a):
    (a.root / "a.txt").write_text("a0")
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2", "b.txt": "b2"})
    a.turn("three", {"b.txt": None, "c/d.txt": "d3"})
    a.turn("four", {"a.txt": "a4"})


def rewind(a, boundary):
    c = a.wb.rewind.prepare({"boundary": boundary})
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert out["status"] == "committed", out
    return c, out


def test_after_response_keeps_that_turn(agent):
    a = agent()
    four_turns(a)
    c, _ = rewind(a, {"kind": "afterResponse", "turn": 2})
    assert (c["keep"]["turnCount"], c["discard"]["turnCount"]) == (2, 2)
    assert a.files() == {"a.txt": b"a2", "b.txt": b"b2"}
    assert [t["prompt"] for t in a.log()["turns"]] == ["one", "two"]


def test_before_prompt_discards_that_turn_and_its_answer(agent):
    a = agent()
    four_turns(a)
    c, _ = rewind(a, {"kind": "beforePrompt", "turn": 3})
    assert c["keep"]["last"]["prompt"] == "two" and c["discard"]["first"]["prompt"] == "three"
    assert a.files() == {"a.txt": b"a2", "b.txt": b"b2"}
    assert not (a.root / "c").exists() or not any((a.root / "c").iterdir())


def test_before_prompt_one_empties_the_session(agent):
    a = agent()
    four_turns(a)
    rewind(a, {"kind": "beforePrompt", "turn": 1})
    assert a.files() == {"a.txt": b"a0"}
    assert a.log()["turns"] == []


def test_before_directive_attempt_discards_it_and_every_later_turn(agent):
    a = agent()
    (a.root / "src.py").write_text("def f():\n    pass  # TODO\n")
    d = a.wb.directives.upsert({"uri": a.uri("src.py"), "anchor": {"line": 1, "character": 4},
                                "request": "implement f"})
    a.turn("chat first", {"notes.txt": "n1"})
    n = a.begin("", kind="directive", directiveId=d["id"])
    a.write("src.py", "def f():\n    return 42  # TODO\n")
    a.wb.directives.record({"directiveId": d["id"], "turn": n, "answer": "done", "patch": "@@"})
    a.settle()
    a.turn("chat after", {"notes.txt": "n3"})
    assert a.wb.directives.list()["directives"][0]["state"] == "applied"
    c, _ = rewind(a, {"kind": "beforeDirectiveAttempt", "directiveId": d["id"], "turn": n})
    assert c["directives"][0]["attemptsDiscarded"] == 1
    assert a.files()["src.py"] == b"def f():\n    pass  # TODO\n"
    assert a.files()["notes.txt"] == b"n1"
    listed = a.wb.directives.list()["directives"]
    assert listed[0]["request"] == "implement f"  # the user's record survives
    assert listed[0]["attempts"] == [] and listed[0]["state"] == "ready"


def test_directive_boundary_must_name_a_directive_turn(agent):
    a = agent()
    four_turns(a)
    with pytest.raises(InvalidParams):
        a.wb.rewind.prepare({"boundary": {"kind": "beforeDirectiveAttempt", "directiveId": "x",
                                          "turn": 2}})


def test_unknown_turn_and_running_turn_are_refused(agent):
    a = agent()
    four_turns(a)
    with pytest.raises(UnknownTurn):
        a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 9}})
    a.begin("five")
    with pytest.raises(TurnRunning):
        a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 2}})


def test_stale_plan_changes_nothing(agent):
    a = agent()
    four_turns(a)
    boundary = {"kind": "beforePrompt", "turn": 2}
    c = a.wb.rewind.prepare({"boundary": boundary})
    (a.root / "a.txt").write_text("edited after the confirmation was shown")
    files, log = a.files(), a.log()
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert out["status"] == "stale"
    assert out["candidate"]["planHash"] != c["planHash"]
    assert a.files() == files and a.log() == log
    assert any(f["externalChange"] for f in out["candidate"]["files"] if f["path"] == "a.txt")


def test_external_change_is_listed_and_overwritten_only_after_approval(agent):
    a = agent()
    four_turns(a)
    (a.root / "a.txt").write_text("someone else's edit")
    c, _ = rewind(a, {"kind": "beforePrompt", "turn": 4})
    f = next(f for f in c["files"] if f["path"] == "a.txt")
    assert f["externalChange"] and f["action"] == "restore"
    assert "a.txt" in c["summary"]
    assert a.files()["a.txt"] == b"a2"


def test_candidate_effects_are_a_partition_of_the_discarded_steps(agent):
    a = agent()
    (a.root / "a.txt").write_text("a0")
    a.begin("one")
    a.write("a.txt", "a1")
    ids = [a.step(kind="file-write", scope="host", uris=["a.txt"]),
           a.step(kind="shell", summary="npm test"),
           a.step(kind="network-send", scope="crossing", summary="post comment"),
           a.step(kind="network-send", scope="crossing", held=True),
           a.step(kind="think", scope="none")]
    a.settle()
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    buckets = c["effects"]
    placed = [i for ids_ in buckets.values() for i in ids_]
    assert sorted(placed) == sorted(ids)
    assert buckets["restored"] == [ids[0]]
    assert buckets["crossedUncompensated"] == [ids[1], ids[2]]
    assert buckets["droppedBeforeCrossing"] == [ids[3]]
    assert buckets["provablyEmpty"] == [ids[4]]
    assert any(g["reason"] == "step-scope-unknown" for g in c["gaps"])


def test_workflow_is_cleared_and_counted(agent):
    a = agent()
    four_turns(a)
    a.wb.turns.workflow_set({"tasks": [{"id": 1}, {"id": 2}], "goals": [{"g": 1}]})
    c, _ = rewind(a, {"kind": "afterResponse", "turn": 3})
    assert c["workflowCleared"] == {"tasks": 2, "goals": 1, "agents": 0, "handoffs": 0}
    assert a.wb.turns.workflow_get() == {"tasks": [], "goals": [], "agents": [], "handoffs": []}


def test_git_head_and_index_are_named_as_a_gap(agent):
    a = agent()
    (a.root / ".git").mkdir()
    four_turns(a)
    c = a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 1}})
    git = [g for g in c["gaps"] if g["reason"] == "git-head-and-index"]
    # The reason's words say it; no detail says it again (both clients showed it twice).
    assert git == [{"uri": None, "turn": None, "reason": "git-head-and-index",
                    "words": "git's HEAD and index are not part of a rewind"}]


def test_symlinked_folder_leading_out_is_refused_with_no_write_outside(agent, tmp_path):
    a = agent()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "d.txt").write_text("not yours")
    four_turns(a)
    # After turn 3 made c/d.txt, someone replaces the folder c with a link to a folder outside.
    (a.root / "c" / "d.txt").unlink()
    (a.root / "c").rmdir()
    os.symlink(outside, a.root / "c")
    # Back to before turn 3, which created c/d.txt: the plan would delete it, through the link.
    c, _ = rewind(a, {"kind": "beforePrompt", "turn": 3})
    assert any(g["reason"] == "symlink" and g["uri"].endswith("c/d.txt") for g in c["gaps"])
    assert (outside / "d.txt").read_text() == "not yours"
    assert sorted(os.listdir(outside)) == ["d.txt"]


def test_restore_creates_missing_folders(agent):
    a = agent()
    four_turns(a)
    (a.root / "c" / "d.txt").unlink()
    (a.root / "c").rmdir()
    a.wb.turns.capture_rels(["c/d.txt"])
    rewind(a, {"kind": "afterResponse", "turn": 3})
    assert (a.root / "c" / "d.txt").read_text() == "d3"


def test_epoch_is_sent_once_per_commit_and_never_for_stale(agent):
    a = agent()
    four_turns(a)
    events = []
    a.wb.events.subscribe(lambda name, payload: events.append((name, payload)))
    boundary = {"kind": "afterResponse", "turn": 2}
    c = a.wb.rewind.prepare({"boundary": boundary})
    a.wb.rewind.commit({"boundary": boundary, "planHash": "0" * 32})
    assert not [e for e in events if e[0] == "epoch"]
    a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    epochs = [p for name, p in events if name == "epoch"]
    assert epochs == [{"source": "rewind", "sessionId": a.wb.state.session_id, "turnCount": 2,
                       "epoch": 1}]


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_rewind_survives_reopen(agent, kind):
    a = agent(store_kind=kind)
    four_turns(a)
    rewind(a, {"kind": "beforePrompt", "turn": 2})
    a.reopen()
    assert [t["prompt"] for t in a.log()["turns"]] == ["one"]
    assert a.files() == {"a.txt": b"a1"}


def test_directive_anchors_follow_saved_edits_and_stay_when_their_line_is_rewritten(agent):
    a = agent()
    (a.root / "src.py").write_text("import os\n# TODO: cache this\nx = 1\n")
    d = a.wb.directives.upsert({"uri": a.uri("src.py"), "anchor": {"line": 1, "character": 0},
                                "request": "add a cache"})
    events = []
    a.wb.events.subscribe(lambda name, p: events.append(p) if name == "directives" else None)
    (a.root / "src.py").write_text("import os\nimport sys\n\n# TODO: cache this\nx = 1\n")
    a.wb.turns.capture_rels(["src.py"])  # a save
    moved = a.wb.directives.list()["directives"][0]
    assert (moved["anchor"]["line"], moved["anchor"]["attached"]) == (3, True)
    assert events and events[-1]["directives"][0]["anchor"]["line"] == 3
    (a.root / "src.py").write_text("import os\nimport sys\n\n@cache\nx = 1\n")
    a.wb.turns.capture_rels(["src.py"])  # the anchored line itself was rewritten
    kept = a.wb.directives.list()["directives"][0]
    assert (kept["anchor"]["line"], kept["anchor"]["attached"]) == (3, True)
    assert kept["id"] == d["id"] and kept["request"] == "add a cache"


def test_directive_text_is_never_read_through_a_link_leading_out(agent, tmp_path):
    from turnback.travel.disk import read_text

    a = agent()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("password = 1\n")
    os.symlink(outside, a.root / "lib")
    (a.root / "own.py").write_text("mine\n")
    assert read_text(a.wb.ws, "lib/secret.py", max_bytes=1 << 20) is None
    assert read_text(a.wb.ws, "own.py", max_bytes=1 << 20) == "mine\n"
    d = a.wb.directives.upsert({"uri": a.uri("lib/secret.py"), "anchor": {"line": 0, "character": 0},
                                "request": "look"})
    assert a.wb.state.directives[d["id"]].anchor_text == ""  # the target's text was not read
