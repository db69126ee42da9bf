"""What a command that goes through a live owner imports (issue 39, item 4): only what it needs to
speak to the owner and print its answer. A turn's `begin` and `settle`, and the direct commands
(`rewind`, `restore`, `redo --head` with `--yes`, `info`, `log`, `daemon status`), each run here as
the `turnback` command runs (`turnback.command.main`, in a process of its own), and each must leave
the server's heavy modules unimported: the store's objects and compression, the model, the travel
planners, the language server. The gain cannot come back unnoticed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from clikit import TB, json_values, tb

from turnback.cli.main import build_parser, named_command, parser_for
from turnback.cli.turnwire import pretty


# Third-party packages the server needs and a client of the owner never does.
HEAVY_PACKAGES = {"zstandard", "cbor2", "merge3", "pygls", "lsprotocol", "xxhash", "psutil",
                  "pathspec", "asyncio", "attrs", "cattrs"}
# turnback's own: the workbench, the store's objects and journal, the model, the planners.
HEAVY_TURNBACK = ("turnback.workbench", "turnback.lsp", "turnback.store.objects",
                  "turnback.store.journal", "turnback.store.heads", "turnback.store.layout",
                  "turnback.model.session", "turnback.model.steps", "turnback.timeline",
                  "turnback.capture", "turnback.collect", "turnback.diffs.changes",
                  "turnback.effects")
LIGHT_TRAVEL = {"turnback.travel", "turnback.travel.plan_words", "turnback.travel.recovered"}
# A turn's commands take the lean path (cli/turnwire.py): not even the standard library's parsers.
TURN_EXTRA = {"argparse", "json", "re", "enum", "dataclasses", "typing", "pathlib",
              "turnback.cli.main", "turnback.cli.commands", "turnback.cli.render",
              "turnback.remote.client", "turnback.errors"}


def heavy(modules: set[str], extra: set[str] = frozenset()) -> list[str]:
    return sorted(m for m in modules
                  if m.split(".")[0] in HEAVY_PACKAGES or m.startswith(HEAVY_TURNBACK) or m in extra
                  or (m.startswith("turnback.travel.") and m not in LIGHT_TRAVEL))


def probed(root: Path, *args) -> tuple[set[str], subprocess.CompletedProcess]:
    """Run `turnback ARGS` as the command does (turnback.command.main) and name every module it
    imported by its end."""
    code = ("import sys; sys.argv = ['turnback', *%r]; from turnback.command import main; "
            "code = main(); sys.stdout.flush(); print('MODULES', ' '.join(sorted(sys.modules))); "
            "sys.exit(code)" % (["--workspace", str(root), *args],))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                          timeout=120)
    line = [x for x in proc.stdout.splitlines() if x.startswith("MODULES ")]
    assert line, (args, proc.stdout, proc.stderr)
    return set(line[0].split()[1:]), proc


@pytest.fixture
def owner(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    tb(root, "--json", "serve", "--background", "--idle-exit", "120")
    yield root
    tb(root, "daemon", "stop", check=False)


def test_a_turn_through_the_owner_imports_nothing_heavy(owner):
    for n, text in ((1, "two\n"), (2, "three\n")):
        modules, proc = probed(owner, "turn", "begin", "--prompt", f"turn {n}")
        assert proc.returncode == 0 and proc.stdout.startswith(f"{n}\n"), proc.stderr
        assert not heavy(modules, TURN_EXTRA), heavy(modules, TURN_EXTRA)
        (owner / "a.txt").write_text(text)
        modules, proc = probed(owner, "turn", "settle")
        assert proc.returncode == 0 and proc.stdout.startswith(f"turn {n} settled"), proc.stderr
        assert not heavy(modules, TURN_EXTRA), heavy(modules, TURN_EXTRA)
    log = json.loads(tb(owner, "--json", "log").stdout)
    assert [(t["turn"], t["state"]) for t in log["turns"]] == [(1, "settled"), (2, "settled")]


def test_the_direct_commands_through_the_owner_import_nothing_heavy(owner):
    for n, text in ((1, "two\n"), (2, "three\n")):
        tb(owner, "turn", "begin", "--prompt", f"turn {n}")
        (owner / "a.txt").write_text(text)
        tb(owner, "turn", "settle")
    head = json.loads(tb(owner, "--json", "info").stdout)["headSeq"]
    steps = [
        (("info",), "turn"),
        (("daemon", "status"), "background owner"),
        (("log",), "turn 2"),
        (("rewind", "--before-prompt", "2", "--yes"), "Discards"),
        (("redo",), ""),
        (("redo", "--head", str(head), "--yes"), "head"),
        (("restore", "a.txt", "--turn", "1", "--yes"), "a.txt"),
    ]
    seen = {}
    for args, says in steps:
        modules, proc = probed(owner, *args)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert says in proc.stdout, (args, proc.stdout)
        assert not heavy(modules), (args, heavy(modules))
        seen[args[0]] = (owner / "a.txt").read_text()
    # they did what they say, through the owner
    assert seen["rewind"] == "two\n" and seen["redo"] == "three\n" and seen["restore"] == "two\n"


def test_begin_and_settle_with_json_stay_lean_and_print_what_the_general_path_prints(owner):
    """A script's `--json` turn takes the lean path too; `--store` sends the same command down the
    general path (cli/remote.py), which must print the same document. `--json` settles answer with
    the published head (docs/protocol.md), so the head is there at once."""
    store = ["--store", str(owner / ".turnback")]
    for n in (1, 2):
        modules, lean = probed(owner, "--json", "turn", "begin", "--prompt", f"lean {n}")
        assert lean.returncode == 0, lean.stderr
        assert not heavy(modules, TURN_EXTRA), heavy(modules, TURN_EXTRA)
        begun = json.loads(lean.stdout.split("MODULES")[0])
        assert begun["turn"] == 2 * n - 1
        assert lean.stdout.split("MODULES")[0] == json.dumps(begun, indent=2, ensure_ascii=False) + "\n"
        (owner / "a.txt").write_text(f"lean {n}\n")
        modules, lean = probed(owner, "turn", "settle", "--json")
        assert lean.returncode == 0, lean.stderr
        assert not heavy(modules, TURN_EXTRA), heavy(modules, TURN_EXTRA)
        doc = json.loads(lean.stdout.split("MODULES")[0])
        assert doc["turn"] == 2 * n - 1 and isinstance(doc["headSeq"], int), doc
        assert doc["headSeq"] == json.loads(tb(owner, "--json", "info").stdout)["headSeq"]
        general = tb(owner, *store, "--json", "turn", "begin", "--prompt", f"general {n}")
        assert json.loads(general.stdout)["turn"] == 2 * n
        assert set(json.loads(general.stdout)) == set(begun)
        (owner / "a.txt").write_text(f"general {n}\n")
        general = tb(owner, *store, "turn", "settle", "--json")
        again = json.loads(general.stdout)
        assert general.stdout == json.dumps(again, indent=2, ensure_ascii=False) + "\n"
        assert set(again) == set(doc) and again["turn"] == 2 * n


values = json_values(floats=True)


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_lean_json_printer_prints_what_json_dumps_prints(value):
    assert pretty(value) == json.dumps(value, indent=2, ensure_ascii=False)


SAMPLES = [
    ["info"], ["--json", "log"], ["daemon", "status"], ["--workspace", "/tmp", "redo", "--all"],
    ["rewind", "--before-prompt", "2", "--yes", "--files-only"],
    ["rewind", "--after-response", "1", "--keep-user-edits", "--conflict-markers", "--json"],
    ["restore", "a.txt", "src/**/*.py", "--turn", "3", "--yes"],
    ["redo", "--head", "7", "--yes", "--keep-user-edits"], ["turn", "settle", "--turn", "2"],
    ["turn", "step", "--kind", "shell", "--path", "a", "b", "--held"], ["recovery"],
    ["hooks", "install", "codex", "--user", "--trust"], ["diff", "--since", "2", "x"],
    ["--store", "/tmp/s", "fork", "--turn", "1", "--worktree", "w"], ["compare", "a", "b"],
    ["gc", "--dry-run"], ["serve", "--background", "--idle-exit", "5"], ["takeover", "--yes"],
    ["guard", "--check", "ls"], ["--store=/tmp/s", "fsck"], ["demo", "--agent", "codex"],
]


@pytest.mark.parametrize("argv", SAMPLES, ids=lambda a: " ".join(a))
def test_a_parser_built_for_one_command_parses_as_the_whole_one(argv):
    """`build_parser(only)` (the parser a command line naming its command gets) reads exactly what
    the whole parser reads, and says the same in its help."""
    only = named_command(argv)
    assert only is not None
    narrow, whole = build_parser(only), build_parser()
    assert vars(narrow.parse_args(argv)) == vars(whole.parse_args(argv))
    assert vars(parser_for(argv).parse_args(argv)) == vars(whole.parse_args(argv))

    def sub_help(parser):
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        return sub.choices[only].format_help()

    assert sub_help(narrow) == sub_help(whole)


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"], ["bogus"], ["--json"],
                                  ["--bogus", "info"], ["rewnd", "--yes"]])
def test_anything_else_gets_the_whole_parser(argv):
    whole = build_parser().format_help()
    assert parser_for(argv).format_help() == whole


def test_bad_usage_of_a_command_says_what_the_whole_parser_says(tmp_path):
    for argv in (["rewind", "--before-prompt", "x"], ["restore", "--turn", "1"], ["redo", "--bogus"],
                 ["rewnd"]):
        narrow = subprocess.run([*TB, *argv], capture_output=True, text=True, cwd=tmp_path,
                                timeout=60)
        assert narrow.returncode == 2, (argv, narrow.stderr)
        probe = ("import sys; from turnback.cli.main import build_parser; "
                 "build_parser().parse_args(sys.argv[1:])")
        whole = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                               text=True, cwd=tmp_path, timeout=60)
        assert narrow.stderr == whole.stderr, argv
