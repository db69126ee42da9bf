"""Issue 43's findings as fixed sequences of the model machine's own steps (the `@example`s of the
state machine): each ran into a divergence before its fix, and the machine checks every step of it
against the reference model, as it does the random sequences."""

from __future__ import annotations

import pytest
from test_model_machine import WithOwner, WithoutOwner


@pytest.fixture
def machine():
    made = []

    def make(kind=WithoutOwner):
        m = kind()
        made.append(m)
        m.start()
        return m
    yield make
    for m in made:
        m.teardown()


def test_a_a_saved_edit_redone_is_no_part_of_earlier_checkpoints(machine):
    m = machine()
    m.turn([])
    m.turn([("write", "b.bin", "text")])
    m.user_edit([("write", "a.txt", "text-5")])
    m.restore(k=2, at_end=True, pick=0)  # a.txt back to the end of turn 2: over the user's edit
    m.turn([("write", "d/x.txt", "text")])
    m.redo_to(5)  # the *before* head of the restore, with the user's edit
    m.rewind(n=1, after=False, mode="all", keep_edits=False)


def test_b_keep_edits_in_a_folder_the_plan_deletes(machine):
    m = machine()
    m.turn([("write", "d/x.txt", "text")])
    m.user_edit([("write", "d/x.txt", "text-5")])
    m.rewind(n=1, after=False, mode="all", keep_edits=True)
    m.rewind(n=1, after=False, mode="files", keep_edits=True) if m.s.turns else None


def test_c_a_merged_file_gets_the_right_bits(machine):
    m = machine()
    m.turn([])
    m.turn([("chmod", "a.txt", 0o755), ("write", "a.txt", "text-2")])
    m.user_edit([("chmod", "a.txt", 0o644), ("write", "a.txt", "text-25")])
    m.rewind(n=2, after=False, mode="all", keep_edits=True)
    # the model leaves a merge's bytes to the merge; its bits are the user's (the plan's too)
    assert m.s.tree["a.txt"][2] == 0o644


def test_d_a_folder_restore_then_redo_leaves_no_empty_folders(machine):
    m = machine()
    m.turn([("write", "d/e/y.txt", "text")])
    m.turn([("rmtree", "d/")])
    m.restore(k=1, at_end=True, pick=3)  # the folder d/ (specs: files, then folders)
    m.redo_to(4)


def test_a_folder_restore_over_a_folder_the_user_removed_is_redone_exactly(machine):
    """Seed 7231 (shrunk): the user removes a folder turnback knows (not captured); a restore of its
    parent makes it again with its file, and the Redo to the restore's *before* head takes both
    away. The restore made the known folder unrecorded, so the Redo left it behind, empty."""
    m = machine()
    m.user_edit([("write", "d/e/y.txt", "text")])
    m.turn([])  # captures d/e/ and its file
    m.user_edit([("rmtree", "d/e/")])  # not captured
    m.restore(k=1, at_end=True, pick=3)  # the folder d/ (specs: files, then folders)
    m.redo(pick=0)  # the one group: the restore's *before* head


def test_a_folder_a_redo_finds_gone_is_known_gone_in_its_head(machine):
    """Seed 7233 (shrunk by hand): a Redo to a head that lacks the folder `p/` finds a file `p`
    where it was (the user's, not captured): the folder is gone already. It was a gap
    `not-a-folder` and the Redo's head knew `p/` as before, so a later Redo to that head made the
    folder again over the user's file."""
    m = machine()
    m.turn([("delete", "p")])
    m.user_edit([("mkdir", "p/")])
    m.turn([])  # captures p/
    m.user_edit([("write", "p", "text-2")])  # the folder goes, a file stands there: not captured
    m.redo_to(2)  # the end of turn 1: no p/; publishes head 5
    m.turn([])
    m.redo_to(5)


def test_a_folder_of_files_a_redo_may_delete_may_go_with_them(machine):
    """Seed 7302 (owner; shrunk from 16 steps to 9 by removing steps): the user's chmod of `d/x.txt`
    may or may not be captured by the owner's watcher, so the model left the file open to a Redo
    to a head without it; yet it kept the folder `d/` above it firmly, and the Redo deleted both."""
    m = machine(WithOwner)
    m.turn([])
    m.turn([])
    m.rewind(n=7, after=False, mode="all", keep_edits=True)
    m.redo(pick=9)
    m.turn([("mkdir", "d/e/"), ("write", "d/x.txt", "binary"), ("rmtree", "n/"),
            ("delete", "d/e/y.txt")])
    m.rewind(n=6, after=False, mode="conversation", keep_edits=True)
    m.user_edit([("chmod", "d/x.txt", 0o755), ("mkdir", "d/"), ("mkdir", "n/")])
    m.rewind(n=4, after=False, mode="all", keep_edits=True)
    m.redo(pick=12)


def test_e_a_chmod_alone_through_a_live_owner(machine):
    m = machine(WithOwner)
    m.turn([])
    m.turn([("chmod", "a.txt", 0o755)])
    m.rewind(n=2, after=False, mode="all", keep_edits=False)


def test_f_a_conversation_only_rewind_keeps_a_chmod_in_the_history(machine):
    m = machine()
    m.turn([])
    m.turn([("chmod", "a.txt", 0o755), ("write", "b.bin", "binary")])
    m.rewind(n=2, after=False, mode="conversation", keep_edits=False)
    m.rewind(n=1, after=False, mode="all", keep_edits=False)


def test_an_uncaptured_delete_on_a_path_no_turn_touched(machine):
    m = machine()
    m.turn([])
    m.turn([])
    m.user_edit([("delete", "a.txt")])
    m.rewind(n=2, after=False, mode="all", keep_edits=False)


def test_a_folder_a_turn_replaced_with_a_file(machine):
    m = machine()
    m.user_edit([("write", "p/q.txt", "text")])
    m.turn([("write", "p", "text-2")])
    m.rewind(n=1, after=False, mode="all", keep_edits=False)
    m.redo_to(2)


def test_a_folder_the_user_made_again_in_a_conversation_only_plan(machine):
    """Seed 2000 of the long run: a plan flagged the user's folder `n/` as an edit and tried to
    merge it like a file ('n/' is not a normalised workspace path: the command failed)."""
    m = machine()
    m.turn([("mkdir", "n/")])
    m.user_edit([("rmtree", "d/")])
    m.rewind_killed(at=51, delay=28, n=1)
    m.gc_and_fsck()
    m.redo(pick=18)
    m.user_edit([("mkdir", "n/"), ("delete", "p")])
    m.user_edit([("rename", "sp ace.txt", "b.bin"), ("rmtree", "n/"), ("mkdir", "p/")])
    m.turn([("rmtree", "p/"), ("delete", "b.bin"), ("rmtree", "n/"), ("rename", "a.txt", "d/e/z sh")])
    m.turn([("chmod", "p", 0o644)])
    m.user_edit([("rename", "big.dat", "d/x.txt"), ("chmod", "sp ace.txt", 0o600), ("mkdir", "p/")])
    m.user_edit([("mkdir", "d/"), ("delete", "p/q.txt")])
    m.user_edit([("chmod", "b.bin", 0o644), ("rmtree", "d/e/"), ("chmod", "d/x.txt", 0o600)])
    m.user_edit([("mkdir", "n/"), ("chmod", "d/e/y.txt", 0o644), ("write", "sp ace.txt", "text-5")])
    m.rewind(n=8, after=False, mode="conversation", keep_edits=True)


def test_a_file_the_user_put_where_a_recorded_folder_was(machine):
    """Seed 1001 of the long run: the user's file stands where a recorded folder was; the plan
    lists the folder as a gap and leaves the file (it said nothing before)."""
    m = machine()
    m.turn([("mkdir", "p/")])
    m.turn([])
    m.user_edit([("write", "p", "binary")])
    m.rewind(n=2, after=False, mode="all", keep_edits=False)


def test_a_restore_is_not_the_users_edit_on_a_later_files_only_rewind(machine):
    """Seed 5001 of the long run (the model was wrong): a file turnback's restore put back last is
    undone unflagged by a later plan (docs/rewind.md, "Restore"); the model wanted it flagged."""
    m = machine()
    m.turn([("chmod", "a.txt", 0o600), ("write", "new\nline.txt", "text-5")])
    m.turn([])
    m.restore(k=1, at_end=False, pick=0)
    m.turn([("write", "d/x.txt", "empty")])
    m.rewind(n=2, after=False, mode="files", keep_edits=True)


def test_a_file_renamed_onto_its_own_folder(machine):
    """Seed 5001 with an owner: the machine's own rename of p/q.txt onto p removed its source."""
    m = machine()
    m.turn([("write", "p/q.txt", "text"), ("rename", "p/q.txt", "p")])
    m.rewind(n=1, after=False, mode="all", keep_edits=False)


def test_a_redo_keeps_what_the_current_state_knows(machine):
    """Seed 6029 of the long run (the model was wrong): a Redo to a head that never saw `p/` keeps
    every path the current state knows (here `p/`, known absent since a rewind removed it), so
    the folder the user made again since is an uncaptured change like any other, and a later
    rewind removes it (a conversation-only one lists it `kept`); the model forgot `p/` with the
    head's map and took the folder for one turnback never saw."""
    m = machine()
    m.turn([])
    m.turn([("write", "b.bin", "binary")])
    m.rewind(n=2, after=False, mode="all", keep_edits=False)  # head 4: two turns, no p/
    m.turn([("mkdir", "p/")])
    m.rewind(n=2, after=False, mode="all", keep_edits=False)  # p/ removed: known absent
    m.user_edit([("mkdir", "p/")])  # not captured
    m.redo_to(4)
    m.rewind(n=2, after=False, mode="conversation", keep_edits=False)


@pytest.mark.parametrize("mode", ["all", "files"])
@pytest.mark.parametrize("edit", [("chmod", "a.txt", 0o600), ("write", "a.txt", "text-5")])
def test_a_kept_uncaptured_edit_stays_uncaptured(machine, mode, edit):
    """Seed 5024 of the long run (the model was wrong): keep-my-edits leaves an edit turnback has
    not captured as it is and captures nothing (the look is read only), so the rewind's new state
    knows the file as it last captured it; a Redo to that state leaves the file as it is now, and
    the restore that overwrote the edit published the *before* head that brings it back. The
    model took the kept edit as captured and expected the Redo to write it back."""
    m = machine()
    m.turn([])
    m.turn([("write", "b.bin", "binary")])
    m.user_edit([edit])  # not captured
    m.rewind(n=2, after=False, mode=mode, keep_edits=True)
    kept = m.head_before()
    m.restore(k=1, at_end=True, pick=0)  # a.txt as turn 1 left it: over the user's edit
    before_restore = kept + 1  # the restore's *before* head, with the user's edit
    m.redo_to(kept)
    assert m.s.tree["a.txt"] == (("file", m.s.E[1]["a.txt"][1], 0o644))
    m.redo_to(before_restore)
    assert m.s.tree["a.txt"] != m.s.E[1]["a.txt"]  # the user's edit is back


def test_a_folder_the_user_made_where_a_redo_writes_a_file_stays(machine):
    """Seed 5018 of the long run (the model was wrong), and 5013's Redo with an owner: a folder the
    user made (not captured) where the head Redo brings back has a file stays, and the file is a
    gap `not-a-file` (docs/rewind.md, "Exact trees", as for a rewind and a restore); the model
    expected the folder gone and the file written."""
    m = machine()
    m.turn([("write", "p", "text"), ("chmod", "p", 0o755)])
    head = m.head_before()
    m.rewind(n=1, after=False, mode="all", keep_edits=False)  # p goes
    m.user_edit([("mkdir", "p/")])  # not captured
    m.redo_to(head)
    assert m.s.tree.get("p/") == "folder" and "p" not in m.s.tree
    m.turn([])  # p/ captured now: a Redo removes it and writes the file
    m.redo_to(head)


def test_a_conversation_only_rewind_knows_what_the_disk_already_holds(machine):
    """Seed 7125 of the long run (the model was wrong): a conversation-only rewind's new state knows
    the boundary's image of a path whose disk already holds it (here `d/e/y.txt`, which turn 1 made
    and the user removed, not captured), as a full rewind's does (seed 2014), so a Redo to the
    state before it writes the file back; the model kept the turn's capture and expected the Redo
    to leave the file absent."""
    m = machine()
    m.turn([("write", "d/e/y.txt", "text-5")])
    m.user_edit([("rmtree", "d/")])  # not captured
    m.rewind(n=1, after=False, mode="conversation", keep_edits=False)  # lists nothing kept
    m.redo_to(2)  # recreates d/, d/e/ and d/e/y.txt


def test_what_a_redo_may_or_may_not_clear_blocks_nothing_for_sure():
    """Seed 7124 of the long run (the model was wrong): a Redo to a head with `p/q.txt` over a disk
    where the user's file `p` stands, whose capture is open (a killed rewind, rolled back, may have
    captured it, or a live owner's watcher): the Redo may remove `p` (it knows it) and write
    `p/q.txt`, or leave `p` and list `p/q.txt` a gap. The code removed `p` and wrote `p/q.txt`; the
    model took `p` as staying, so `p/q.txt` as blocked, and expected it absent."""
    from reference import FOLDER, Session, redo_expectation

    text, mine = ("file", b"1\n2\n3\n4\n5\n", 0o644), ("file", b"1\n2\nthree\n4\n5\n", 0o644)
    now = Session(tree={"a.txt": text, "p": mine})
    now.captured = {"a.txt": frozenset([text]), "p": frozenset([None, mine]),
                    "p/": frozenset([None]), "p/q.txt": frozenset([None])}
    head = Session(tree={})
    head.captured = {"a.txt": frozenset([text]), "p": frozenset([None]),
                     "p/": frozenset([FOLDER]), "p/q.txt": frozenset([text])}
    expected = redo_expectation(now, head)
    assert not expected.differences({"a.txt": text, "p/": FOLDER, "p/q.txt": text})  # p redone
    assert not expected.differences({"a.txt": text, "p": mine})  # p stays: p/q.txt is a gap


def test_a_file_the_user_put_where_a_redo_makes_a_folder_stays(machine):
    """Seed 7124's deterministic half: a Redo to a head with `p/q.txt` over the user's file `p`
    (not captured) leaves `p`, and lists both `p/` (`not-a-folder`) and `p/q.txt`
    (`not-a-directory`) gaps; the model blocked `p/q.txt` but still expected the folder `p/`."""
    m = machine()
    m.turn([("write", "p/q.txt", "text")])
    m.rewind(n=1, after=False, mode="all", keep_edits=False)
    m.user_edit([("write", "p", "text-2")])  # not captured
    m.redo_to(2)


def test_a_merged_edit_of_a_files_only_rewind_stays_the_users(machine):
    """Seed 7102 of the long run (the code's, fixed in travel/user_edits.keep_in_rebuild): a
    files-only rewind with keep-my-edits merges the user's edit of `a.txt` (which a later turn deleted) back; the next
    files-only rewind to after that turn deletes it unflagged, where a full rewind's merge (and a
    file kept as it is) stays the user's edit, flagged."""
    m = machine()
    m.turn([])
    m.user_edit([("write", "a.txt", "text-5")])
    m.turn([("delete", "a.txt")])
    m.turn([])
    m.rewind(n=1, after=False, mode="files", keep_edits=True)  # a.txt merged back: the user's
    m.rewind(n=3, after=False, mode="files", keep_edits=False)  # must flag a.txt
