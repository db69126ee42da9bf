"""Redo: grouping of published heads, staleness, what comes back and what does not."""

from __future__ import annotations

import pytest

from turnback.errors import NoHeads


def rewind(a, boundary):
    c = a.wb.rewind.prepare({"boundary": boundary})
    assert a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})["status"] == "committed"


def redo(a, head_seq):
    p = a.wb.redo.prepare({"headSeq": head_seq})
    out = a.wb.redo.commit({"headSeq": head_seq, "planHash": p["planHash"]})
    assert out["status"] == "committed", out
    return p, out


def test_groups_offer_the_newest_settled_head_of_each_state_but_not_the_current_one(agent):
    a = agent(publish_interval=0.0)  # publish inside turns too: those heads are incomplete
    a.turn("one", {"a.txt": "1"})
    a.begin("two")
    a.write("a.txt", "2")  # a debounced publication of a running turn
    a.settle()
    a.turn("three", {"a.txt": "3"})
    heads = [a.wb.store.heads.read(s) for s in a.wb.store.heads.list_seqs()]
    assert any(not h.settled for h in heads)
    expected = [h for h in sorted(heads, key=lambda h: -h.seq)
                if h.settled and h.turn_count < 3 and h.seq == max(
                    x.seq for x in heads if x.settled and x.turn_count == h.turn_count)]
    # Before any rewind every earlier state is an ancestor of the current one: nothing to redo,
    # but the whole history is one request away.
    listing = a.wb.redo.list()
    assert listing["groups"] == [] and listing["hidden"] == len(expected)
    assert not listing["available"] and "all states" in listing["reason"]
    every = a.wb.redo.list({"all": True})["groups"]
    assert [(g["headSeq"], g["turnCount"], g["forkPoint"], g["created"], g["lastPrompt"])
            for g in every] == [(h.seq, h.turn_count, h.fork_point, h.created, h.last_prompt)
                                for h in expected]
    assert all(g["ancestor"] for g in every)
    rewind(a, {"kind": "beforePrompt", "turn": 2})
    groups = a.wb.redo.list()["groups"]
    # What the rewind left behind, newest first, and not the 1-turn ancestor of the current state.
    assert [g["turnCount"] for g in groups] == [3, 2]
    assert [g["headSeq"] for g in groups] == sorted((g["headSeq"] for g in groups), reverse=True)
    assert not any(g["ancestor"] for g in groups)
    assert groups[0]["changes"] == {"files": 1, "paths": ["a.txt"]}
    assert 1 in [g["turnCount"] for g in a.wb.redo.list({"all": True})["groups"]]


def test_redo_brings_back_files_conversation_and_retained_artifacts(agent):
    a = agent()
    (a.root / "a.txt").write_text("0")
    a.turn("one", {"a.txt": "1"})
    a.begin("two", instructions={"AGENTS.md": "be brief"})
    a.write("a.txt", "2")
    a.write("new.txt", "created in two")
    a.step(kind="shell", scope="host", result="ok: 3 tests passed")
    a.wb.turns.respond({"turn": 2, "text": "all done"})
    a.wb.turns.agent_transcript({"agentId": "helper", "turn": 2, "text": "sub-agent notes"})
    a.settle()
    before_files, before_log = a.files(), a.log()
    head = a.wb.book.head.seq
    rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert a.files() == {"a.txt": b"1"}
    events = []
    a.wb.events.subscribe(lambda n, p: events.append((n, p)))
    _plan, out = redo(a, head)
    assert a.files() == before_files
    log = a.log()
    assert [t["response"] for t in log["turns"]] == [t["response"] for t in before_log["turns"]]
    turn2 = a.wb.state.turn(2)
    assert a.wb.store.objects.get(turn2.steps[0].result) == b"ok: 3 tests passed"
    assert a.wb.store.objects.get(turn2.instructions["AGENTS.md"]) == b"be brief"
    assert a.wb.state.agents["helper"].text == "sub-agent notes"
    assert [p for n, p in events if n == "epoch"] == [
        {"source": "redo", "sessionId": a.wb.state.session_id, "turnCount": 2, "epoch": 2}]


def test_redo_keeps_directive_records_as_the_rewind_left_them(agent):
    a = agent()
    (a.root / "src.py").write_text("x = 1\n")
    d = a.wb.directives.upsert({"uri": a.uri("src.py"), "anchor": {"line": 0, "character": 0},
                                "request": "make x two"})
    n = a.begin("", kind="directive", directiveId=d["id"])
    a.write("src.py", "x = 1\n# x is two\n")
    a.wb.directives.record({"directiveId": d["id"], "turn": n, "answer": "done"})
    a.settle()
    head = a.wb.book.head.seq
    rewind(a, {"kind": "beforeDirectiveAttempt", "directiveId": d["id"], "turn": n})
    assert a.wb.directives.list()["directives"][0]["attempts"] == []
    redo(a, head)
    assert a.files()["src.py"] == b"x = 1\n# x is two\n"
    assert a.wb.directives.list()["directives"][0]["attempts"] == []  # not resurrected


def test_stale_redo_changes_nothing(agent):
    a = agent()
    a.turn("one", {"a.txt": "1"})
    a.turn("two", {"a.txt": "2"})
    head = a.wb.book.head.seq
    rewind(a, {"kind": "beforePrompt", "turn": 2})
    p = a.wb.redo.prepare({"headSeq": head})
    (a.root / "a.txt").write_text("edited meanwhile")
    files, log = a.files(), a.log()
    out = a.wb.redo.commit({"headSeq": head, "planHash": p["planHash"]})
    assert out["status"] == "stale" and out["plan"]["planHash"] != p["planHash"]
    assert a.files() == files and a.log() == log


def test_redo_preparation_takes_no_lease(agent):
    from turnback.workbench import Workbench

    a = agent()
    a.turn("one", {"a.txt": "1"})
    a.turn("two", {"a.txt": "2"})
    head = a.wb.book.head.seq
    rewind(a, {"kind": "beforePrompt", "turn": 2})
    observer = Workbench.open(a.root, a.options)
    try:
        assert not observer.is_owner
        observer.follow()
        assert observer.redo.list()["groups"]
        assert observer.redo.prepare({"headSeq": head})["turnCount"] == 2
    finally:
        observer.close()


def test_plain_file_stores_have_no_redo(agent):
    a = agent(store_kind="pid")
    a.turn("one", {"a.txt": "1"})
    listed = a.wb.redo.list()
    assert listed["available"] is False and "PID" in listed["reason"]
    with pytest.raises(NoHeads):
        a.wb.redo.prepare({"headSeq": 1})
