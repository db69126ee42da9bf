"""`state_refs` names exactly the objects a state reaches: images, step results, instruction texts,
between-turn changes; never a marker (absent, unknown, folder) and never an empty slot."""

from __future__ import annotations

from turnback.model.images import ABSENT, FOLDER, UNKNOWN
from turnback.model.steps import Step
from turnback.model.turns import FileEntry, Turn
from turnback.timeline.book import new_session
from turnback.timeline.staterefs import state_refs


def _d(i: int) -> str:
    return f"{i:032x}"


def test_every_kind_of_reference_is_named_and_no_marker_is():
    state = new_session()
    turn = Turn(1, "chat", "do it", state="settled")
    turn.files["a.txt"] = FileEntry("a.txt", 1, 0.0, ABSENT, _d(1))
    turn.files["b.txt"] = FileEntry("b.txt", 1, 0.0, _d(2), UNKNOWN)
    turn.files["src/"] = FileEntry("src/", 1, 0.0, ABSENT, FOLDER)
    turn.steps.append(Step("s1.0", 1, "edit", "workspace", result=_d(3)))
    turn.steps.append(Step("s1.1", 1, "edit", "workspace"))  # no result
    turn.instructions["CLAUDE.md"] = _d(4)
    state.turns.append(turn)
    state.known["a.txt"] = _d(1)
    state.known["c.txt"] = _d(5)
    state.known["gone.txt"] = ABSENT
    state.known["src/"] = FOLDER
    state.between[1] = {"c.txt": (_d(6), _d(5)), "d.txt": (ABSENT, UNKNOWN)}
    assert state_refs(state) == {_d(i) for i in range(1, 7)}
