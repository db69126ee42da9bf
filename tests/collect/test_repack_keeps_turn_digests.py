"""A repack moves objects into a pack without changing what they are: the turns a later publication
writes keep their digests (a turn's response chunks are reused, not written again as one chunk), so
Redo still sees which turns two states share and which states are earlier moments of this line.
Found by the real-editor suite: a live owner's background repack made every Redo choice read "turns
1-3 back" and offered the line's own earlier states as if a rewind had left them."""

from __future__ import annotations

from turnback.collect import repackplan

from .conftest import age_objects, open_wb, rewind, turn


def _turn_digests(wb) -> list[str]:
    return wb.book.codec.outline(wb.book.head.body)[0]


def _streamed_turn(wb, root, t: int) -> None:
    """A turn whose answer arrives in two parts with a publication between them (an agent's hooks
    in separate processes): its response is stored as two chunks."""
    n = wb.run(wb.turns.begin_job({"prompt": f"t{t}"}))["turn"]
    wb.turns.respond({"turn": n, "text": f"part one of {t}. "})
    (root / f"m{t}.py").write_text(f"turn {t}\n")
    wb.turns.capture({"uris": [(root / f"m{t}.py").as_uri()]})  # publishes (publish_interval 0)
    wb.turns.respond({"turn": n, "text": "part two."})
    wb.run(wb.turns.settle_job({"turn": n}))


def test_a_publication_after_a_repack_writes_the_same_turns_and_redo_still_counts_them(ws, monkeypatch):
    monkeypatch.setattr(repackplan, "MIN_LOOSE", 1)  # a small session's objects are packed too
    wb = open_wb(ws)
    for t in range(3):
        _streamed_turn(wb, ws, t)
    wb.close()
    wb = open_wb(ws)  # as an editor's server opens a store the agent's hooks wrote: turns read back
    before = _turn_digests(wb)
    age_objects(wb.store)
    assert wb.collection.run()["packsWritten"] == 1
    # The response chunks are in the pack now (their stored size changed, their bytes did not):
    # the next publication names the same turn objects.
    turn(wb, ws, "t3", [("m3.py", "turn 3\n")])
    assert _turn_digests(wb)[:3] == before
    assert [wb.state.turn(n).response for n in (1, 2, 3)] == [f"part one of {t}. part two." for t in range(3)]
    assert rewind(wb, 4)["status"] == "committed"
    listed = wb.redo.list({})
    [left] = listed["groups"]  # the 4-turn state the rewind left; the line's earlier states hidden
    assert (left["turnCount"], left["sharedTurns"]) == (4, 3), listed
    wb.close()
