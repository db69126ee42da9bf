"""A live owner (the real server over stdio, and a workbench with a real inotify watcher): a file the
ignore rules hid, met by the `ignore-rules-changed` full sweep, is not created by that turn; a rewind
to before it keeps the file and names the gap (docs/capture.md, "Ignore rules that change")."""

from __future__ import annotations

import os

import pytest

from tests.lsp.test_session import turn

from .test_watcher import Live, live, root  # noqa: F401 - fixtures

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="Linux inotify")


def test_a_file_the_rules_hid_survives_a_rewind_of_the_turn_that_unignored_it(root, live):
    lv = live()
    lv.turn("learn")
    t = lv.turn("unignore", lambda: (root / ".gitignore").write_text("# nothing ignored\n"))
    assert t["settle"][0] == "full"  # the watcher fell back: the rules changed
    boundary = {"kind": "beforePrompt", "turn": 2}
    cand = lv.wb.rewind.prepare({"boundary": boundary})
    plan = {f["path"]: f["action"] for f in cand["files"]}
    assert plan["node_modules/dep/i.js"] == "unchanged" and plan[".gitignore"] == "restore"
    assert any(g["reason"] == "unknown-before-image" and g["uri"].endswith("/i.js")
               for g in cand["gaps"])
    assert lv.wb.rewind.commit({"boundary": boundary, "planHash": cand["planHash"]})["status"] == \
        "committed"
    assert (root / "node_modules" / "dep" / "i.js").read_text() == "//\n"


async def test_through_the_server(ws, servers):
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "keep.txt").write_text("the user's, from long ago\n")
    tb = await servers(ws, "emacs")
    await turn(tb, "edit a", {"a.txt": "two\n"})
    await turn(tb, "stop ignoring build/", {".gitignore": ""})
    log = await tb.req("turnback/session/log", {})
    entry = [f for f in log["turns"][1]["files"] if f["uri"] == tb.uri("build/keep.txt")]
    assert entry and entry[0]["before"] == "unknown", log["turns"][1]["files"]

    boundary = {"kind": "beforePrompt", "turn": 2}
    cand = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    actions = {f["uri"]: f["action"] for f in cand["files"]}
    assert actions[tb.uri("build/keep.txt")] == "unchanged"
    gap = [g for g in cand["gaps"] if g["uri"] == tb.uri("build/keep.txt")]
    assert gap and gap[0]["reason"] == "unknown-before-image" and "ignored" in gap[0]["detail"]
    result = await tb.req("turnback/rewind/commit", {"boundary": boundary,
                                                     "planHash": cand["planHash"]})
    assert result["status"] == "committed"
    await tb.until(lambda: tb.epochs, what="turnback/epoch")
    assert (ws / "build" / "keep.txt").read_text() == "the user's, from long ago\n"
    assert (ws / ".gitignore").read_text() == "build/\n"
