"""Per-turn diffs (issue 26 §2): what a turn changed and every change from turn K on, the user's own
edits between turns listed as what they are, words instead of digests, the gap of a file too large to
capture, binary files, a frozen parent's turns, and the images an editor reads for its diff view."""

from __future__ import annotations

import pytest

from turnback.errors import TurnbackError


def session(a):
    a.turn("write the app", {"app.py": "def bye():\n    return 'bye'\n", "logo.png": b"\x89PNG\0a"})
    a.turn("rename bye", {"app.py": "def farewell():\n    return 'farewell'\n",
                          "logo.png": b"\x89PNG\0b"})
    (a.root / "app.py").write_text("# mine\ndef farewell():\n    return 'farewell'\n")
    a.wb.turns.capture_rels(["app.py"], by="save")
    a.turn("big data", {"data.bin": "x" * 5000, "notes.md": "n\n"})


def test_a_turns_diff_names_both_sides_in_words(agent):
    a = agent()
    session(a)
    out = a.wb.diffs.diff({"turn": 2})
    assert out["range"] == {"turn": 2}
    app = next(c for c in out["changes"] if c["path"] == "app.py")
    assert app["source"] == "turn" and app["prompt"] == "rename bye" and app["status"] == "modified"
    assert app["before"]["label"] == "before turn 2" and app["after"]["label"] == "after turn 2"
    assert (app["added"], app["removed"]) == (2, 2)
    assert app["diff"].splitlines()[:2] == ["--- app.py\tbefore turn 2", "+++ app.py\tafter turn 2"]
    assert "-def bye():" in app["diff"] and "+def farewell():" in app["diff"]
    assert "# mine" not in app["diff"]  # the user's edit is not the turn's
    logo = next(c for c in out["changes"] if c["path"] == "logo.png")
    assert logo["binary"] is True and "diff" not in logo


def test_since_lists_the_users_edits_between_the_turns_as_theirs(agent):
    a = agent()
    session(a)
    out = a.wb.diffs.diff({"since": 2})
    order = [(c["source"], c.get("turn", c.get("afterTurn")), c["path"]) for c in out["changes"]]
    assert order == [("turn", 2, "app.py"), ("turn", 2, "logo.png"), ("user", 2, "app.py"),
                     ("turn", 3, "data.bin"), ("turn", 3, "notes.md")]
    mine = out["changes"][2]
    assert mine["by"] == "save" and mine["status"] == "modified"
    assert mine["before"]["label"] == "as turn 2 left it"
    assert mine["after"]["label"] == "your edit after turn 2, saved in the editor"
    assert "+# mine" in mine["diff"] and (mine["added"], mine["removed"]) == (1, 0)
    assert out["range"] == {"since": 2, "through": 3}


def test_a_file_too_large_to_capture_is_its_gap_not_a_crash(agent):
    a = agent(max_file_bytes=4096)
    session(a)
    out = a.wb.diffs.diff({"turn": 3, "uri": a.uri("data.bin")})
    assert [c["path"] for c in out["changes"]] == ["data.bin"] and out["path"] == "data.bin"
    big = out["changes"][0]
    assert big["status"] == "gap" and big["gap"]["reason"] == "too-large"
    assert "4.9 KiB" in big["gap"]["detail"] and "diff" not in big


def test_a_folder_filters_to_its_files_and_outside_is_refused(agent, tmp_path):
    a = agent()
    a.turn("two files", {"src/a.py": "a\n", "src/b.py": "b\n", "top.py": "t\n"})
    out = a.wb.diffs.diff({"turn": 1, "uri": a.uri("src")})
    assert [c["path"] for c in out["changes"]] == ["src/a.py", "src/b.py"]
    assert all(c["status"] == "created" for c in out["changes"])
    with pytest.raises(TurnbackError) as bad:
        a.wb.diffs.diff({"turn": 1, "uri": (tmp_path / "elsewhere.py").as_uri()})
    assert bad.value.code == "outside-workspace"


@pytest.mark.parametrize("params, code", [
    ({}, "invalid-params"), ({"turn": 1, "since": 1}, "invalid-params"),
    ({"turn": 7}, "unknown-turn"), ({"turn": "1"}, "invalid-params"),
    ({"turn": 1, "sessionId": "nope"}, "not-found")])
def test_bad_requests_get_clear_codes(agent, params, code):
    a = agent()
    a.turn("one", {"a.py": "a\n"})
    with pytest.raises(TurnbackError) as bad:
        a.wb.diffs.diff(params)
    assert bad.value.code == code


def test_an_image_is_read_by_its_handle_and_only_if_the_session_has_it(agent):
    a = agent()
    session(a)
    app = next(c for c in a.wb.diffs.diff({"turn": 2})["changes"] if c["path"] == "app.py")
    before = a.wb.diffs.image({"image": app["before"]["image"]})
    assert before["text"] == "def bye():\n    return 'bye'\n" and before["binary"] is False
    after = a.wb.diffs.image({"turn": 2, "uri": a.uri("app.py"), "side": "after"})
    assert after["text"] == "def farewell():\n    return 'farewell'\n"
    logo = a.wb.diffs.image({"turn": 2, "uri": a.uri("logo.png"), "side": "after"})
    assert logo["binary"] is True and logo["text"] is None
    assert a.wb.diffs.image({"image": "absent"})["exists"] is False
    state_body = a.wb.book.head.body  # an object of the store that is no file's image
    for bad, code in ((state_body, "not-found"), ("../../etc/passwd", "invalid-params"),
                      ("0" * 32, "not-found")):
        with pytest.raises(TurnbackError) as err:
            a.wb.diffs.image({"image": bad})
        assert err.value.code == code


def test_a_corrupt_image_is_an_error_never_shown(agent):
    a = agent()
    session(a)
    app = next(c for c in a.wb.diffs.diff({"turn": 2})["changes"] if c["path"] == "app.py")
    digest = app["before"]["image"]
    path = a.wb.store.objects.path(digest)
    path.chmod(0o600)
    path.write_bytes(b"not what was stored")
    with pytest.raises(TurnbackError) as err:
        a.wb.diffs.image({"image": digest})
    assert err.value.code == "corrupt-store"


def test_a_frozen_parents_turns_can_be_diffed(agent):
    a = agent()
    session(a)
    parent = a.wb.state.session_id
    plan = a.wb.fork.prepare({"turn": 1})
    assert a.wb.fork.confirm({"turn": 1, "hash": plan["hash"]})["status"] == "forked"
    out = a.wb.diffs.diff({"turn": 2, "sessionId": parent})
    assert out["sessionId"] == parent
    app = next(c for c in out["changes"] if c["path"] == "app.py")
    assert "+def farewell():" in app["diff"]
    assert a.wb.diffs.image({"image": app["after"]["image"], "sessionId": parent})["text"].startswith(
        "def farewell")
