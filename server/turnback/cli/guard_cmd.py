"""`turnback guard [--check COMMAND]`: the guard and the after-rewind hook in force, checked.

It reads the configuration files only (turnback.toml, then the store's config.toml) and opens no
store. A file that names an unknown scope or action is an error (`bad-config`, exit 1), so a typo is
found here rather than by a push that was never asked about.
"""

from __future__ import annotations

from ..errors import BadConfig
from .exits import EXIT_OK

MYPY = False
if MYPY:  # for the type checker only: `typing` costs every command's start a few milliseconds
    from typing import Any


def add_parsers(sub, add) -> None:
    p = add("guard", "what the agents' pre-tool guard does per scope, and the after-rewind hook "
            "(from turnback.toml); exit 1 when the configuration names something unknown")
    p.add_argument("--check", metavar="COMMAND",
                   help="the scope of this shell command line and what the guard would do")


def cmd_guard(ctx) -> int:
    from ..hooks.config import load

    config = load(ctx.root, ctx.store_path)
    doc: dict[str, Any] = {"guard": {scope: {"action": action, "source": config.guard_source[scope]}
                     for scope, action in config.guard.items()},
           "afterRewind": {"command": config.after_rewind, "timeout": config.after_rewind_timeout},
           "files": config.files, "errors": config.errors}
    if ctx.args.check is not None:
        scope, why = config.shell_scope(ctx.args.check)
        doc["check"] = {"command": ctx.args.check, "scope": scope, "why": why,
                        "action": config.guard.get(scope, "allow")}
    if ctx.json:
        ctx.emit(doc)
    else:
        for scope, entry in doc["guard"].items():
            ctx.print(f"{scope:<9} {entry['action']:<6} ({entry['source']})")
        hook = doc["afterRewind"]
        ctx.print(f"after-rewind: {hook['command'] or '(none)'}"
                  + (f" (stopped after {hook['timeout']:g} s)" if hook["command"] else ""))
        if "check" in doc:
            c = doc["check"]
            ctx.print(f"{c['command']!r}: scope {c['scope']} ({c['why']}) -> {c['action']}")
    if config.errors:
        raise BadConfig("; ".join(config.errors), data={"errors": config.errors})
    return EXIT_OK


COMMANDS = {"guard": cmd_guard}
