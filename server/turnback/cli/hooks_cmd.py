"""`turnback hook AGENT` (what an agent runs on each event) and `turnback hooks install|uninstall|status`.

`hook` is the agent's fast path: it imports nothing of the workbench until it knows it must open the
store itself (see hooks/runtime.py). `hooks` edits the agents' settings files (hooks/install.py).
"""

from __future__ import annotations

AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")


def add_parsers(sub, add) -> None:
    p = add("hook", "record one agent hook event read from stdin (what the agent runs); exits 0")
    p.add_argument("agent", choices=AGENTS, metavar="AGENT", help=" | ".join(AGENTS))
    p.add_argument("--event", metavar="NAME",
                   help="the event name, for agents whose payload does not carry it (Copilot CLI)")

    hooks = add("hooks", "install, uninstall or show the agent hooks that feed turnback")
    hsub = hooks.add_subparsers(dest="hooks_command", metavar="SUBCOMMAND")
    hsub.required = True
    for name, help_ in (("install", "merge turnback's hook block into the agent's settings file"),
                        ("uninstall", "remove exactly the hook entries turnback added")):
        p = add(name, help_, parent=hsub)
        p.add_argument("agent", choices=AGENTS, metavar="AGENT", help=" | ".join(AGENTS))
        where = p.add_mutually_exclusive_group()
        where.add_argument("--project", dest="scope", action="store_const", const="project",
                           help="the workspace's settings file (the default)")
        where.add_argument("--user", dest="scope", action="store_const", const="user",
                           help="your own settings file, for every project")
        if name == "install":
            p.add_argument("--command", dest="hook_command", metavar="CMD",
                           help="the command the agent runs (default: this turnback, `hook AGENT`)")
    add("status", "which agents have turnback hooks installed, in which file", parent=hsub)


def run(args) -> int:
    if args.command == "hook":
        from ..hooks.fast import run as run_hook

        return run_hook(args.agent, event=args.event)
    from .context import Context

    ctx = Context(args)
    return {"install": _install, "uninstall": _uninstall, "status": _status}[args.hooks_command](ctx)


def _install(ctx) -> int:
    from ..hooks.install import install

    a = ctx.args
    scope = a.scope or "project"
    result = install(a.agent, scope, ctx.root, command=a.hook_command)
    if scope == "project":
        _ensure_store(ctx)
    if ctx.json:
        ctx.emit(result)
    elif result["alreadyInstalled"]:
        ctx.print(f"{a.agent}: already installed in {result['path']}; nothing changed")
    else:
        ctx.print(f"{a.agent}: installed in {result['path']} ({', '.join(result['added'])})",
                  f"  the agent runs: {result['command']}")
    return 0


def _ensure_store(ctx) -> None:
    """A project install makes the workspace one turnback knows (hooks ignore any other folder)."""
    from ..store.layout import Store

    kind = ctx.existing_kind() or ctx.args.store_kind or "heads"
    Store.open(ctx.store_path, kind=kind)


def _uninstall(ctx) -> int:
    from ..hooks.install import uninstall

    a = ctx.args
    result = uninstall(a.agent, a.scope or "project", ctx.root)
    if ctx.json:
        ctx.emit(result)
    elif result["removed"]:
        ctx.print(f"{a.agent}: removed turnback's hooks from {result['path']} "
                  f"({', '.join(result['removed'])})")
    else:
        ctx.print(f"{a.agent}: no turnback hooks in {result['path']}; nothing changed")
    return 0


def _status(ctx) -> int:
    from ..hooks.install import status

    rows = status(ctx.root)
    if ctx.json:
        ctx.emit({"agents": rows})
        return 0
    for r in rows:
        if r.get("problem"):
            state = f"unreadable: {r['problem']}"
        elif r["complete"]:
            state = "installed"
        elif r["installed"]:
            state = f"partly installed (missing {', '.join(r['missing'])})"
        else:
            state = "not installed" + ("" if r["exists"] else " (no file)")
        ctx.print(f"{r['agent']:<12} {r['scope']:<8} {state:<24} {r['path']}")
    return 0
