"""`turnback hook AGENT` (what an agent runs on each event) and `turnback hooks install|uninstall|status`.

`hook` is the agent's fast path: it imports nothing of the workbench until it knows it must open the
store itself (see hooks/runtime.py). `hooks` edits the agents' settings files (hooks/install.py).
"""

from __future__ import annotations

AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor", "opencode")


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
                           help="the turnback the agent runs, `hook AGENT` appended (default: the "
                                "absolute path of this turnback; `--command turnback` trusts the "
                                "agent's PATH)")
            p.add_argument("--trust", action="store_true",
                           help="codex: also record, through Codex itself, the trust it needs to "
                                "run them (the project as trusted, turnback's hooks as reviewed)")
    add("status", "which agents have turnback hooks installed, in which file", parent=hsub)


def run(args) -> int:
    if args.command == "hook":
        from ..hooks.fallback import parsed
        from ..hooks.fast import run as run_hook

        return run_hook(args.agent, event=args.event, slower=parsed)
    from .context import Context

    ctx = Context(args)
    return {"install": _install, "uninstall": _uninstall, "status": _status}[args.hooks_command](ctx)


def _install(ctx) -> int:
    from ..errors import InvalidParams
    from ..hooks.codextrust import codex_program
    from ..hooks.install import install

    a = ctx.args
    scope = a.scope or "project"
    if a.trust and a.agent != "codex":
        raise InvalidParams(f"--trust is for codex only; {a.agent} runs the hooks it finds")
    if a.trust and not codex_program():
        raise InvalidParams("--trust needs Codex: no `codex` on PATH (or set TURNBACK_CODEX to "
                            "it); nothing was installed")
    result = install(a.agent, scope, ctx.root, command=a.hook_command)
    if scope == "project":
        _ensure_store(ctx)
    if a.agent == "codex":
        result["codex"] = _codex_after_install(ctx, scope, a.trust)
    if a.agent == "gemini":
        from ..hooks.geminitrust import check

        result["gemini"] = check(ctx.root)
    if ctx.json:
        ctx.emit(result)
        return 0
    if result["alreadyInstalled"]:
        ctx.print(f"{a.agent}: already installed in {result['path']}; nothing changed")
    else:
        done = [f"added {', '.join(result['added'])}"] if result["added"] else []
        done += [f"updated: {', '.join(result['updated'])}"] if result["updated"] else []
        ctx.print(f"{a.agent}: installed in {result['path']} ({'; '.join(done)})",
                  f"  the agent runs: {result['command']}")
    _print_codex(ctx, result.get("codex"))
    _print_blocked(ctx, "Gemini", result.get("gemini"), "  ")
    return 0


def _print_blocked(ctx, agent: str, state: dict | None, indent: str) -> None:
    if state and state.get("blocked"):
        ctx.print(f"{indent}installed but {agent} will not run it: {state['blocked']}")
        if state.get("step"):
            ctx.print(f"{indent}to fix: {state['step']}")


def _codex_after_install(ctx, scope: str, trust: bool) -> dict:
    from ..hooks import install as inst
    from ..hooks.installstatus import codex_state

    if trust:
        return inst.codex_trust(ctx.root, scope)
    return codex_state(ctx.root, inst.settings_path("codex", scope, ctx.root), scope,
                       inst.EVENTS["codex"])


def codextrust_config() -> str:
    from ..hooks.codextrust import codex_home

    return str(codex_home() / "config.toml")


def _print_codex(ctx, state: dict | None) -> None:
    if not state:
        return
    if state.get("trusted") or state.get("projectTrustWritten"):
        ctx.print(f"  codex: recorded through codex itself: {state.get('trusted', 0)} of turnback's "
                  "hooks reviewed" + (", the project trusted" if state.get("projectTrustWritten")
                                      else "") + f" ({codextrust_config()})")
    if state.get("blocked"):
        ctx.print(f"  installed but Codex will not run it: {state['blocked']}")
        if state.get("step"):
            ctx.print(f"  to fix: {state['step']}")
    elif not state.get("checkedWith"):
        ctx.print("  codex: trust recorded in config.toml, not verified (no codex to ask)")


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
    from ..hooks.installstatus import status

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
        if r.get("commandMissing"):
            ctx.print(f"{'':<22}installed but its command cannot run: {r['commandMissing']}; "
                      f"run `turnback hooks install {r['agent']}"
                      f"{' --user' if r['scope'] == 'user' else ''}` again")
        if r.get("edited"):
            ctx.print(f"{'':<22}{r['edited']}")
        if r.get("timeoutClamped"):
            ctx.print(f"{'':<22}{', '.join(r['timeoutClamped'])}: a timeout {r['agent']} clamps and reports as "
                      f"an error on every run; run `turnback hooks install {r['agent']}` again")
        _print_blocked(ctx, "Gemini", r.get("gemini"), " " * 22)
        codex = r.get("codex") or {}
        if codex.get("blocked"):
            ctx.print(f"{'':<22}installed but Codex will not run it: {codex['blocked']}")
            if codex.get("step"):
                ctx.print(f"{'':<22}to fix: {codex['step']}")
        elif codex and not codex.get("checkedWith"):
            ctx.print(f"{'':<22}Codex's trust is recorded in config.toml; not verified (no codex "
                      "on PATH to ask)")
    return 0
