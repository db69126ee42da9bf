"""A folder is not a file (issue 26 §6): a watcher's event for a folder the agent created records no
`not-a-file` gap (VS Code's `**/*` watcher reports folders too), while a file that became a folder is
still a gap: the rewind cannot put that file back through the folder."""

from __future__ import annotations


def test_a_new_folder_is_no_gap(agent):
    a = agent()
    a.begin("make a package")
    (a.root / "tests").mkdir()
    a.wb.turns.capture_rels(["tests"], by="watch")
    a.write("tests/test_a.py", "def test(): pass\n")
    a.settle()
    (a.root / "docs").mkdir()  # between turns, too
    a.wb.turns.capture_rels(["docs"], by="watch")
    assert a.wb.live_gaps() == []
    assert all(not t["gaps"] for t in a.log()["turns"])


def test_a_file_turned_into_a_folder_is_still_a_gap(agent):
    a = agent()
    a.turn("write", {"notes": "n\n"})
    (a.root / "notes").unlink()
    (a.root / "notes").mkdir()
    a.wb.turns.capture_rels(["notes"], by="watch")
    assert [g["reason"] for g in a.wb.live_gaps()] == ["not-a-file"]


def test_a_watched_new_folder_brings_its_files_a_bounded_number_at_once(agent):
    """The files in a folder a watcher reports are captured with it, up to a bound (a capture
    never yields); the rest wait for the next sweep, which a turn's begin runs."""
    from turnback.capture.recorder import WATCHED_FOLDER_FILES

    a = agent()
    a.turn("one", {"a.txt": "1\n"})
    big = a.root / "big" / "inner"
    big.mkdir(parents=True)
    many = WATCHED_FOLDER_FILES + 8
    for i in range(many):
        (big / f"f{i:03}.txt").write_text(f"{i}\n")
    a.wb.turns.capture_rels(["big"], by="watch")
    known = [rel for rel in a.wb.state.known if rel.startswith("big/") and not rel.endswith("/")]
    assert len(known) == WATCHED_FOLDER_FILES
    a.begin("two")
    known = [rel for rel in a.wb.state.known if rel.startswith("big/") and not rel.endswith("/")]
    assert len(known) == many


def test_a_file_turned_into_a_folder_with_files_is_still_a_gap(agent):
    a = agent()
    a.turn("write", {"notes": "n\n"})
    (a.root / "notes").unlink()
    (a.root / "notes").mkdir()
    (a.root / "notes" / "todo.md").write_text("t\n")
    a.wb.turns.capture_rels(["notes"], by="watch")
    assert [g["reason"] for g in a.wb.live_gaps()] == ["not-a-file"]
    assert "notes/todo.md" in a.wb.state.known


def test_a_watched_folder_reached_through_a_link_is_not_walked(agent, tmp_path):
    """A folder whose path goes through a symbolic link (here to a folder outside the workspace)
    is never listed: nothing outside is read or recorded."""
    a = agent()
    a.turn("one", {"a.txt": "1\n"})
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "secret.txt").write_text("s\n")
    (a.root / "linked").symlink_to(outside, target_is_directory=True)
    assert a.wb.recorder.files_in_folder("linked/sub") is None
    assert a.wb.recorder.files_in_folder("linked") is None
    a.wb.turns.capture_rels(["linked/sub", "linked"], by="watch")
    assert not [rel for rel in a.wb.state.known if rel.startswith("linked")]
