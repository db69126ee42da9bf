"""A file that becomes visible only because the ignore rules changed was not created by that turn.

turnback never saw it while it was ignored, so it has no before-image of it: a rewind leaves it alone
and lists it as an `unknown-before-image` gap (docs/capture.md, "Ignore rules that change"). It must
never plan its deletion. And the reverse: a captured file that becomes ignored is not deleted by the
turn."""

from __future__ import annotations

from turnback.model.images import ABSENT, UNKNOWN


def rewind(a, boundary):
    c = a.wb.rewind.prepare({"boundary": boundary})
    out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
    assert out["status"] == "committed", out
    return c


def plan(candidate, rel):
    found = [f for f in candidate["files"] if f["path"] == rel]
    return found[0] if found else None


def gap_reasons(candidate, name):
    return {g["reason"] for g in candidate["gaps"] if (g.get("uri") or "").endswith("/" + name)}


def entry(a, turn, rel):
    files = [f for f in a.log()["turns"][turn - 1]["files"] if f["path"] == rel]
    return files[0] if files else None


def user_files_then_a_turn(a, ignore: str, files: dict[str, str]):
    """The user's ignored files exist long before turnback's first turn, which leaves them alone."""
    (a.root / ".gitignore").write_text(ignore)
    for rel, text in files.items():
        (a.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (a.root / rel).write_text(text)
    (a.root / "src.txt").write_text("s0")
    a.turn("one", {"src.txt": "s1"})


def test_unignored_folder_survives_a_rewind_to_before_the_turn_that_unignored_it(agent):
    a = agent()
    user_files_then_a_turn(a, "build/\n", {"build/keep.txt": "mine, from last year"})
    a.begin("stop ignoring build/")
    a.write(".gitignore", "")
    a.settle()  # the settle sweep sees build/keep.txt for the first time
    assert entry(a, 2, "build/keep.txt")["before"] == UNKNOWN  # not "created in turn 2"

    c = rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert plan(c, "build/keep.txt")["action"] == "unchanged"
    assert gap_reasons(c, "keep.txt") == {"unknown-before-image"}
    assert (a.root / "build/keep.txt").read_text() == "mine, from last year"
    assert (a.root / ".gitignore").read_text() == "build/\n"  # what the turn did is undone

    # Once it was seen, a later turn's change of it is an ordinary, restorable change.
    a.turn("three", {".gitignore": "", "build/keep.txt": "agent's"})
    c = rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert (a.root / "build/keep.txt").read_text() == "mine, from last year"


def test_a_negation_that_reincludes_one_file(agent):
    a = agent()
    user_files_then_a_turn(a, "*.log\n", {"logs/keep.log": "keep me", "logs/other.log": "x"})
    a.turn("keep one log", {".gitignore": "*.log\n!keep.log\n"})
    assert entry(a, 2, "logs/keep.log")["before"] == UNKNOWN
    assert entry(a, 2, "logs/other.log") is None
    rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert a.files()["logs/keep.log"] == b"keep me"


def test_a_default_ignore_entry_overridden_in_a_turn(agent):
    a = agent()
    user_files_then_a_turn(a, "", {"notes.txt~": "my backup"})
    a.turn("capture backups", {".gitignore": "!*~\n"})
    c = rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert plan(c, "notes.txt~")["action"] == "unchanged"
    assert a.files()["notes.txt~"] == b"my backup"


def test_a_file_really_created_in_that_turn_is_still_deleted(agent):
    """Only paths the old rules hid lose their `absent` before-image: a new file the old rules would
    have seen did not exist at the pre-turn sweep, and the rewind deletes it as before."""
    a = agent()
    user_files_then_a_turn(a, "build/\n", {"build/keep.txt": "mine"})
    a.begin("unignore and add")
    a.write(".gitignore", "")
    (a.root / "src").mkdir()
    (a.root / "src/new.py").write_text("print(1)")  # a shell command: only the settle sweep sees it
    a.settle()
    assert entry(a, 2, "src/new.py")["before"] == ABSENT
    c = rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert plan(c, "src/new.py")["action"] == "delete"
    assert a.files() == {".gitignore": b"build/\n", "src.txt": b"s1", "build/keep.txt": b"mine"}


def test_a_hook_capture_of_an_unignored_file_has_an_unknown_before_image(agent):
    a = agent()
    user_files_then_a_turn(a, "build/\n", {"build/keep.txt": "mine"})
    a.begin()
    a.write(".gitignore", "")
    (a.root / "build/keep.txt").write_text("agent's")  # no `before` capture: the hook missed it
    out = a.wb.turns.capture({"uris": [a.uri("build/keep.txt")]})
    assert [g["reason"] for g in out["gaps"]] == ["unknown-before-image"]
    a.settle()
    c = rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert plan(c, "build/keep.txt")["action"] == "unchanged"
    assert a.files()["build/keep.txt"] == b"agent's"


def test_the_rules_of_the_last_sweep_outlive_the_process(agent):
    """Each command-line command is its own process: the rules the last sweep used are kept in the
    store's cache, so a reopened workbench still knows the file was hidden."""
    a = agent()
    user_files_then_a_turn(a, "build/\n", {"build/keep.txt": "mine"})
    a.reopen()
    a.begin()
    a.write(".gitignore", "")
    a.reopen()
    a.settle()
    assert entry(a, 2, "build/keep.txt")["before"] == UNKNOWN


def test_without_the_cached_rules_a_first_seen_file_is_unknown_not_absent(agent):
    """The cache is rebuildable; losing it must not turn an unseen file into a created one."""
    import shutil

    a = agent()
    user_files_then_a_turn(a, "build/\n", {"build/keep.txt": "mine"})
    a.begin()
    a.write(".gitignore", "")
    a.close()
    shutil.rmtree(a.root / ".turnback" / "cache")
    a.wb = type(a.wb).open(a.root, a.options)
    a.settle()
    assert entry(a, 2, "build/keep.txt")["before"] == UNKNOWN


def test_a_captured_file_that_becomes_ignored_is_not_deleted_by_the_turn(agent):
    a = agent()
    user_files_then_a_turn(a, "", {"debug.log": "tracked"})
    a.turn("ignore logs", {".gitignore": "*.log\n"})
    assert entry(a, 2, "debug.log") is None  # neither deleted nor changed
    c = rewind(a, {"kind": "beforePrompt", "turn": 2})
    assert plan(c, "debug.log") is None
    assert a.files()["debug.log"] == b"tracked"


def test_between_turns_an_unignored_file_is_learnt_not_a_change(agent):
    """Between turns no turn made it: neither a sweep nor an editor save records a change or a gap,
    and a rewind to any boundary leaves the file alone."""
    a = agent()
    user_files_then_a_turn(a, "build/\n", {"build/keep.txt": "mine", "build/saved.txt": "mine too"})
    (a.root / ".gitignore").write_text("")  # the user, between turns
    a.wb.turns.capture_rels(["build/saved.txt"])  # an editor save of a formerly ignored file
    a.turn("two", {"src.txt": "s2"})  # its pre-turn sweep meets build/keep.txt
    assert entry(a, 2, "build/keep.txt") is None and entry(a, 2, "build/saved.txt") is None
    assert not [g for g in a.wb.state.live_gaps.values() if g.rel.startswith("build/")]
    c = rewind(a, {"kind": "beforePrompt", "turn": 1})
    assert plan(c, "build/keep.txt") is None and plan(c, "build/saved.txt") is None
    assert a.files()["build/keep.txt"] == b"mine" and a.files()["build/saved.txt"] == b"mine too"
