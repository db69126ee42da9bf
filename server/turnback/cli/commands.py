"""One function per command. Each opens the workbench, calls it, renders, closes it in a finally."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidParams, NoTurnRunning, NotFound, UnknownTurn
from .confirm import confirmed, declined, decide, renderer
from .diff_cmd import COMMANDS as DIFF_COMMANDS
from .exits import EXIT_ERROR, EXIT_OK, Unavailable
from .fork_cmd import COMMANDS as FORK_COMMANDS
from .guard_cmd import COMMANDS as GUARD_COMMANDS
from .progress import shown
from .render import step_index
from .restore_cmd import COMMANDS as RESTORE_COMMANDS
from .restore_cmd import pick_boundary
from .takeover import cmd_takeover
from .upkeep_cmd import COMMANDS as UPKEEP_COMMANDS
from .upkeep_cmd import ProgressBar  # noqa: F401  (tests and callers name it here)


def dispatch(ctx) -> int:
    cmd = ctx.args.command
    if cmd == "turn":
        return TURN[ctx.args.turn_command](ctx)
    return COMMANDS[cmd](ctx)


def _uri(ctx, wb, path: str) -> str:
    """A PATH from the command line (relative to the current directory) as a file URI; a path
    outside the workspace is refused with a clear message."""
    absolute = os.path.abspath(path)
    wb.ws.to_rel(absolute)  # raises OutsideWorkspace naming the path and the workspace
    return Path(absolute).as_uri()


def _running(wb, given: int | None) -> int:
    if given is not None:
        return given
    running = wb.state.running
    if running is None:
        raise NoTurnRunning("no turn is running; give --turn N or begin one with `turnback turn begin`")
    return running.n


# -- serve and bench: other parts of turnback, imported only when asked for -----------------------
def cmd_serve(ctx) -> int:
    if getattr(ctx.args, "background", False):
        from .daemon import serve_background

        return serve_background(ctx)
    for flag in ("socket", "pipe"):
        if getattr(ctx.args, flag, None):
            raise Unavailable(f"turnback serve --{flag} is not supported: the sidecar speaks on "
                              "stdio (--stdio, the default)")
    try:
        from ..lsp.stdio import serve
    except ImportError as exc:
        if (exc.name or "").startswith("turnback.lsp"):
            raise Unavailable("the language server (turnback.lsp.server) is not part of this build yet")
        raise Unavailable(f"the language server cannot start: {exc}")
    serve()
    return 0


def cmd_bench(ctx) -> int:
    run = getattr(ctx.args, "bench_runner", None)
    if run is None:  # the benchmarks are a floor above: only the `turnback` command hands them down
        raise Unavailable("the benchmarks run through the `turnback` command (turnback.command), "
                          "not through this entry point")
    argv = list(ctx.args.rest or [])
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if ctx.json and "--json" not in argv:
        argv.append("--json")
    return int(run(argv) or 0)


def cmd_daemon(ctx) -> int:
    from .daemon import cmd_daemon as run

    return run(ctx)


def cmd_demo(ctx) -> int:
    if getattr(ctx.args, "agent", None):
        from .demo_agent import run_agent_demo

        return run_agent_demo(ctx, ctx.args.agent)
    from .demo import run_demo

    return run_demo(ctx)


# -- turns --------------------------------------------------------------------------------------
def cmd_turn_begin(ctx) -> int:
    a = ctx.args
    kind = a.kind or ("directive" if a.directive else "chat")
    params = {"kind": kind, "prompt": a.prompt}
    if a.directive:
        params["directiveId"] = a.directive
    wb = ctx.open()
    try:
        ctx.require_owner(wb)
        result = wb.run(shown(wb.turns.begin_job(params)))  # a first checkpoint can take minutes
    finally:
        wb.close()
    ctx.emit(result) if ctx.json else ctx.print(str(result["turn"]))
    return EXIT_OK


def cmd_turn_capture(ctx) -> int:
    wb = ctx.open()
    try:
        ctx.require_owner(wb)
        uris = [_uri(ctx, wb, p) for p in ctx.args.paths]
        result = wb.turns.capture({"uris": uris, "phase": ctx.args.phase})
        r = renderer(wb)
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(result)
        return EXIT_OK
    ctx.print(*r.captured(result))
    return EXIT_OK


def cmd_turn_step(ctx) -> int:
    a = ctx.args
    if a.inverse_scope is not None and a.inverse_kind is None:
        raise InvalidParams("--inverse-scope needs --inverse-kind")
    wb = ctx.open()
    try:
        ctx.require_owner(wb)
        params = {"turn": _running(wb, a.turn), "kind": a.kind}
        if a.scope is not None:
            params["scope"] = a.scope
        if a.summary is not None:
            params["summary"] = a.summary
        if a.paths:
            params["uris"] = [_uri(ctx, wb, p) for p in a.paths]
        if a.inverse_kind is not None:
            params["inverse"] = {"kind": a.inverse_kind, "scope": a.inverse_scope or "unknown"}
        if a.held:
            params["held"] = True
        if a.compensates:
            params["compensates"] = a.compensates
        if a.result is not None:
            params["result"] = a.result
        result = wb.turns.step(params)
    finally:
        wb.close()
    ctx.emit(result) if ctx.json else ctx.print(result["stepId"])
    return EXIT_OK


def cmd_turn_respond(ctx) -> int:
    wb = ctx.open()
    try:
        ctx.require_owner(wb)
        result = wb.turns.respond({"turn": _running(wb, ctx.args.turn), "text": ctx.args.text,
                                   "final": ctx.args.final})
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(result)
    return EXIT_OK


def cmd_turn_settle(ctx) -> int:
    wb = ctx.open()
    try:
        ctx.require_owner(wb)
        n = _running(wb, ctx.args.turn)
        status = "cancelled" if ctx.args.cancelled else "settled"
        result = wb.run(wb.turns.settle_job({"turn": n, "status": status}))
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(result)
    else:
        head = result.get("headSeq")
        ctx.print(f"turn {n} {status}" + (f"; published head {head}" if head is not None else ""))
    return EXIT_OK


# -- reporting ----------------------------------------------------------------------------------
def cmd_log(ctx) -> int:
    wb = ctx.open(own=False, must_exist=True)
    try:
        log = wb.turns.log({})
        info = wb.info()
        r = renderer(wb)
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(log)
        return EXIT_OK
    ctx.print(*r.log(log, info))
    if info.get("liveGaps"):
        ctx.print(f"live gaps: {info['liveGaps']} (see `turnback info`)")
    return EXIT_OK


def cmd_info(ctx) -> int:
    wb = ctx.open(own=False, must_exist=True)
    try:
        info = wb.info()
        live = wb.live_gaps()
        r = renderer(wb)
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(info)
        return EXIT_OK
    ctx.print(*r.info(info))
    for g in live:
        ctx.print(f"  gap: {r.gap(g)}")
    return EXIT_OK


# -- rewind and redo ----------------------------------------------------------------------------
def boundary_of(wb, a) -> dict:
    if a.after_response is not None:
        return {"kind": "afterResponse", "turn": a.after_response}
    if a.before_prompt is not None:
        if a.turn is not None:
            raise InvalidParams("--turn goes with --before-directive only")
        return {"kind": "beforePrompt", "turn": a.before_prompt}
    did = a.before_directive
    turn = a.turn
    if turn is None:
        attempts = [t.n for t in wb.state.turns if t.directive_id == did]
        if not attempts:
            if did not in wb.state.directives:
                raise NotFound(f"no directive {did!r} in this session", data={"directiveId": did})
            raise UnknownTurn(f"directive {did} has no attempt turn to rewind before",
                              data={"directiveId": did})
        turn = attempts[-1]
    return {"kind": "beforeDirectiveAttempt", "directiveId": did, "turn": turn}


def cmd_rewind(ctx) -> int:
    wb = ctx.open(must_exist=True)
    try:
        mode = ctx.args.mode or "all"
        if (ctx.args.after_response, ctx.args.before_prompt, ctx.args.before_directive) == (None,) * 3:
            chosen = pick_boundary(ctx, wb, restore=False, mode=mode, flags=(
                "--after-response N, --before-prompt N or --before-directive ID"))
            if chosen is None:
                ctx.print("Cancelled: nothing changed.")
                return EXIT_OK
            boundary, mode = chosen
        else:
            boundary = boundary_of(wb, ctx.args)
        candidate = wb.rewind.prepare({"boundary": boundary, "mode": mode})
        r = renderer(wb)
        keep = bool(ctx.args.keep_user_edits)
        markers = bool(getattr(ctx.args, "conflict_markers", False))
        if markers and not keep:
            raise InvalidParams("--conflict-markers goes with --keep-user-edits")
        noop = candidate["summary"] if mode == "files" else \
            f"Nothing to rewind: turn {candidate['keep']['turnCount']} is the current state."
        # The plan in words needs the session's log and its directives: two more requests through
        # an owner, made only when the words are printed (--json prints the candidate itself).
        lines = [] if ctx.json else r.candidate(candidate, step_index(wb.turns.log({})),
                                                keep_user_edits=keep, conflict_markers=markers,
                                                directives=directive_names(wb))
        if not confirmed(ctx, wb, candidate, lines, "rewind", noop):
            return EXIT_OK
        result = wb.rewind.commit({"boundary": boundary, "planHash": candidate["planHash"],
                                   "keepUserEdits": keep, "mode": mode,
                                   **({"conflictMarkers": True} if markers else {})})
    finally:
        wb.close()
    if ctx.json:
        ctx.emit({"candidate": candidate, "commit": result})
    else:
        ctx.print(*r.commit(result, "rewind"))
        _print_resume(ctx, result)
    return EXIT_OK if result.get("status") == "committed" else EXIT_ERROR


def directive_names(wb) -> dict[str, str]:
    """Directive id -> its request, to name directives by their text (local or through an owner)."""
    out = {}
    for did, d in wb.state.directives.items():
        request = d.get("request") if isinstance(d, dict) else getattr(d, "request", "")
        out[did] = (request or "").strip().split("\n")[0]
    return out


def _print_resume(ctx, result: dict) -> None:
    resume = result.get("agentResume") or {}
    if resume.get("command") or resume.get("note"):  # agent hooks: docs/agents/claude-code.md
        ctx.print(f"Resume Claude Code at this point: {resume.get('command') or resume['note']}")


def cmd_redo(ctx) -> int:
    wb = ctx.open(must_exist=True)
    try:
        r = renderer(wb)
        if ctx.args.head is None:
            listing = wb.redo.list({"all": bool(ctx.args.all)})
            if ctx.json:
                ctx.emit(listing)
            else:
                ctx.print(*r.redo_list(listing))
            return EXIT_OK if listing.get("groups") or wb.store.kind == "heads" else EXIT_ERROR
        # --head H: the plan alone (the listing, every left-behind state compared, is not shown)
        plan = wb.redo.prepare({"headSeq": ctx.args.head})
        keep = bool(ctx.args.keep_user_edits)
        if not ctx.json:
            ctx.print(*r.redo_plan(plan, keep_user_edits=keep))
        answer = decide(ctx, ctx.args.yes, "Redo?")
        if answer != "yes":
            if ctx.json:
                ctx.emit({"plan": plan, "commit": None})
            else:
                declined(ctx, answer, "redo", "--yes")
            return EXIT_OK
        ctx.require_owner(wb)
        result = wb.redo.commit({"headSeq": ctx.args.head, "planHash": plan["planHash"],
                                 "keepUserEdits": keep})
    finally:
        wb.close()
    if ctx.json:
        ctx.emit({"plan": plan, "commit": result})
    else:
        ctx.print(*r.commit(result, "redo"))
        _print_resume(ctx, result)
    return EXIT_OK if result.get("status") == "committed" else EXIT_ERROR


def cmd_recovery(ctx) -> int:
    a = ctx.args
    if a.resolve is None and (a.retry or a.dismiss):
        raise InvalidParams("--retry and --dismiss go with --resolve ID")
    if a.resolve is not None and not (a.retry or a.dismiss):
        raise InvalidParams("--resolve ID needs --retry or --dismiss")
    wb = ctx.open(own=a.resolve is not None, must_exist=True)
    try:
        r = renderer(wb)
        if a.resolve is None:
            result = wb.recovery.list({})
        else:
            ctx.require_owner(wb)
            result = wb.recovery.resolve({"id": a.resolve, "action": "retry" if a.retry else "dismiss"})
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(result)
        return EXIT_OK
    if "status" in result:
        ctx.print(f"recovery {a.resolve}: {result['status']}")
    ctx.print(*r.pending(result.get("pending")))
    if not result["recovery"]:
        ctx.print("no recovery records: every rewind, Redo and fork put everything back"
                  + (" (a transaction is pending, above)" if result.get("pending") else ""))
    for rec in result["recovery"]:
        ctx.print(*r.recovery_record(rec))
    return EXIT_OK if result.get("status") != "failed" else EXIT_ERROR


COMMANDS = {
    "serve": cmd_serve, "demo": cmd_demo, "log": cmd_log, "info": cmd_info, "rewind": cmd_rewind,
    "redo": cmd_redo, "recovery": cmd_recovery, "bench": cmd_bench,
    "daemon": cmd_daemon, "takeover": cmd_takeover,
    **FORK_COMMANDS, **DIFF_COMMANDS, **RESTORE_COMMANDS, **GUARD_COMMANDS,
    **UPKEEP_COMMANDS,
}
TURN = {"begin": cmd_turn_begin, "capture": cmd_turn_capture, "step": cmd_turn_step,
        "respond": cmd_turn_respond, "settle": cmd_turn_settle}
