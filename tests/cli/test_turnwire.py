"""The lean `turn begin` / `turn capture` (cli/turnwire.py): one request, nothing heavy imported, and
exactly what the general path prints, errors included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from clikit import json_values, tb

from turnback.cli.minijson import decode
from turnback.cli.turnwire import encode


values = json_values()


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_small_json_writer_and_reader_agree_with_json(value):
    assert json.loads(encode(value)) == value
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False),
                 json.dumps(value, indent=2)):
        assert decode(text) == value


@pytest.mark.parametrize("bad", ["", "{", "[1,", '{"a" 1}', '"open', "tru", "[1] 2", "{'a': 1}"])
def test_the_small_reader_refuses_what_is_not_json(bad):
    with pytest.raises((ValueError, KeyError, IndexError)):
        decode(bad)


@pytest.fixture
def owner(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "sub dir").mkdir()
    (root / "sub dir" / "é.txt").write_text("accent\n")
    tb(root, "--json", "serve", "--background", "--idle-exit", "120")
    yield root
    tb(root, "daemon", "stop", check=False)


def _imports(root: Path, *args) -> tuple[set[str], subprocess.CompletedProcess]:
    code = ("import sys; sys.argv = ['turnback', *%r]; from turnback.cli.fast import main; "
            "code = main(); print('MODULES', ' '.join(sorted(sys.modules))); sys.exit(code)"
            % (["--workspace", str(root), *args],))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                          timeout=120)
    line = [x for x in proc.stdout.splitlines() if x.startswith("MODULES ")]
    return set(line[0].split()[1:]) if line else set(), proc


def test_begin_and_capture_take_one_request_and_import_nothing_heavy(owner):
    for args in (["turn", "begin", "--prompt", 'say "hi"\n\tthen é'],
                 ["turn", "capture", "a.txt", str(owner / "sub dir" / "é.txt")]):
        modules, proc = _imports(owner, *args)
        assert proc.returncode == 0, proc.stderr
        heavy = {"json", "re", "enum", "socket", "argparse", "pathlib", "turnback.cli.remote",
                 "turnback.remote.client", "turnback.errors", "turnback.store"} & modules
        assert not heavy, heavy
    log = json.loads(tb(owner, "--json", "log").stdout)
    assert log["turns"][-1]["prompt"] == 'say "hi"\n\tthen é'


def test_the_lean_path_prints_what_the_general_path_prints(owner):
    """`--store` sends a command down the general path (it needs the owner's info): the same words."""
    store = ["--store", str(owner / ".turnback")]
    lean = tb(owner, "turn", "begin", "--prompt", "one")
    assert lean.stdout == "1\n"
    (owner / "a.txt").write_text("two\n")
    paths = ["a.txt", str(owner / "sub dir" / "é.txt"), "missing.txt"]
    lean = tb(owner, "turn", "capture", *paths)
    general = tb(owner, *store, "turn", "capture", *paths)
    assert lean.stdout == general.stdout and "checkpoint 1:a.txt@v1" in lean.stdout
    assert "sub dir/é.txt" in lean.stdout and "missing.txt  (absent)" in lean.stdout
    # An error reply: the same words, the same status.
    lean_err = tb(owner, "turn", "begin", "--prompt", "two", check=False)
    general_err = tb(owner, *store, "turn", "begin", "--prompt", "two", check=False)
    assert (lean_err.returncode, lean_err.stderr) == (general_err.returncode, general_err.stderr)
    assert lean_err.returncode == 1 and "turn-running" in lean_err.stderr
    # A path outside the workspace is refused by the general path, before anything is sent.
    outside = tb(owner, "turn", "capture", "/etc/hostname", check=False)
    assert outside.returncode == 1 and "outside-workspace" in outside.stderr


def test_settle_takes_the_lean_path_and_prints_what_the_general_path_prints(owner):
    """A command-line turn is a begin and a settle: the settle went down the general path (json,
    re, argparse's neighbours, the renderer), half of a command-line turn through an owner."""
    store = ["--store", str(owner / ".turnback")]
    for cancelled in ([], ["--cancelled"]):
        tb(owner, "turn", "begin", "--prompt", "a turn")
        (owner / "a.txt").write_text(f"settled {cancelled}\n")
        modules, lean = _imports(owner, "turn", "settle", *cancelled)
        assert lean.returncode == 0, lean.stderr
        heavy = {"json", "re", "enum", "argparse", "turnback.cli.remote", "turnback.errors"} & modules
        assert not heavy, heavy
        turn = json.loads(tb(owner, "--json", "log").stdout)["turns"][-1]
        word = "cancelled" if cancelled else "settled"
        assert lean.stdout.startswith(f"turn {turn['turn']} {word}"), lean.stdout
        tb(owner, "turn", "begin", "--prompt", "another")
        general = tb(owner, *store, "turn", "settle", "--turn", str(turn["turn"] + 1), *cancelled)
        assert general.stdout.split(";")[0] == f"turn {turn['turn'] + 1} {word}"
        assert lean.stdout.split(";")[0].replace(str(turn["turn"]), "N") \
            == general.stdout.split(";")[0].replace(str(turn["turn"] + 1), "N")
    # Nothing runs: the general path's words and status, as before.
    lean_err = tb(owner, "turn", "settle", check=False)
    general_err = tb(owner, *store, "turn", "settle", check=False)
    assert (lean_err.returncode, lean_err.stderr) == (general_err.returncode, general_err.stderr)
    assert lean_err.returncode == 1 and "no-turn-running" in lean_err.stderr


def test_a_settle_without_a_turn_is_one_request_whose_answer_names_the_turn(owner, monkeypatch,
                                                                            capsys):
    """`turn settle` asked `session/info` for the running turn, then settled it: two round trips
    and two wakes of the owner in a command-line turn. The owner's answer now names the turn."""
    from turnback.cli import fast, turnwire

    tb(owner, "turn", "begin", "--prompt", "one")
    sent = []
    real = turnwire._exchange
    monkeypatch.setattr(turnwire, "_exchange",
                        lambda sock, reader, request: sent.append(request) or real(sock, reader, request))
    assert fast.main(["--workspace", str(owner), "turn", "settle"]) == 0
    assert capsys.readouterr().out.startswith("turn 1 settled; its head is published next")
    assert len(sent) == 1 and b"turnback/turn/settle" in sent[0] and b'"turn"' not in sent[0]
    # An older owner's answer names no turn: the command still reports the settle, unnamed.
    message = {"result": {"headSeq": 3}}
    params = {"status": "settled"}
    assert turnwire._named_turn(message, params) is message and "turn" not in params
    assert turnwire._named_turn({"error": {"message": "no", "data": {"code": "no-turn-running"}}},
                                params) is None


def test_without_an_owner_the_direct_path_runs_the_command(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    assert tb(root, "turn", "begin", "--prompt", "direct").stdout == "1\n"
    assert tb(root, "turn", "capture", "a.txt").stdout.startswith("a.txt  ")
    assert os.path.isfile(root / ".turnback" / "FORMAT")


def test_without_an_owner_a_turn_command_skips_argparse(tmp_path):
    """The hand parser took the command already: the direct path runs it without building the whole
    parser (argparse, gettext and every subcommand's options, on every direct `turn` command)."""
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    modules, proc = _imports(root, "turn", "begin", "--prompt", "direct")
    assert proc.returncode == 0 and proc.stdout.startswith("1\n"), proc.stderr
    assert not {"argparse", "gettext", "turnback.cli.main"} & modules
    assert "psutil" not in modules  # the lease's start time is read from /proc (store/ownership/)
    (root / "a.txt").write_text("two\n")
    modules, proc = _imports(root, "turn", "settle")
    assert proc.returncode == 0 and proc.stdout.startswith("turn 1 settled"), proc.stderr
    assert not {"argparse", "psutil", "secrets", "random"} & modules  # temp names: os.urandom
    # The ignore rules the first command compiled are kept (capture/compiled.py): pathspec is not
    # imported again; a settle's few loose objects are synced by syncfs, found without ldconfig.
    assert not {"pathspec", "typing_extensions", "ctypes.util", "bz2"} & modules
    bad = tb(root, "turn", "settle", "--turn", "7", check=False)  # errors: the same words and status
    assert bad.returncode == 1 and "error [unknown-turn]" in bad.stderr


def test_respond_with_its_turn_takes_the_lean_path_and_says_what_the_general_path_says(owner):
    """`turn respond --turn N TEXT` is one request: it went down the general path (json, re, enum,
    the remote client). Without `--turn` it still asks the owner which turn runs, there."""
    store = ["--store", str(owner / ".turnback")]
    tb(owner, "turn", "begin", "--prompt", "one")
    modules, lean = _imports(owner, "turn", "respond", "--turn", "1", 'said "so"\n\té')
    assert lean.returncode == 0 and lean.stdout.split("MODULES")[0] == "", lean.stderr
    heavy = {"json", "re", "enum", "argparse", "turnback.cli.remote", "turnback.errors"} & modules
    assert not heavy, heavy
    general = tb(owner, *store, "turn", "respond", "--turn", "1", "--final", "done")
    assert general.stdout == ""
    modules, final = _imports(owner, "turn", "respond", "--turn", "1", "--final", "at last")
    assert final.returncode == 0 and "turnback.cli.remote" not in modules, final.stderr
    log = json.loads(tb(owner, "--json", "log").stdout)["turns"][0]
    assert 'said "so"\n\té' in log["response"] and "at last" in log["response"], log["response"]
    # An error: the same words and status as the general path.
    lean_err = tb(owner, "turn", "respond", "--turn", "7", "no such turn", check=False)
    general_err = tb(owner, *store, "turn", "respond", "--turn", "7", "no such turn", check=False)
    assert (lean_err.returncode, lean_err.stderr) == (general_err.returncode, general_err.stderr)
    assert lean_err.returncode == 1 and "unknown-turn" in lean_err.stderr
