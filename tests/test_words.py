"""Words in one place (issue 44): the server says the buckets' and the gaps' sentences, and the
clients show them. Their own tables are a fallback for an older server; this ties the three
together, and checks that the server does send its words in a plan and with a gap."""

import json
import os
import re
import shutil
from pathlib import Path

from sessionkit import Agent
from travelkit import ok, turnback
from turnback.effects.partition import BUCKETS
from turnback.effects.words import BUCKET_WORDS
from turnback.model.gaps import GAP_REASONS, GAP_WORDS

ROOT = Path(__file__).resolve().parent.parent
VSCODE = ROOT / "editor-clients" / "vscode" / "src"
EMACS = ROOT / "editor-clients" / "emacs"


def test_the_clients_buckets_are_the_servers():
    ts = (VSCODE / "render.ts").read_text()
    body = ts[ts.index("export const EFFECT_LABELS"):]
    vscode = re.findall(r'\["(\w+)", "([^"]*)"\]', body[:body.index("];")])
    el = (EMACS / "turnback-render.el").read_text()
    body = el[el.index("(defconst turnback--effect-labels"):]
    emacs = re.findall(r'\(:(\w+) \. "([^"]*)"\)', body[:body.index('"The seven')])
    server = list(BUCKET_WORDS.items())
    assert [k for k, _ in server] == list(BUCKETS)
    assert vscode == server and emacs == server


def test_every_gap_reason_has_words_on_the_server_and_in_vs_code():
    ts = (VSCODE / "text.ts").read_text()
    body = ts[ts.index("const GAP_REASONS"):]
    keys = re.findall(r'^\s+"?([\w-]+)"?: "', body[:body.index("};")], re.M)
    assert tuple(GAP_WORDS) == GAP_REASONS and keys == list(GAP_REASONS)
    assert all(words.strip() for words in GAP_WORDS.values())


def test_the_server_says_its_words_in_the_plan_and_with_each_gap(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    secret = tmp_path / "outside.txt"
    secret.write_text("secret")
    a = Agent(root)
    try:
        a.begin("first")
        a.write("a.txt", "two\n")
        a.settle()
        a.begin("second")
        os.symlink(secret, root / "link.txt")
        out = a.wb.turns.capture({"uris": [a.uri("link.txt")]})
        assert [(g["reason"], g.get("words")) for g in out["gaps"]] == [
            ("symlink", GAP_WORDS["symlink"])]
        a.write("a.txt", "three\n")
        a.settle()
        plan = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 2}})
        assert plan["effectWords"] == BUCKET_WORDS
        assert plan["gaps"] and all(g["words"] == GAP_WORDS[g["reason"]] for g in plan["gaps"])
        status_gaps = a.wb.status()["gaps"]
        assert status_gaps and all(g["words"] == GAP_WORDS[g["reason"]] for g in status_gaps)
        committed = a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 2},
                                        "planHash": plan["planHash"]})
        assert committed["status"] == "committed"  # the words are outside the plan hash
    finally:
        a.wb.close()


def test_a_shape_in_the_way_says_what_happened_not_that_the_file_cannot_be_read(tmp_path):
    """A file the user put where a recorded folder was (`not-a-folder`, a rewind) and a folder of a
    restored file that is a file now (`not-a-directory`, a restore): each gap says what stands in
    the way, in words of its own, and carries no generic "cannot be read or written" detail
    (issue 43's long run; docs/rewind.md, "Exact trees" and "Restore")."""
    def gaps_of(*args):
        rc, out, err = turnback(tmp_path, "--json", *args)
        return [(g["reason"], g.get("words"), g.get("detail")) for g in json.loads(out)["candidate"]["gaps"]]

    (tmp_path / "a.txt").write_text("1\n")
    ok(tmp_path, "turn", "begin", "--prompt", "p1")
    (tmp_path / "p").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("f\n")
    ok(tmp_path, "turn", "settle")
    ok(tmp_path, "turn", "begin", "--prompt", "p2")
    ok(tmp_path, "turn", "settle")
    (tmp_path / "p").rmdir()
    (tmp_path / "p").write_text("mine\n")
    assert gaps_of("rewind", "--before-prompt", "2") == [
        ("not-a-folder", GAP_WORDS["not-a-folder"], None)]
    assert "file" in GAP_WORDS["not-a-folder"] and "stays" in GAP_WORDS["not-a-folder"]
    shutil.rmtree(tmp_path / "d")
    (tmp_path / "d").write_text("mine\n")
    assert ("not-a-directory", GAP_WORDS["not-a-directory"], None) in gaps_of(
        "restore", str(tmp_path / "d"), "--turn", "1")
    out = ok(tmp_path, "restore", str(tmp_path / "d"), "--turn", "1", "--yes")
    assert GAP_WORDS["not-a-directory"] in out and "cannot be read" not in out, out
    assert (tmp_path / "d").read_text() == "mine\n"


def test_a_folders_unknown_before_image_says_folder():
    """A folder key (`d/`) turnback never saw is named a folder in the words every client shows."""
    from turnback.model.gaps import Gap

    to_uri = lambda rel: "file:///w/" + rel  # noqa: E731
    assert "this folder" in Gap("d/", "unknown-before-image").to_wire(to_uri)["words"]
    assert "this file" in Gap("d/f.txt", "unknown-before-image").to_wire(to_uri)["words"]
