"""Capture: every source, stable checkpoint names, shared images, and the gaps of the contract."""

from __future__ import annotations

import os

import pytest

from turnback.model.images import ABSENT, UNKNOWN


def entry(log, turn, rel):
    files = log["turns"][turn - 1]["files"]
    found = [f for f in files if f["path"] == rel]
    assert len(found) == 1, files
    return found[0]


def test_explicit_before_and_after_capture_mint_one_checkpoint(agent):
    a = agent()
    (a.root / "a.txt").write_text("v0")
    a.begin("edit a")
    a.write("a.txt", "v1")
    a.settle()
    e = entry(a.log(), 1, "a.txt")
    hasher = a.wb.store.objects.hasher
    assert e["before"] == hasher.digest(b"v0")
    assert e["after"] == hasher.digest(b"v1")
    assert e["checkpoint"] == "1:a.txt@v1"


def test_repeated_saves_in_one_turn_keep_one_checkpoint_name_and_timestamp(agent):
    a = agent()
    (a.root / "a.txt").write_text("v0")
    a.begin()
    a.write("a.txt", "v1")
    first = entry(a.log(), 1, "a.txt")
    for i in range(2, 6):
        (a.root / "a.txt").write_text(f"v{i}")
        a.wb.turns.capture_rels(["a.txt"])  # an editor save
    last = entry(a.log(), 1, "a.txt")
    assert (last["checkpoint"], last["created"]) == (first["checkpoint"], first["created"])
    assert last["before"] == first["before"]
    assert last["after"] == a.wb.store.objects.hasher.digest(b"v5")
    assert last["captures"] == 5


def test_editor_save_of_a_new_file_in_a_turn_has_an_absent_before_image(agent):
    a = agent()
    a.begin()
    (a.root / "new.txt").write_text("hello")
    a.wb.turns.capture_rels(["new.txt"])  # didSave or a watched create
    e = entry(a.log(), 1, "new.txt")
    assert e["before"] == ABSENT


def test_a_save_between_turns_belongs_to_no_turn_but_to_the_next_checkpoint(agent):
    a = agent()
    (a.root / "a.txt").write_text("v0")
    a.turn("one", {"a.txt": "v1"})
    (a.root / "a.txt").write_text("user edit")
    a.wb.turns.capture_rels(["a.txt"])
    log = a.log()
    assert [f["path"] for f in log["turns"][0]["files"]] == ["a.txt"]
    a.turn("two", {"a.txt": "v2"})
    e = entry(a.log(), 2, "a.txt")
    assert e["before"] == a.wb.store.objects.hasher.digest(b"user edit")


def test_alternating_two_contents_over_twelve_turns_store_exactly_two_images(agent):
    a = agent()
    one, two = os.urandom(128 * 1024), os.urandom(128 * 1024)
    (a.root / "big.bin").write_bytes(one)
    for i in range(12):
        a.turn(f"turn {i + 1}", {"big.bin": two if i % 2 == 0 else one})
    images = {e[k] for t in a.log()["turns"] for e in t["files"] for k in ("before", "after")}
    assert len(images) == 2
    objects = a.wb.store.objects
    sized = [d for d in objects.list() if objects.stat(d) == 128 * 1024]
    assert sorted(sized) == sorted(images)


def test_the_sweep_catches_a_write_made_behind_turnbacks_back(agent):
    a = agent()
    (a.root / "a.txt").write_text("before")
    a.begin("run a shell command")
    (a.root / "a.txt").write_text("after, written by a shell")  # no capture at all
    a.settle()
    t = a.log()["turns"][0]
    e = entry(a.log(), 1, "a.txt")
    h = a.wb.store.objects.hasher
    assert (e["before"], e["after"]) == (h.digest(b"before"), h.digest(b"after, written by a shell"))
    assert t["gaps"] == []


def test_a_change_made_between_turns_is_caught_by_the_next_pre_turn_sweep(agent):
    a = agent()
    (a.root / "a.txt").write_text("v0")
    a.turn("one", {"a.txt": "v1"})
    (a.root / "a.txt").write_text("changed by another program")
    a.begin("two")
    assert a.wb.state.known["a.txt"] == a.wb.store.objects.hasher.digest(b"changed by another program")


def test_symlink_gap_and_the_target_is_never_read(agent, tmp_path):
    a = agent()
    secret = tmp_path / "outside.txt"
    secret.write_text("secret")
    os.symlink(secret, a.root / "link.txt")
    a.begin()
    out = a.wb.turns.capture({"uris": [a.uri("link.txt")]})
    assert [g["reason"] for g in out["gaps"]] == ["symlink"]
    assert a.wb.store.objects.hasher.digest(b"secret") not in set(a.wb.store.objects.list())
    assert ("link.txt", "symlink") in a.wb.state.live_gaps


def test_oversized_file_is_a_too_large_gap(agent):
    a = agent(max_file_bytes=1000)
    a.begin()
    (a.root / "big.bin").write_bytes(b"x" * 2000)
    out = a.wb.turns.capture({"uris": [a.uri("big.bin")]})
    assert [g["reason"] for g in out["gaps"]] == ["too-large"]
    assert any(g["reason"] == "too-large" for g in a.log()["turns"][0]["gaps"])


def test_unreadable_file_is_an_unreadable_gap(agent, monkeypatch):
    a = agent()
    (a.root / "locked.txt").write_text("x")
    a.begin()
    real_open = os.open

    def refuse(path, flags, *args, **kw):
        if str(path).endswith("locked.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", refuse)
    out = a.wb.turns.capture({"uris": [a.uri("locked.txt")]})
    monkeypatch.undo()
    assert [g["reason"] for g in out["gaps"]] == ["unreadable"]


def test_a_gap_clears_when_the_path_reads_again(agent):
    a = agent(max_file_bytes=1000)
    a.begin()
    (a.root / "f.bin").write_bytes(b"x" * 2000)
    a.wb.turns.capture({"uris": [a.uri("f.bin")]})
    assert ("f.bin", "too-large") in a.wb.state.live_gaps
    (a.root / "f.bin").write_bytes(b"x" * 10)
    a.wb.turns.capture({"uris": [a.uri("f.bin")]})
    assert ("f.bin", "too-large") not in a.wb.state.live_gaps


def test_ignored_file_first_seen_after_a_change_has_an_unknown_before_image(agent):
    a = agent()
    (a.root / ".gitignore").write_text("build/\n")
    (a.root / "build").mkdir()
    (a.root / "build" / "out.txt").write_text("old")
    a.begin()
    (a.root / "build" / "out.txt").write_text("new")
    out = a.wb.turns.capture({"uris": [a.uri("build/out.txt")]})
    assert [g["reason"] for g in out["gaps"]] == ["unknown-before-image"]
    assert entry(a.log(), 1, "build/out.txt")["before"] == UNKNOWN


def test_outside_workspace_capture_is_a_gap_not_a_crash(agent, tmp_path):
    a = agent()
    a.begin()
    out = a.wb.turns.capture({"uris": [(tmp_path / "elsewhere.txt").as_uri(), "file:///etc/passwd"]})
    assert [g["reason"] for g in out["gaps"]] == ["outside-workspace"] * 2


def test_absent_step_scope_is_stored_unknown_with_a_gap(agent):
    a = agent()
    a.begin()
    sid = a.step(kind="shell", summary="make")
    step = a.wb.state.running.steps[-1]
    assert (step.id, step.scope) == (sid, "unknown")
    assert any(g.reason == "step-scope-unknown" for g in a.wb.state.running.gaps)


def test_step_fields_are_kept(agent):
    a = agent()
    a.begin()
    first = a.step(kind="network-send", scope="crossing", summary="email", held=True,
                   inverse={"kind": "network-send"})
    a.step(kind="network-send", scope="crossing", compensates=first, result="sent a correction")
    s1, s2 = a.wb.state.running.steps
    assert (s1.held, s1.inverse.kind, s1.inverse.scope) == (True, "network-send", "unknown")
    assert s2.compensates == first
    assert a.wb.store.objects.get(s2.result) == b"sent a correction"


@pytest.mark.parametrize("kind", ["heads", "pid"])
def test_reopen_after_a_clean_close_gives_back_every_turn(agent, kind):
    from sessionkit import normalised_log  # noqa: E402 - the shared test support module

    a = agent(store_kind=kind)
    (a.root / "a.txt").write_text("v0")
    a.turn("one", {"a.txt": "v1", "b.txt": "new"})
    a.begin("two, still running")
    a.write("a.txt", "v2")
    before = normalised_log(a.log())
    a.reopen()
    assert normalised_log(a.log()) == before


def test_a_late_open_event_never_becomes_the_before_image(agent):
    """An editor's didOpen may be handled after the agent already wrote the file: the disk image is
    then not the before-image, and taking it would hide the change from the turn."""
    a = agent()
    a.begin()
    (a.root / "b.txt").write_text("written by the agent")
    a.wb.turns.opened("b.txt", "")  # opened while it did not exist yet
    a.wb.turns.capture_rels(["b.txt"])  # the save
    e = entry(a.log(), 1, "b.txt")
    assert e["before"] == ABSENT


def test_an_open_event_teaches_the_image_when_it_matches_the_editor_text(agent):
    a = agent(sweep=False)
    (a.root / "c.txt").write_text("as opened")
    a.begin()
    a.wb.turns.opened("c.txt", "as opened")
    (a.root / "c.txt").write_text("changed")
    a.wb.turns.capture_rels(["c.txt"])
    assert entry(a.log(), 1, "c.txt")["before"] == a.wb.store.objects.hasher.digest(b"as opened")


def test_an_observer_follows_the_owners_publications_and_journal(agent):
    from turnback.workbench import Workbench

    a = agent()
    a.turn("one", {"a.txt": "1"})
    observer = Workbench.open(a.root, a.options)
    try:
        assert not observer.is_owner and observer.state.turn_count == 1
        a.turn("two", {"a.txt": "2"})
        a.begin("three")  # in the journal only
        observer.follow()
        assert [t["prompt"] for t in observer.turns.log()["turns"]] == ["one", "two", "three"]
    finally:
        observer.close()
