"""Directive rules: state, rewind pruning, anchor reattachment, the wire shape."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from turnback.directives.rules import (consumed_subdirectives, find_anchor_line, prune_for_rewind,
                                       reattach_anchor, recompute_state, split_lines, to_wire)
from turnback.model.directives import DIRECTIVE_STATES, Attempt, Directive


def D(id="d1", request="make it faster", attempts=(), **kw) -> Directive:
    kw.setdefault("rel", "src/a.py")
    kw.setdefault("line", 10)
    kw.setdefault("character", 4)
    return Directive(id=id, request=request, attempts=list(attempts), **kw)


# -- (a) recompute_state ---------------------------------------------------------------------------

def test_state_order():
    assert recompute_state(D(attached=False, request=""), running_turn=None) == "detached"
    assert recompute_state(D(request="  \n\t"), running_turn=None) == "draft"
    assert recompute_state(D(), running_turn=None) == "ready"
    assert recompute_state(D(attempts=[Attempt(3, 1)]), running_turn=3) == "running"
    assert recompute_state(D(attempts=[Attempt(3, 1)]), running_turn=4) == "ready"
    assert recompute_state(D(attempts=[Attempt(3, 1, answer="a")]), running_turn=None) == "answered"
    assert recompute_state(D(attempts=[Attempt(3, 1, answer="a", patch="p")]),
                           running_turn=None) == "applied"
    assert recompute_state(D(attempts=[Attempt(3, 1, feedback="meh")]), running_turn=None) == "ready"
    # empty strings carry nothing
    assert recompute_state(D(attempts=[Attempt(3, 1, answer="", patch="")]),
                           running_turn=None) == "ready"


def test_the_last_attempt_decides():
    d = D(attempts=[Attempt(2, 1, patch="p"), Attempt(5, 1, answer="only talk")])
    assert recompute_state(d, running_turn=None) == "answered"
    d = D(attempts=[Attempt(5, 1, answer="only talk"), Attempt(7, 1, patch="p")])
    assert recompute_state(d, running_turn=None) == "applied"


def test_changed_request_leaves_ready_with_older_activity_surviving():
    d = D(request="now make it smaller", request_rev=2,
          attempts=[Attempt(2, 1, answer="done", patch="--- a\n+++ b\n")])
    assert recompute_state(d, running_turn=None) == "ready"
    assert d.attempts[0].patch  # the activity is still there
    # and an attempt at the new revision counts again
    d.attempts.append(Attempt(4, 2, answer="smaller now"))
    assert recompute_state(d, running_turn=None) == "answered"


def test_running_wins_over_results_and_detached_wins_over_running():
    d = D(attempts=[Attempt(6, 1, patch="p")])
    assert recompute_state(d, running_turn=6) == "running"
    d.attached = False
    assert recompute_state(d, running_turn=6) == "detached"


def test_states_are_contract_states():
    for d in (D(), D(request=""), D(attached=False), D(attempts=[Attempt(1, 1, answer="x")])):
        assert recompute_state(d, running_turn=None) in DIRECTIVE_STATES


# -- (b) prune_for_rewind --------------------------------------------------------------------------

def test_prune_drops_late_attempts_and_reports():
    parent = D("p", attempts=[Attempt(2, 1, answer="first"), Attempt(5, 1, patch="big patch",
                                                                     feedback="nice",
                                                                     consumed=["sub"])],
               state="applied")
    sub = D("sub", parent_id="p", request="also rename x", state="ready")
    other = D("o", attempts=[Attempt(1, 1, answer="old")], state="answered")
    before = copy.deepcopy({"p": parent, "sub": sub, "o": other})
    after, consequences = prune_for_rewind({"p": parent, "sub": sub, "o": other},
                                           discard_from_turn=4)
    # input untouched, outputs are new objects
    assert {"p": parent, "sub": sub, "o": other} == before
    assert after["p"] is not parent and after["p"].attempts[0] is not parent.attempts[0]
    # user-authored records all survive
    assert set(after) == {"p", "sub", "o"}
    assert after["p"].request == parent.request and after["sub"].parent_id == "p"
    assert [a.turn for a in after["p"].attempts] == [2]
    assert after["p"].state == "answered"
    assert consequences == [{"id": "p", "attemptsDiscarded": 1, "stateAfter": "answered",
                             "subdirectivesReturned": ["sub"]}]


def test_consumed_subdirective_returns_after_consuming_attempt_is_discarded():
    parent = D("p", attempts=[Attempt(3, 1, patch="p1", consumed=["s1"]),
                              Attempt(6, 1, patch="p2", consumed=["s2"])], state="applied")
    s1, s2 = D("s1", parent_id="p"), D("s2", parent_id="p")
    all_ = {"p": parent, "s1": s1, "s2": s2}
    assert consumed_subdirectives(parent) == {"s1", "s2"}
    wire = to_wire(parent, "file:///w/src/a.py", all_)
    assert wire["subdirectives"] == [{"id": "s1", "consumed": True}, {"id": "s2", "consumed": True}]
    after, consequences = prune_for_rewind(all_, discard_from_turn=5)
    assert consumed_subdirectives(after["p"]) == {"s1"}
    wire = to_wire(after["p"], "file:///w/src/a.py", after)
    assert wire["subdirectives"] == [{"id": "s1", "consumed": True}, {"id": "s2", "consumed": False}]
    assert consequences[0]["subdirectivesReturned"] == ["s2"]


def test_prune_reports_state_change_without_lost_attempts():
    # stored state was stale ("running" from a turn that is gone); nothing to drop, but state changes
    d = D(attempts=[Attempt(2, 1, answer="a")], state="running")
    after, consequences = prune_for_rewind({"d1": d}, discard_from_turn=3)
    assert consequences == [{"id": "d1", "attemptsDiscarded": 0, "stateAfter": "answered",
                             "subdirectivesReturned": []}]
    # unchanged directives are not reported
    after2, consequences2 = prune_for_rewind(after, discard_from_turn=3)
    assert consequences2 == []


def test_prune_everything_and_order_is_by_id():
    ds = {k: D(k, attempts=[Attempt(1, 1, answer="x")], state="answered") for k in ("b", "a", "c")}
    after, consequences = prune_for_rewind(ds, discard_from_turn=1)
    assert [c["id"] for c in consequences] == ["a", "b", "c"]
    assert all(c["stateAfter"] == "ready" and c["attemptsDiscarded"] == 1 for c in consequences)
    assert all(not d.attempts for d in after.values())


def test_prune_reattaches_against_restored_texts():
    d = D(line=1, anchor_text="def f():", attempts=[Attempt(4, 1, patch="p")], state="applied")
    after, consequences = prune_for_rewind({"d1": d}, discard_from_turn=4,
                                           texts={"src/a.py": "x = 1\n"})
    assert after["d1"].attached is False
    assert consequences == [{"id": "d1", "attemptsDiscarded": 1, "stateAfter": "detached",
                             "subdirectivesReturned": []}]
    after, _ = prune_for_rewind({"d1": d}, discard_from_turn=4,
                                texts={"src/a.py": "x = 1\ndef f():\n"})
    assert after["d1"].attached and after["d1"].state == "ready"


# -- (c) reattach_anchor ---------------------------------------------------------------------------

TEXT = "import os\n\ndef f():\n    return 1\n"


def test_anchor_stays_when_its_line_still_matches():
    d = D(line=2, anchor_text="def f():")
    out = reattach_anchor(d, TEXT)
    assert (out.line, out.attached, out.state) == (2, True, "ready")
    # compared stripped: indentation changes do not move it
    out = reattach_anchor(D(line=2, anchor_text="  def f():  "), TEXT)
    assert out.line == 2 and out.attached


def test_anchor_whose_line_moved_down_by_three_reattaches():
    d = D(line=2, character=4, anchor_text="def f():")
    moved = "# a\n# b\n# c\n" + TEXT
    out = reattach_anchor(d, moved)
    assert (out.line, out.character, out.attached) == (5, 4, True)
    assert out.anchor_text == "def f():"
    assert d.line == 2  # the input is not mutated


def test_anchor_whose_text_vanished_detaches():
    d = D(line=2, anchor_text="def f():", attempts=[Attempt(1, 1, answer="a")], state="answered")
    out = reattach_anchor(d, "import os\n\ndef g():\n")
    assert out.attached is False and out.state == "detached"
    assert (out.line, out.anchor_text) == (2, "def f():")  # kept for a later reattachment
    assert d.attached is True
    # and a later restore brings it back
    back = reattach_anchor(out, TEXT)
    assert back.attached and back.state == "answered"


def test_absent_file_detaches():
    assert reattach_anchor(D(line=0, anchor_text="x"), None).attached is False
    assert reattach_anchor(D(line=0, anchor_text=""), None).attached is False


def test_nearest_match_then_earlier_line():
    lines = ["x", "a", "x", "b", "c", "x"]
    assert find_anchor_line(lines, 3, "x") == 2  # distance 1 beats distance 2
    assert find_anchor_line(lines, 4, "x") == 5  # distance 1 beats distance 2
    lines = ["x", "b", "x"]
    assert find_anchor_line(lines, 1, "x") == 0  # tie: the earlier line
    assert find_anchor_line(lines, 50, "x") == 2  # line past the end still searches
    assert find_anchor_line(["a"], 0, "zzz") is None


def test_empty_anchor_attaches_when_the_line_exists():
    assert reattach_anchor(D(line=3, anchor_text=""), TEXT).attached  # line 3 is "    return 1"
    assert reattach_anchor(D(line=4, anchor_text=""), TEXT).attached  # the empty line after the break
    assert not reattach_anchor(D(line=5, anchor_text=""), TEXT).attached
    assert not reattach_anchor(D(line=-1, anchor_text=""), TEXT).attached


def test_lsp_line_breaks_only():
    assert split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert split_lines("a\x0cb\u2028c") == ["a\x0cb\u2028c"]  # not LSP line breaks
    assert split_lines("") == [""]
    out = reattach_anchor(D(line=0, anchor_text="d"), "a\r\nb\rc\nd")
    assert out.line == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", " a ", "", "c"]), max_size=12), st.integers(-2, 14),
       st.sampled_from(["a", "b", "", "zz"]))
def test_reattach_lands_on_a_matching_line_or_detaches(lines, line, anchor):
    d = D(line=line, anchor_text=anchor)
    out = reattach_anchor(d, "\n".join(lines))
    if out.attached:
        got = split_lines("\n".join(lines))[out.line]
        assert anchor == "" or got.strip() == anchor.strip()
        if anchor:  # nothing matching is strictly nearer
            for i, text in enumerate(split_lines("\n".join(lines))):
                if text.strip() == anchor.strip():
                    assert abs(i - line) >= abs(out.line - line)
    else:
        assert out.state == "detached"


# -- (d) wire ----------------------------------------------------------------------------------------

def test_wire_shape_is_exact():
    d = D("p", attempts=[Attempt(4, 1, answer="a", consumed=["s1"]), Attempt(2, 1, patch="diff")],
          state="answered", created=1.0)
    s2 = D("s2", parent_id="p", created=3.0)
    s1 = D("s1", parent_id="p", created=2.0)
    unrelated = D("u", parent_id="zzz")
    wire = to_wire(d, "file:///w/src/a.py", [d, s2, s1, unrelated])
    assert wire == {
        "id": "p", "uri": "file:///w/src/a.py",
        "anchor": {"line": 10, "character": 4, "attached": True},
        "request": "make it faster", "state": "answered",
        "attempts": [{"turn": 2, "patch": "diff"}, {"turn": 4, "answer": "a"}],
        "subdirectives": [{"id": "s1", "consumed": True}, {"id": "s2", "consumed": False}],
    }
    # a mapping works too
    assert to_wire(d, "file:///w/src/a.py", {"p": d, "s1": s1, "s2": s2}) == wire
