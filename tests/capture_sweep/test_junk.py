"""No junk in the history: turnback's own temporaries, editor and tool droppings, absent->absent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from turnback.capture.ignore import DEFAULT_IGNORE, IgnoreRules
from turnback.capture.statcache import StatCache
from turnback.capture.sweep import sweep

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sessionkit import Agent  # noqa: E402

DROPPINGS = ["#ops.py#", "src/#ops.py#", ".#ops.py", "ops.py~", "src/.ops.py.swp", ".ops.py.swo",
             "4913", "src/4913", "ops.py___jb_tmp___", "ops.py___jb_old___", "ops.py.vsctmp",
             ".ops.py.tmp.1234", "src/calc/sedPf2Mon", ".goutputstream-AB12CD", "ops.py.kate-swp",
             ".ops.py.tbtmp.a41330689344"]
REAL = ["ops.py", "sed.py", "sediment", "4913.txt", "notes#1.md", "src/calc/sed", "README~md"]


@pytest.mark.parametrize("rel", DROPPINGS)
def test_default_list_ignores_droppings(ws, rel):
    assert IgnoreRules(ws).ignored(rel, False), rel


@pytest.mark.parametrize("rel", REAL)
def test_default_list_leaves_real_files_alone(ws, rel):
    assert not IgnoreRules(ws).ignored(rel, False), rel


def test_a_gitignore_line_re_includes_a_default(ws):
    (ws.root / ".gitignore").write_text("!*~\n")
    rules = IgnoreRules(ws)
    assert not rules.ignored("ops.py~", False)
    assert not rules.junk("ops.py~")
    assert rules.ignored("#ops.py#", False)


def test_turnbacks_own_temporaries_cannot_be_re_included(ws):
    (ws.root / ".gitignore").write_text("!*\n")
    assert IgnoreRules(ws).ignored(".ops.py.tbtmp.a41330689344", False)
    assert IgnoreRules(ws, ()).junk("x/.a.tbtmp.0123")


def test_the_list_can_be_replaced(ws):
    rules = IgnoreRules(ws, ["*.bak"])
    assert rules.ignored("x.bak", False) and not rules.ignored("x~", False)
    assert not IgnoreRules(ws, ()).ignored("#ops.py#", False)


def test_sweep_skips_droppings(ws, objects):
    for rel in DROPPINGS[:6] + REAL[:3]:
        p = ws.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    got = set(sweep(ws, objects, StatCache(), max_bytes=100, rules=IgnoreRules(ws)).images)
    assert got == set(REAL[:3])


def test_default_list_is_documented():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "capture.md").read_text()
    for pattern in DEFAULT_IGNORE:
        assert f"`{pattern.lstrip(chr(92))}`" in doc, pattern


# -- through a real session -------------------------------------------------------------------------

def session(tmp_path, **options) -> Agent:
    root = tmp_path / "ws"
    (root / "src" / "calc").mkdir(parents=True)
    (root / "src" / "calc" / "ops.py").write_text("def add(a, b):\n    return a + b\n")
    a = Agent(root, **options)
    a.turn("one", {"src/calc/ops.py": "def add(a, b):\n    return a + b  # one\n"})
    return a


def log_paths(a) -> set[str]:
    return {f["path"] for t in a.log()["turns"] for f in t["files"]}


def test_sed_i_and_an_emacs_auto_save_leave_no_checkpoint(tmp_path):
    a = session(tmp_path)
    try:
        a.begin("two")
        calc = a.root / "src" / "calc"
        # sed -i: writes sedXXXXXX beside the file, renames it over; a watcher reports both names.
        (calc / "sedPf2Mon").write_text("def add(a, b):\n    return a + b  # two\n")
        a.wb.turns.capture_rels(["src/calc/sedPf2Mon"], by="watch")
        (calc / "sedPf2Mon").rename(calc / "ops.py")
        a.wb.turns.capture_rels(["src/calc/sedPf2Mon", "src/calc/ops.py"], by="watch")
        # Emacs auto-saves the buffer, then removes the auto-save file on save.
        (calc / "#ops.py#").write_text("unsaved buffer text")
        a.wb.turns.capture_rels(["src/calc/#ops.py#"], by="watch")
        a.settle()  # the settle sweep sees #ops.py# still there
        assert log_paths(a) == {"src/calc/ops.py"}
        c = a.wb.rewind.prepare({"boundary": {"kind": "afterResponse", "turn": 1}})
        assert [f["path"] for f in c["files"]] == ["src/calc/ops.py"]  # #ops.py# is not deleted
        (calc / "#ops.py#").unlink()
        a.begin("three")
        a.settle()
        assert log_paths(a) == {"src/calc/ops.py"}
    finally:
        a.close()


def test_turnbacks_own_temp_files_are_never_captured(tmp_path):
    a = session(tmp_path)
    try:
        tmp = a.root / "src" / "calc" / ".ops.py.tbtmp.a41330689344"
        tmp.write_text("half written")
        a.wb.turns.capture_rels(["src/calc/.ops.py.tbtmp.a41330689344"], by="watch")
        tmp.unlink()
        a.wb.turns.capture_rels(["src/calc/.ops.py.tbtmp.a41330689344"], by="watch")
        out = a.wb.turns.capture({"uris": [a.uri("src/calc/.ops.py.tbtmp.a41330689344")]})
        assert out["captured"][0]["checkpoint"] is None and out["gaps"] == []
        assert not any(".tbtmp." in rel for rel in a.wb.state.known)
        assert a.wb.state.between == {}
    finally:
        a.close()


def test_absent_before_and_after_is_no_checkpoint(tmp_path):
    a = session(tmp_path)
    try:
        a.begin("two")
        a.wb.turns.capture({"uris": [a.uri("never-there.txt")]})  # a hook names a path nobody made
        a.settle()
        assert "never-there.txt" not in log_paths(a)
        a.wb.turns.capture_rels(["also-never.txt"], by="watch")  # a watcher's stale delete event
        assert "also-never.txt" not in a.wb.state.known or a.wb.state.between == {}
        assert a.wb.state.between == {}
    finally:
        a.close()


def test_default_ignore_option_replaces_the_list(tmp_path):
    from turnback.workbench import Options

    opts = Options.from_init({"capture": {"defaultIgnore": []}})
    assert opts.default_ignore == ()
    a = session(tmp_path, default_ignore=())
    try:
        a.begin("two")
        (a.root / "notes.txt~").write_text("a backup I do want")
        a.settle()
        assert "notes.txt~" in log_paths(a)
    finally:
        a.close()


def test_a_too_large_gap_says_its_size_and_the_limit(tmp_path):
    a = session(tmp_path, max_file_bytes=16 << 20)
    try:
        big = a.root / "big.bin"
        with open(big, "wb") as f:
            f.truncate(21 << 20)  # sparse: 21 MiB without writing them
        a.begin("two")  # the pre-turn sweep finds it
        gaps = {g.reason: g for g in a.wb.state.live_gaps.values()}
        assert gaps["too-large"].detail == "21 MiB, over the 16 MiB limit"
        out = a.wb.turns.capture({"uris": [a.uri("big.bin")]})
        assert out["gaps"][0]["detail"] == "21 MiB, over the 16 MiB limit"
        a.settle()
    finally:
        a.close()
