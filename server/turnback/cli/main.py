"""The `turnback` command line: argparse in front of the workbench. It has no logic of its own.

Exit statuses: 0 done (or, for fsck, the store is sound); 1 an error (`error [code]: message` on
stderr), a refused or stale operation, or an unsound store; 2 bad usage or a part that is not built;
3 another process (a running `turnback serve`) owns the store, so a mutation was refused.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import TurnbackError
from . import diff_cmd, fork_cmd, guard_cmd, hooks_cmd, restore_cmd, takeover
from .exits import EXIT_ERROR

MYPY = False
if MYPY:  # for the type checker only: `typing` costs every command's start a few milliseconds
    from typing import Callable


def _globals(suppress: bool) -> argparse.ArgumentParser:
    """The options every command accepts, before or after its name."""
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("global options")
    g.add_argument("--workspace", metavar="DIR", default=d(None),
                   help="the workspace folder (default: the current directory)")
    g.add_argument("--json", action="store_true", default=d(False),
                   help="print one JSON document to stdout instead of text")
    g.add_argument("--store-kind", choices=("heads", "pid"), default=d(None),
                   help="kind of store to create if there is none yet (default heads)")
    g.add_argument("--store", metavar="PATH", default=d(None),
                   help="the store folder (default: <workspace>/.turnback)")
    return p


class _Unbuilt:
    """What `add` hands back for a command `build_parser(only=…)` leaves out: it takes every call
    (`add_argument`, `add_mutually_exclusive_group`, `add_subparsers`, …) and builds nothing."""

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self

    def __setattr__(self, name: str, value) -> None:
        pass


_UNBUILT = _Unbuilt()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only`, the same parser with that one command's subparser alone.

    Building every command's subparser (35 of them, each with the global options) took 6 to 20 ms
    of every command's start, a `rewind --yes` through the owner's included. A command line that
    names its command parses the same with `only` (tests/cli/test_lean_imports.py); anything else
    (no command, `--help`, a name that is no command) gets the whole parser and its words."""
    common = _globals(suppress=True)
    parser = argparse.ArgumentParser(
        prog="turnback", parents=[_globals(suppress=False)],
        description="A trustworthy Rewind and Redo for AI coding-agent sessions.",
        epilog="Start with `turnback demo`. Relative PATHs are taken from the current directory.")
    parser.add_argument("--version", action="version", version=f"turnback {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def add(name, help_, parent=sub, **kw):
        if parent is _UNBUILT or (only is not None and parent is sub and name != only):
            return _UNBUILT
        return parent.add_parser(name, help=help_, description=help_, parents=[common], **kw)

    p = add("serve", "run the sidecar (language server) on stdio")
    # Language clients add a transport flag of their own (vscode-languageclient appends --stdio).
    t = p.add_mutually_exclusive_group()
    t.add_argument("--stdio", action="store_true", help="speak on stdin/stdout (the default)")
    t.add_argument("--socket", metavar="PORT",
                   help="refused: turnback never listens on TCP (its private socket is a Unix one)")
    t.add_argument("--pipe", metavar="NAME",
                   help="refused: use --stdio (named pipes are not supported)")
    t.add_argument("--background", action="store_true",
                   help="start a detached owner on the private socket (log: <store>/run/daemon.log)")
    p.add_argument("--idle-exit", type=float, metavar="SECONDS", default=None,
                   help="with --background: exit after this long with no client and no running turn")
    p = add("daemon", "report on (status) or stop the background owner of this workspace")
    p.add_argument("action", choices=("status", "stop"))

    p = add("demo", "run a scripted session end to end in a temporary workspace and check it")
    p.add_argument("--keep", metavar="DIR", help="run in DIR (new or empty) and leave it there")
    p.add_argument("--agent", choices=("claude-code", "codex", "gemini", "copilot", "cursor"),
                   help="replay a recorded session of this agent through `turnback hook` instead")

    turn = add("turn", "drive a session from scripts and agent hooks")
    tsub = turn.add_subparsers(dest="turn_command", metavar="SUBCOMMAND")
    tsub.required = True
    p = add("begin", "begin a turn; prints its number", parent=tsub)
    p.add_argument("--prompt", required=True, metavar="TEXT")
    p.add_argument("--directive", metavar="ID", help="the directive this turn attempts")
    p.add_argument("--kind", choices=("chat", "directive"),
                   help="default: directive with --directive, else chat")
    p = add("capture", "capture files (an agent hook: --phase before just before a tool writes)",
            parent=tsub)
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--phase", choices=("before", "after"), default="after")
    p = add("step", "record one step (tool call) of a running turn; prints its id", parent=tsub)
    p.add_argument("--turn", type=int, metavar="N", help="default: the running turn")
    p.add_argument("--kind", required=True, metavar="K", help="file-write, file-delete, shell, network-send, …")
    p.add_argument("--scope", choices=("host", "crossing", "unknown", "none"),
                   help="where the effect went; leave it out and the turn gets a step-scope-unknown gap")
    p.add_argument("--summary", metavar="T")
    p.add_argument("--path", dest="paths", nargs="+", action="extend", default=[], metavar="P")
    p.add_argument("--inverse-kind", metavar="K")
    p.add_argument("--inverse-scope", choices=("host", "crossing", "unknown", "none"))
    p.add_argument("--held", action="store_true", help="an outbound send still held in a queue")
    p.add_argument("--compensates", metavar="ID", help="the step id this step compensates")
    p.add_argument("--result", metavar="TEXT", help="the tool result to keep")
    p = add("respond", "append assistant text to a running turn", parent=tsub)
    p.add_argument("--turn", type=int, metavar="N", help="default: the running turn")
    p.add_argument("--final", action="store_true")
    p.add_argument("text", metavar="TEXT")
    p = add("settle", "settle (or cancel) a turn; default: the running one", parent=tsub)
    p.add_argument("--turn", type=int, metavar="N")
    p.add_argument("--cancelled", action="store_true")

    add("log", "the turns, their files (checkpoints, before/after digests) and gaps")

    p = add("rewind", "show what a rewind would do; commit it with --yes or an interactive yes "
            "(no boundary on a terminal: pick the prompt from a list)")
    b = p.add_mutually_exclusive_group()
    b.add_argument("--after-response", type=int, metavar="N", help="keep turn N and its answer")
    b.add_argument("--before-prompt", type=int, metavar="N", help="discard turn N and all later ones")
    b.add_argument("--before-directive", metavar="ID",
                   help="discard an attempt at a directive (its latest, or --turn N) and all later turns")
    p.add_argument("--turn", type=int, metavar="N", help="with --before-directive: which attempt")
    p.add_argument("--yes", action="store_true", help="commit without asking")
    p.add_argument("--keep-user-edits", action="store_true",
                   help="keep your own edits: each is merged onto the restored file (a conflict "
                        "leaves that file as it is now)")
    p.add_argument("--conflict-markers", action="store_true",
                   help="with --keep-user-edits: write a conflicting file with conflict markers")
    m = p.add_mutually_exclusive_group()
    m.add_argument("--files-only", dest="mode", action="store_const", const="files",
                   help="put the files back and keep every turn of the conversation")
    m.add_argument("--conversation-only", dest="mode", action="store_const", const="conversation",
                   help="discard the turns and leave every file as it is now")
    restore_cmd.add_parsers(sub, add)  # `restore`
    guard_cmd.add_parsers(sub, add)  # `guard`

    p = add("redo", "list what rewinds left behind, or bring one back with --head")
    p.add_argument("--head", type=int, metavar="SEQ")
    p.add_argument("--all", action="store_true",
                   help="list every earlier state, also those the current one grew from")
    p.add_argument("--yes", action="store_true", help="commit without asking")
    p.add_argument("--keep-user-edits", action="store_true",
                   help="leave the files listed as your own edits as they are now")

    p = add("gc", "one full collection of unreferenced heads and objects")
    p.add_argument("--dry-run", action="store_true",
                   help="print what a collection would remove and keep; change nothing")
    add("fsck", "verify every record and object of the store; exit 0 only when sound")
    add("info", "the session, its owner, turn count, gaps and recovery records")

    p = add("recovery", "list what a failed rewind or redo could not put back, or resolve it")
    p.add_argument("--resolve", metavar="ID")
    a = p.add_mutually_exclusive_group()
    a.add_argument("--retry", action="store_true", help="put the backups back again")
    a.add_argument("--dismiss", action="store_true", help="record that you took care of it")

    hooks_cmd.add_parsers(sub, add)  # `hook AGENT` and `hooks install|uninstall|status`

    takeover.register(add)
    fork_cmd.add_parsers(sub, add)  # `fork`, `branch`, `compare`
    diff_cmd.add_parsers(sub, add)  # `diff --turn K | --since K [PATH]`

    p = add("bench", "the benchmark scenarios (one JSON line per figure with --json); "
            "`turnback bench --help` is the benchmarks' own help", add_help=False)
    p.add_argument("rest", nargs="*", metavar="SCENARIO")
    return parser


_VALUED = ("--workspace", "--store", "--store-kind")


def _split_bench(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """`turnback [globals] bench ARGS…`: ARGS go to the benchmarks untouched (their own --help too)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in _VALUED:
            i += 2
        elif token.startswith("--") and (token == "--json" or token.split("=", 1)[0] in _VALUED):
            i += 1
        elif token == "bench":
            return argv[: i + 1], argv[i + 1:]
        else:
            return None
    return None


def named_command(argv: list[str]) -> str | None:
    """The command `argv` names after its global options, or None (an option first: `--help`,
    `--version`, one this parser does not know; or no command at all)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in _VALUED:
            i += 2
        elif token == "--json" or (token.startswith("--") and token.split("=", 1)[0] in _VALUED):
            i += 1
        elif token.startswith("-"):
            return None
        else:
            return token
    return None


def parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for `argv`: built for its one command when it names one, else the whole."""
    only = named_command(argv)
    if only is not None:
        parser = build_parser(only)
        if only in _subcommands(parser):
            return parser
    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def main(argv: list[str] | None = None, *, bench: Callable[[list[str]], int] | None = None) -> int:
    """`bench` runs `turnback bench` (the top floor's `turnback/command.py` hands it down)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    split = _split_bench(argv)
    parser = parser_for(argv)
    if split:  # SystemExit(2) on bad usage, as argparse does
        args = parser.parse_args(split[0])
        args.rest = split[1]
        args.bench_runner = bench
    else:
        args = parser.parse_args(argv)
    if args.command in ("hook", "hooks"):  # the agent's fast path: no workbench import up front
        try:
            return int(hooks_cmd.run(args) or 0)
        except TurnbackError as exc:
            print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
            return EXIT_ERROR
    from .dispatch import run

    return run(args)

if __name__ == "__main__":
    sys.exit(main())
