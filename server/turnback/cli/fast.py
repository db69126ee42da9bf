"""The `turnback` entry point: a fast path for the commands hooks run, then the full command line.

A hook runs `turnback turn begin|capture|step|respond|settle` many times a minute. When a live owner listens, such a command needs only the standard library: it
is parsed here by hand (no argparse), sent over the socket, and printed. Anything this parser does
not recognise exactly (help, an unknown flag, another command), and any workspace without a live
owner, goes to the full command line (`main.py`), which prints the same things the same way.
"""

from __future__ import annotations

import sys

MYPY = False
if MYPY:  # for the type checker only: importing typing costs a start `re` and `enum`
    from typing import Any, Callable

_GLOBAL_VALUED = {"--workspace": "workspace", "--store": "store", "--store-kind": "store_kind"}
# per subcommand: valued options (option -> attribute), flags, positional attribute
_TURN: dict[str, tuple[dict[str, str], dict[str, str], str | None]] = {
    "begin": ({"--prompt": "prompt", "--directive": "directive", "--kind": "kind"}, {}, None),
    "capture": ({"--phase": "phase"}, {}, "paths"),
    "step": ({"--turn": "turn", "--kind": "kind", "--scope": "scope", "--summary": "summary",
              "--inverse-kind": "inverse_kind", "--inverse-scope": "inverse_scope",
              "--compensates": "compensates", "--result": "result"}, {"--held": "held"}, None),
    "respond": ({"--turn": "turn"}, {"--final": "final"}, "text"),
    "settle": ({"--turn": "turn"}, {"--cancelled": "cancelled"}, None),
}
_DEFAULTS: dict[str, dict[str, Any]] = {"begin": {"directive": None, "kind": None, "prompt": None},
             "capture": {"phase": "after", "paths": []},
             "step": {"turn": None, "scope": None, "summary": None, "paths": [], "inverse_kind": None,
                      "inverse_scope": None, "held": False, "compensates": None, "result": None,
                      "kind": None},
             "respond": {"turn": None, "final": False, "text": None},
             "settle": {"turn": None, "cancelled": False}}
_CHOICES = {"phase": ("before", "after"), "scope": ("host", "crossing", "unknown", "none"),
            "inverse_scope": ("host", "crossing", "unknown", "none"), "kind_begin": ("chat", "directive")}


class _Args:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def parse(argv: list[str]):
    """The argparse namespace for a hot command, or None to let the full parser decide."""
    ns: dict[str, Any] = {"workspace": None, "store": None, "store_kind": None, "json": False, "command": None}
    rest = []
    i = 0
    while i < len(argv):  # globals may stand before or after the command, as in main.py
        tok = argv[i]
        name, eq, val = tok.partition("=")
        if name in _GLOBAL_VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    return None
                val = argv[i + 1]
                i += 1
            ns[_GLOBAL_VALUED[name]] = val
        elif tok == "--json":
            ns["json"] = True
        elif tok == "--":
            return None
        else:
            rest.append(tok)
        i += 1
    if len(rest) < 2 or rest[0] != "turn" or rest[1] not in _TURN:
        return None
    sub = rest[1]
    valued, flags, positional = _TURN[sub]
    ns.update(command="turn", turn_command=sub,
              **{k: list(v) if isinstance(v, list) else v for k, v in _DEFAULTS[sub].items()})
    found = []
    j = 2
    while j < len(rest):
        tok = rest[j]
        name, eq, val = tok.partition("=")
        if name in valued:
            if not eq:
                if j + 1 >= len(rest):
                    return None
                val = rest[j + 1]
                j += 1
            ns[valued[name]] = val
        elif tok in flags:
            ns[flags[tok]] = True
        elif sub == "step" and tok == "--path":
            j += 1
            while j < len(rest) and not rest[j].startswith("--"):
                ns["paths"].append(rest[j])
                j += 1
            continue
        elif tok.startswith("-"):
            return None  # help, a typo, an option this parser does not know: argparse says it best
        else:
            found.append(tok)
        j += 1
    if positional == "paths":
        if not found:
            return None
        ns["paths"] = found
    elif positional == "text":
        if len(found) != 1:
            return None
        ns["text"] = found[0]
    elif found:
        return None
    if not _valid(sub, ns):
        return None
    return _Args(**ns)


def _valid(sub: str, ns: dict) -> bool:
    if sub == "begin" and (ns["prompt"] is None or ns["kind"] not in (None, *_CHOICES["kind_begin"])):
        return False
    if sub == "step" and ns["kind"] is None:
        return False
    for key in ("phase", "scope", "inverse_scope"):
        if ns.get(key) is not None and ns[key] not in _CHOICES[key]:
            return False
    if ns.get("turn") is not None:
        try:
            ns["turn"] = int(ns["turn"])
        except ValueError:
            return False
    return True


_HOOK_AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor", "opencode")  # hooks/agents.py AGENTS


def _hook(argv: list[str]) -> int | None:
    """`turnback hook AGENT [--event NAME]`, what an agent runs on every event (hooks/fast.py)."""
    if len(argv) not in (2, 4) or argv[1] not in _HOOK_AGENTS:
        return None
    event = None
    if len(argv) == 4:
        if argv[2] != "--event":
            return None
        event = argv[3]
    from ..hooks.fast import run

    return run(argv[1], event=event, slower=_slower_hook)


def _slower_hook(*args, **kwargs) -> int:
    """The hook's slower path (hooks/fallback.py), passed in to `hooks.fast.run`: fallback sits
    above fast, and the usual event never loads it."""
    from ..hooks.fallback import parsed

    return parsed(*args, **kwargs)


def main(argv: list[str] | None = None, *, bench: Callable[[list[str]], int] | None = None) -> int:
    """`bench`: what runs `turnback bench` (`turnback/command.py` hands it down: the benchmarks
    are a floor above the command line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:
        code = _hook(argv)
        if code is not None:
            return code
    args = parse(argv)
    if args is not None:
        code = _through_owner(args)
        if code is None and _starts_owner(args):
            code = _through_started_owner(args)
        if code is not None:
            return code
        from .dispatch import run  # parsed already: argparse and the full parser are not needed

        return run(args)
    from .main import main as full

    return full(argv, bench=bench)


def _through_owner(args) -> int | None:
    from . import turnwire

    code = turnwire.run(args)  # `turn begin` and `turn capture`: one request, nothing else imported
    if code is not None:
        return code
    from ..errors import NotOwner, TurnbackError
    from . import remote

    try:
        return remote.run(args)
    except NotOwner as exc:
        _fail(exc)
        return remote.EXIT_NOT_OWNER
    except TurnbackError as exc:
        _fail(exc)
        return remote.EXIT_ERROR
    except BrokenPipeError:
        return remote.EXIT_ERROR


START_SECONDS = 30.0  # an owner recovering a big store after a crash takes a while to listen
STARTED_IDLE_SECONDS = 300.0  # an owner nobody asked for by name leaves sooner than a hook's (900 s)


def _starts_owner(args) -> bool:
    """`TURNBACK_START_OWNER=1`: a `turn` command that finds no live owner starts a background one,
    as the agent hooks do, and goes through it (docs/live.md, "The command line's own owner")."""
    import os

    return os.environ.get("TURNBACK_START_OWNER") == "1" and args.store_kind is None


def _through_started_owner(args) -> int | None:
    import os

    from ..remote import client

    set_idle = os.environ.get("TURNBACK_IDLE_EXIT")  # overrides it for every owner (lsp/daemon.py)
    idle = None if set_idle else STARTED_IDLE_SECONDS
    workspace = args.workspace or os.getcwd()
    try:
        if client.owner_socket(workspace, args.store) is not None:
            return _through_owner(args)  # one answers now (a racing starter's): nothing started here
        client.ensure_owner(workspace, args.store, timeout=START_SECONDS, idle=idle)
    except (client.NoOwner, client.OwnerStarting) as exc:
        print(f"turnback: no background owner could be started ({exc}); "
              "running the command here", file=sys.stderr)
        return None  # the direct path decides (and says so when another process owns the store)
    # Said once: the later commands find it. A process left behind must not be a surprise.
    print(f"turnback: started a background owner for this workspace (it leaves after "
          f"{set_idle or f'{STARTED_IDLE_SECONDS:g}'} s with no client and no turn running; "
          "`turnback daemon stop` stops it)", file=sys.stderr)
    return _through_owner(args)


def _fail(exc) -> None:
    print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
