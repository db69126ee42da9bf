"""Exact trees (issue 25, item 3): Redo, rewind and fork produce exactly the target state, files,
permission bits and folders: files the target never had are listed and removed (a user's own kept
with keepUserEdits, and listed as kept), empty folders restored and removed as the target has them,
a folder that holds what turnback never captured left with a gap. Folders are part of the state."""

from __future__ import annotations

import os

import cbor2
import pytest
from travelkit import fork, tree

FOLDER = "folder"  # model/images.FOLDER: a folder key's image

BEFORE_TWO = {"kind": "beforePrompt", "turn": 2}


def rewind(a, boundary=BEFORE_TWO, **extra):
    c = a.wb.rewind.prepare({"boundary": boundary})
    return c, a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"], **extra})


def redo(a, pick, **extra):
    group = next(g for g in a.wb.redo.list()["groups"] if pick(g))
    plan = a.wb.redo.prepare({"headSeq": group["headSeq"]})
    return plan, a.wb.redo.commit({"headSeq": group["headSeq"], "planHash": plan["planHash"],
                                   **extra})


def folders_and_modes(a):
    """Turn 1: a.txt, run.sh (644) and the empty folder keep/empty. Turn 2 removes keep/empty,
    makes build/out (empty) and new/deep/d.txt, and makes run.sh executable. Returns the trees
    after each turn."""
    (a.root / "keep" / "empty").mkdir(parents=True)
    a.begin("one")
    a.write("a.txt", "a1")
    a.write("run.sh", "echo\n")
    os.chmod(a.root / "run.sh", 0o644)
    a.settle()
    one = tree(a.root)
    a.begin("two")
    a.write("new/deep/d.txt", "d2")
    (a.root / "build" / "out").mkdir(parents=True)
    os.rmdir(a.root / "keep" / "empty")
    os.chmod(a.root / "run.sh", 0o755)
    a.settle()
    return one, tree(a.root)


def test_rewind_and_redo_restore_and_remove_folders_exactly(agent):
    a = agent()
    one, two = folders_and_modes(a)
    assert "keep/empty/" in one and "build/out/" in two and two["run.sh"][1] == 0o755
    c, out = rewind(a)
    planned = {f["path"]: f["action"] for f in c["files"] if f["action"] != "unchanged"}
    assert planned == {"keep/empty/": "restore", "build/": "delete", "build/out/": "delete",
                       "new/": "delete", "new/deep/": "delete", "new/deep/d.txt": "delete",
                       "run.sh": "restore"}
    assert out["status"] == "committed" and tree(a.root) == one
    a.reopen()
    plan, out = redo(a, lambda g: g["turnCount"] == 2)
    assert out["status"] == "committed" and tree(a.root) == two
    c, out = rewind(a)
    assert tree(a.root) == one


def test_a_fork_in_place_and_a_worktree_fork_have_the_folders_of_turn_k(agent, tmp_path):
    a = agent()
    one, _two = folders_and_modes(a)
    out = fork(a, 1, worktree=str(tmp_path / "wt"))
    assert out["status"] == "forked"
    assert tree(tmp_path / "wt") == one  # the empty folder of turn 1 is there too
    assert fork(a, 1)["status"] == "forked" and tree(a.root) == one


def test_a_folder_with_uncaptured_files_is_left_with_a_gap(agent):
    a = agent()
    (a.root / ".gitignore").write_text("*.log\n")
    a.turn("one", {"a.txt": "a1"})
    a.begin("two")
    a.write("gen/out.txt", "generated")
    (a.root / "gen" / "trace.log").write_text("ignored, never captured")
    a.settle()
    c, out = rewind(a)
    assert out["status"] == "committed"
    gaps = {(g["uri"].rsplit("/ws0/", 1)[1], g["reason"]) for g in c["gaps"] if g.get("uri")}
    assert ("gen/", "folder-not-empty") in gaps
    assert sorted(os.listdir(a.root / "gen")) == ["trace.log"]  # the turn's file went, the rest stays


def test_redo_into_the_frozen_parent_removes_the_branchs_new_files(agent):
    """The defect: the branch's own files stayed, unlisted, and then survived a rewind to turn 1."""
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2"})
    one_tree = None
    assert fork(a, 1)["status"] == "forked"
    one_tree = tree(a.root)
    a.turn("branch two", {"n.txt": "made by the branch", "dir/m.txt": "m"})
    (a.root / "mine.txt").write_text("made by me between turns")
    a.wb.run(a.wb.sweep_job())  # seen between turns: the user's own new file
    plan, out = redo(a, lambda g: g.get("frozenParent"))
    planned = {f["path"]: f["action"] for f in plan["files"] if f["action"] != "unchanged"}
    assert planned == {"a.txt": "restore", "n.txt": "delete", "dir/": "delete",
                       "dir/m.txt": "delete", "mine.txt": "delete"}
    assert [f["path"] for f in plan["files"] if f.get("userEdit")] == ["mine.txt"]
    assert out["status"] == "committed"
    assert tree(a.root) == {"a.txt": (b"a2", one_tree["a.txt"][1])}
    # A rewind to turn 1 and a fork at turn 1 now see exactly turn 1's tree: nothing of the branch.
    c, out = rewind(a, {"kind": "afterResponse", "turn": 1})
    assert out["status"] == "committed" and tree(a.root) == one_tree


def test_redo_keeping_your_edits_keeps_the_files_you_made_and_says_so(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    a.turn("two", {"a.txt": "a2"})
    assert fork(a, 1)["status"] == "forked"
    a.turn("branch two", {"n.txt": "made by the branch"})
    (a.root / "mine.txt").write_text("made by me between turns")
    a.wb.run(a.wb.sweep_job())
    plan, out = redo(a, lambda g: g.get("frozenParent"), keepUserEdits=True)
    assert out["status"] == "committed" and out["kept"] == [a.uri("mine.txt")]
    assert sorted(p.name for p in a.root.iterdir() if p.name != ".turnback") == ["a.txt", "mine.txt"]


def test_folders_are_part_of_the_state_in_format_2_objects_only(agent):
    a = agent()
    (a.root / "empty").mkdir()
    a.turn("one", {"a.txt": "a1"})
    state = a.wb.state
    assert state.known.get("empty/") == FOLDER and state.config.get("folders")
    a.wb.book.publish()
    objects = a.wb.store.objects
    codec = a.wb.book.codec
    _turns, shards = codec.outline(a.wb.book.head.body)
    versions = {}
    for digest in shards:
        doc = cbor2.loads(objects.get(digest))
        versions[digest] = (doc["v"], any(k.endswith("/") for k in doc["p"]["map"]))
    assert {v for v, has in versions.values() if has} == {2}  # older readers refuse these
    assert {v for v, has in versions.values() if not has} == {1}  # the rest are as they were


def test_a_store_that_never_knew_folders_learns_them_without_calling_them_edits(agent):
    a = agent()
    (a.root / "old" / "empty").mkdir(parents=True)
    a.turn("one", {"a.txt": "a1"})
    known = a.wb.state.known
    for rel in [r for r in known if r.endswith("/")]:
        del known[rel]  # as a store written before folders were recorded
    a.wb.state.config.pop("folders")
    a.wb.book.publish()
    a.reopen()
    a.turn("two", {"a.txt": "a2"})
    assert a.wb.state.known.get("old/empty/") == FOLDER
    assert all(not f["path"].endswith("/") for t in a.log()["turns"] for f in t["files"])
    c, _out = rewind(a)
    assert not [f for f in c["files"] if f["path"].endswith("/")] and os.path.isdir(a.root / "old/empty")


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_a_mode_change_alone_reads_as_bits(agent, kind):
    from turnback.cli.render import Renderer

    a = agent(store_kind=kind)
    a.begin("one")
    a.write("run.sh", "echo\n")
    os.chmod(a.root / "run.sh", 0o644)
    a.settle()
    a.begin("two")
    os.chmod(a.root / "run.sh", 0o755)
    a.settle()
    c = a.wb.rewind.prepare({"boundary": BEFORE_TWO})
    lines = Renderer(a.root.as_uri()).files(c["files"])
    line = next(x for x in lines if "run.sh" in x)
    assert line.split("run.sh", 1)[1].strip() == "mode 755 -> 644 (same bytes)", line
