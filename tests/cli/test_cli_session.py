"""The command line drives a session the way scripts and agent hooks do, and reports it exactly."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from turnback.store.layout import Store

from cli_helpers import cli, ws  # noqa: F401  (fixtures)


def scripted_session(cli, ws: Path) -> dict:
    """Two turns through `turnback turn …`; returns what the commands reported along the way."""
    (ws / "a.txt").write_text("one\n")
    (ws / "keep.txt").write_text("untouched\n")
    seen = {}
    assert cli.ok("turn", "begin", "--prompt", "edit a").strip() == "1"
    seen["before"] = cli.json("turn", "capture", "--phase", "before", "a.txt")
    (ws / "a.txt").write_text("two\n")
    seen["after"] = cli.json("turn", "capture", "a.txt")
    assert cli.ok("turn", "step", "--kind", "file-write", "--scope", "host", "--path", "a.txt",
                  "--summary", "edit a").strip() == "s1.1"
    cli.ok("turn", "respond", "done with a")
    cli.ok("turn", "settle")
    begun = cli.json("turn", "begin", "--prompt", "run a script")
    assert begun == {"turn": 2, "started": begun["started"]} and isinstance(begun["started"], float)
    (ws / "b.txt").write_text("made behind turnback's back\n")  # no capture: the settle sweep sees it
    os.symlink("a.txt", ws / "link")
    assert cli.ok("turn", "step", "--turn", "2", "--kind", "shell").strip() == "s2.1"  # no scope
    cli.ok("turn", "settle", "--turn", "2")
    return seen


def test_log_json_shows_turns_checkpoints_digests_and_gaps(cli, ws):
    seen = scripted_session(cli, ws)
    log = cli.json("log")
    objects = Store.open(ws / ".turnback", kind=None, create=False).objects
    t1, t2 = log["turns"]
    assert (t1["turn"], t1["kind"], t1["prompt"], t1["response"], t1["state"], t1["steps"]) == \
        (1, "chat", "edit a", "done with a", "settled", 1)
    [a] = t1["files"]
    assert a["path"] == "a.txt" and a["uri"] == (ws / "a.txt").resolve().as_uri()
    assert a["checkpoint"] == "1:a.txt@v1"
    assert a["before"] == seen["before"]["captured"][0]["digest"]
    assert a["after"] == seen["after"]["captured"][0]["digest"]
    assert seen["after"]["captured"][0]["checkpoint"] == "1:a.txt@v1"
    assert objects.get(a["before"]) == b"one\n" and objects.get(a["after"]) == b"two\n"
    assert t1["gaps"] == []

    assert (t2["turn"], t2["prompt"], t2["state"], t2["steps"]) == (2, "run a script", "settled", 1)
    files = {f["path"]: f for f in t2["files"]}
    assert set(files) == {"b.txt"}  # keep.txt never changed; the link is a gap, not a file
    assert files["b.txt"]["before"] == "absent"
    assert objects.get(files["b.txt"]["after"]) == b"made behind turnback's back\n"
    assert files["b.txt"]["checkpoint"] == "2:b.txt@v1"
    reasons = {(g["reason"], (g.get("uri") or "").rsplit("/", 1)[-1]) for g in t2["gaps"]}
    assert ("step-scope-unknown", "") in reasons
    assert ("symlink", "link") in reasons

    # The text form says the same in words.
    text = cli.ok("log")
    assert "1:a.txt@v1" in text and "step-scope-unknown" in text and "(absent)" in text


def test_rewind_without_yes_changes_nothing_and_with_yes_restores(cli, ws):
    scripted_session(cli, ws)
    files, log = cli.files(), cli.json("log")
    rc, out, err = cli("rewind", "--before-prompt", "2")
    assert rc == 0, err
    assert "Nothing changed" in out and "b.txt" in out and "step-scope-unknown" in out
    assert cli.files() == files and cli.json("log") == log

    doc = cli.json("rewind", "--before-prompt", "2")  # --json without --yes: the candidate only
    assert doc["commit"] is None and doc["candidate"]["discard"]["turnCount"] == 1
    assert cli.files() == files

    out = cli.ok("rewind", "--before-prompt", "2", "--yes")
    assert "committed" in out
    assert cli.files() == {"a.txt": b"two\n", "keep.txt": b"untouched\n"}
    assert [t["turn"] for t in cli.json("log")["turns"]] == [1]

    cli.ok("rewind", "--before-prompt", "1", "--yes")
    assert cli.files() == {"a.txt": b"one\n", "keep.txt": b"untouched\n"}
    assert cli.json("log")["turns"] == []


def test_redo_lists_prepares_and_commits(cli, ws):
    scripted_session(cli, ws)
    before = cli.files()
    head = cli.json("info")["headSeq"]
    cli.ok("rewind", "--before-prompt", "2", "--yes")
    listing = cli.json("redo")
    assert listing["available"] and head in [g["headSeq"] for g in listing["groups"]]
    rc, out, _ = cli("redo", "--head", str(head))
    assert rc == 0 and "Nothing changed" in out and "b.txt" in out
    assert "b.txt" not in cli.files()
    doc = cli.json("redo", "--head", str(head), "--yes")
    assert doc["commit"]["status"] == "committed"
    assert cli.files() == before
    assert len(cli.json("log")["turns"]) == 2


def test_before_directive_picks_the_latest_attempt(cli, ws):
    from turnback.workbench import Workbench

    (ws / "a.txt").write_text("x = 1\n")
    wb = Workbench.open(ws)
    try:
        did = wb.directives.upsert({"uri": (ws / "a.txt").as_uri(), "anchor": {"line": 0},
                                    "request": "make it 2"})["id"]
    finally:
        wb.close()
    for text in ("x = 2\n", "x = 3\n"):
        cli.ok("turn", "begin", "--prompt", "try", "--directive", did)
        (ws / "a.txt").write_text(text)
        cli.ok("turn", "settle")
    doc = cli.json("rewind", "--before-directive", did)
    assert doc["candidate"]["boundary"] == {"kind": "beforeDirectiveAttempt", "directiveId": did, "turn": 2}
    cli.ok("rewind", "--before-directive", did, "--turn", "1", "--yes")
    assert (ws / "a.txt").read_text() == "x = 1\n"
    rc, _, err = cli("rewind", "--before-directive", "nope")
    assert rc == 1 and "error [not-found]" in err


def test_fsck_sound_then_names_a_flipped_object(cli, ws):
    scripted_session(cli, ws)
    rc, out, _ = cli("fsck")
    assert rc == 0 and "sound" in out
    # a non-empty object (an empty file's image is stored as zero bytes: no bit to flip)
    objects = sorted(p for p in (ws / ".turnback" / "objects").rglob("*")
                     if p.is_file() and p.stat().st_size > 0)
    victim = objects[len(objects) // 2]
    mode = victim.stat().st_mode
    victim.chmod(mode | stat.S_IWUSR)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    victim.chmod(mode)
    rc, out, _ = cli("fsck")
    assert rc == 1 and str(victim) in out and "damaged" in out
    doc = json.loads(cli("--json", "fsck")[1])
    assert doc["ok"] is False and any(p["path"] == str(victim) for p in doc["problems"])


def test_fsck_names_a_head_whose_image_is_missing(cli, ws):
    scripted_session(cli, ws)
    head = max((ws / ".turnback" / "heads").iterdir())
    from turnback.store.layout import Store
    from turnback.timeline.codec import StateCodec

    store = Store.open(ws / ".turnback", create=False, kind=None)
    state = StateCodec(store.objects).read(store.heads.read(int(head.stem)).body)
    image = next(e.after for t in state.turns for e in t.files.values() if len(e.after) == 32)
    store.objects.path(image).unlink()
    rc, out, _ = cli("fsck")
    assert rc == 1 and image in out and "missing" in out


def test_fsck_writes_nothing_and_takes_no_ownership(cli, ws):
    scripted_session(cli, ws)
    store = ws / ".turnback"

    def tree():
        return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in store.rglob("*")}

    before = tree()
    assert cli("fsck")[0] == 0
    assert tree() == before


def test_bad_input_gives_clear_errors(cli, ws, tmp_path):
    (ws / "a.txt").write_text("a\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("no\n")
    rc, out, err = cli("log")
    assert rc == 1 and "error [not-found]" in err and "no turnback store" in err
    cli.ok("turn", "begin", "--prompt", "p")
    rc, out, err = cli("turn", "capture", str(outside))
    assert rc == 1 and err.startswith("error [outside-workspace]: ") and "elsewhere.txt" in err
    assert "outside the workspace" in err
    rc, _, err = cli("turn", "capture", "../elsewhere.txt")
    assert rc == 1 and "outside-workspace" in err
    rc, _, err = cli("turn", "begin", "--prompt", "again")
    assert rc == 1 and "error [turn-running]" in err
    rc, _, err = cli("turn", "step", "--turn", "7", "--kind", "shell")
    assert rc == 1 and "error [unknown-turn]" in err
    cli.ok("turn", "settle")
    rc, _, err = cli("turn", "settle")
    assert rc == 1 and "error [no-turn-running]" in err
    rc, _, err = cli("rewind", "--before-prompt", "9")
    assert rc == 1 and err.startswith("error [")
    rc, _, err = cli("rewind")  # a boundary is required: usage error
    assert rc == 2
    rc, _, err = cli("recovery", "--dismiss")
    assert rc == 1 and "invalid-params" in err
    rc, _, err = cli("--workspace", str(tmp_path / "missing"), "info")
    assert rc == 1 and "not a folder" in err


def test_relative_paths_are_taken_from_the_current_directory(cli, ws):
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("1\n")
    cli.ok("turn", "begin", "--prompt", "p")
    (ws / "sub" / "f.txt").write_text("2\n")
    doc = cli.json("turn", "capture", "f.txt", cwd=ws / "sub")
    assert doc["captured"][0]["uri"].endswith("/sub/f.txt") and doc["captured"][0]["checkpoint"]


def test_pid_store_has_no_redo(cli, ws):
    (ws / "a.txt").write_text("a\n")
    cli.ok("--store-kind", "pid", "turn", "begin", "--prompt", "p")
    cli.ok("turn", "settle")  # the kind is read from the store from now on
    assert cli.json("info")["storeKind"] == "pid"
    rc, out, _ = cli("redo")
    assert rc == 1 and "PID lock" in out
    rc, _, err = cli("redo", "--head", "1", "--yes")
    assert rc == 1 and "no-heads" in err


def test_info_and_recovery(cli, ws):
    (ws / "a.txt").write_text("a\n")
    cli.ok("turn", "begin", "--prompt", "p")
    cli.ok("turn", "settle")
    info = cli.json("info")
    assert info["turnCount"] == 1 and info["storeKind"] == "heads"
    assert cli.json("recovery") == {"recovery": []}
    assert "no recovery records" in cli.ok("recovery")


def test_store_outside_the_workspace(cli, ws, tmp_path):
    (ws / "a.txt").write_text("a\n")
    store = tmp_path / "elsewhere-store"
    cli.ok("--store", str(store), "turn", "begin", "--prompt", "p")
    cli.ok("--store", str(store), "turn", "settle")
    assert (store / "FORMAT").exists() and not (ws / ".turnback").exists()
    assert cli("--store", str(store), "fsck")[0] == 0


def test_gc_runs_one_collection(cli, ws):
    """`turnback gc` deletes exactly the unreferenced objects (one a crash left behind, written
    but never named by a head) and keeps every head whole; its counts are what it did."""
    import turnback.collect  # noqa: F401  (fsck's deep checks)
    from turnback.store.fsck import fsck
    from turnback.timeline.codec import StateCodec

    scripted_session(cli, ws)
    store = Store.open(ws / ".turnback", kind=None, create=False)
    orphan = store.objects.put(b"written by a process that died before it published\n")
    old = os.path.getmtime(store.path) - 3600  # the collector keeps objects newer than its scan
    for fan in store.objects.root.iterdir():
        for f in fan.iterdir() if fan.is_dir() else ():
            os.utime(f, (old, old), follow_symlinks=False)
    before, heads = set(store.objects.list()), store.heads.list_seqs()
    assert orphan in before
    doc = cli.json("gc")
    deleted = before - set(store.objects.list())
    assert deleted == {orphan} and doc["objectsDeleted"] == 1
    assert doc["headsRetired"] == len(set(heads) - set(store.heads.list_seqs()))
    codec = StateCodec(store.objects)
    for seq in store.heads.list_seqs():  # every kept head reads back whole
        codec.read(store.heads.read(seq).body)
    assert [t["prompt"] for t in cli.json("log")["turns"]] == ["edit a", "run a script"]
    assert fsck(store.path).ok and cli("fsck")[0] == 0
