"""`turnback fork`, `turnback branch` and `turnback compare`.

`fork` drives the live session like `rewind` does (prepare, show, confirm with --yes or an interactive
yes). `branch` and `compare` read the store alone: they take no ownership, need no server, and write
nothing, so they work beside a running sidecar and on a copy of a store.
"""

from __future__ import annotations

import os

from ..errors import InvalidParams
from .confirm import decide, renderer
from .exits import EXIT_ERROR, EXIT_OK
from .render import Renderer, clip, step_index


def add_parsers(sub, add) -> None:
    p = add("fork", "fork the session at turn N: the branch continues from N, this session freezes "
            "(or, with --worktree, the branch lives in a separate folder and this one stays live)")
    p.add_argument("--turn", type=int, required=True, metavar="N", help="keep turns 1..N in the branch")
    p.add_argument("--worktree", metavar="PATH",
                   help="a new or empty folder outside the workspace for the branch")
    p.add_argument("--git", action="store_true",
                   help="with --worktree in a git repository: make it a `git worktree`")
    p.add_argument("--keep-user-edits", action="store_true",
                   help="keep your own edits (made by no later turn): each is merged onto the file "
                        "put back (a conflict leaves that file as it is now)")
    p.add_argument("--conflict-markers", action="store_true",
                   help="with --keep-user-edits: write a conflicting file with conflict markers")
    p.add_argument("--yes", action="store_true", help="confirm without asking")
    add("branch", "the lineage of the store's sessions: parents, fork points, frozen marks, "
        "worktree forks (from the store alone)")
    p = add("compare", "two sessions side by side: shared prefix, diverging turns, differing files, "
            "and each tail's effect partition (from the store alone)")
    p.add_argument("a", metavar="A", help="a session id (or a unique prefix, or `current`)")
    p.add_argument("b", metavar="B")


def cmd_fork(ctx) -> int:
    wb = ctx.open(must_exist=True)
    try:
        r = renderer(wb)

        def confirm(params):
            ctx.require_owner(wb)
            return wb.fork.confirm(params)

        return fork_flow(ctx, lambda yes: decide(ctx, yes, "Fork?") in (True, "yes"), r,
                         wb.fork.prepare, confirm, lambda: wb.turns.log({}))
    finally:
        wb.close()


def remote_fork(remote) -> int:
    """`turnback fork` through a live owner (the same flow, as requests on its socket)."""
    return fork_flow(remote, lambda yes: remote.decide(yes, "Fork?"), remote.renderer(),
                     lambda p: remote.call("turnback/fork/prepare", p),
                     lambda p: remote.call("turnback/fork/confirm", p),
                     lambda: remote.call("turnback/session/log"))


def fork_flow(io, decide, r: Renderer, prepare, confirm, log) -> int:
    a = io.args
    if a.git and not a.worktree:  # a flag that means nothing alone is refused, not ignored
        raise InvalidParams("--git makes the branch's folder a git worktree: it goes with "
                            "--worktree PATH (without it the fork is made in place)",
                            data={"field": "git"})
    keep = bool(getattr(a, "keep_user_edits", False))
    markers = bool(getattr(a, "conflict_markers", False))
    if markers and not keep:
        raise InvalidParams("--conflict-markers goes with --keep-user-edits",
                            data={"field": "conflictMarkers"})
    report = prepare({"turn": a.turn})
    if not io.json:
        io.print(*report_lines(r, report, step_index(log()), a.worktree, keep, markers))
    if report.get("refusal"):
        if io.json:
            io.emit({"report": report, "confirm": None})
        return EXIT_ERROR
    if not decide(a.yes):
        if io.json:
            io.emit({"report": report, "confirm": None})
        else:
            io.print("Nothing changed. Run again with --yes to fork.")
        return EXIT_OK
    params = {"turn": a.turn, "planHash": report["hash"]}
    if a.worktree:
        params.update(worktree=os.path.abspath(a.worktree), git=bool(a.git))
    if keep:
        params["keepUserEdits"] = True
    if markers:
        params["conflictMarkers"] = True
    result = confirm(params)
    if io.json:
        io.emit({"report": report, "confirm": result})
    else:
        io.print(*confirm_lines(result))
        io.print(*r.kept(result))
    return EXIT_OK if result.get("status") == "forked" else EXIT_ERROR


def report_lines(r: Renderer, report: dict, steps: dict, worktree: str | None,
                 keep: bool = False, markers: bool = False) -> list[str]:
    where = (f"a new folder {worktree}; this session stays live" if worktree
             else "this workspace; this session is frozen")
    out = r.settled_first(report) + \
        [f"Fork at turn {report['turn']} of session {report['sessionId'][:12]} into {where}."]
    if worktree:
        out.append("The workspace is left as it is; the folder gets every captured file as it was "
                   f"at the end of turn {report['turn']}.")
    else:
        out.extend(r.fork_plan(report, steps, keep_user_edits=keep, conflict_markers=markers))
    if report["droppedSends"]:
        out.append("Held outbound sends of this session that the branch drops: "
                   + ", ".join(report["droppedSends"]))
    out.append("The branch does not preserve:")
    out.extend(f"  - {x}" for x in report["notPreserved"])
    if report.get("refusal"):
        ref = report["refusal"]
        out.append(f"Refused [{ref['code']}]: {ref['message']}.")
    return out


def confirm_lines(result: dict) -> list[str]:
    status = result.get("status")
    if status == "forked":
        b = result["branch"]
        line = f"Forked: branch {b['sessionId'][:12]} (parent {b['parentId'][:12]}"
        if b.get("worktree"):
            return [line + f") in {b['worktree']} ({b.get('mode')}); this session stays live."]
        out = [line + f" is frozen), {b['turnCount']} turn(s) kept."]
        resume = result.get("agentResume") or {}
        if resume.get("command") or resume.get("note"):  # agent hooks: docs/agents/claude-code.md
            out.append(f"Resume Claude Code in the branch: {resume.get('command') or resume['note']}")
        return out
    if status == "stale":
        return ["Stale: the session changed since the report was made; nothing was changed. "
                "Run the command again to see the new report."]
    if status == "refused":
        ref = result.get("refusal", {})
        return [f"Refused [{ref.get('code')}]: {ref.get('message')}. Nothing was changed."]
    lines = [f"Rolled back: {result.get('reason', '')}. Nothing was changed."]
    for rec in result.get("recovery", []):
        lines.append(f"  recovery record {rec['id']}: {', '.join(rec['paths'])}")
    return lines


def _reader_store(ctx):
    from ..store.layout import Store

    return Store.open(ctx.store_path, kind=None, create=False)


def cmd_branch(ctx) -> int:
    from ..travel.offline import lineage

    view = lineage(_reader_store(ctx))
    if ctx.json:
        ctx.emit(view)
    else:
        ctx.print(*tree_lines(view))
    return EXIT_OK


def tree_lines(view: dict) -> list[str]:
    by_id = {s["sessionId"]: s for s in view["sessions"]}
    children: dict[str, list[dict]] = {}
    for e in view["edges"]:
        children.setdefault(e["parentId"], []).append(e)
    linked = {e["sessionId"] for e in view["edges"] if e["parentId"] in by_id}
    out = []

    def label(s: dict) -> str:
        marks = [f"{s['turnCount']} turn(s)"]
        if s["current"]:
            marks.append("current")
        if s["frozen"]:
            marks.append("frozen")
        if s.get("worktree"):
            marks.append(f"worktree {s['worktree']}")
        return f"{s['sessionId'][:12]} ({', '.join(marks)})"

    def walk(sid: str, depth: int) -> None:
        for e in children.get(sid, []):
            child = by_id.get(e["sessionId"])
            if child is None:
                continue
            how = {"fork": f"fork at turn {e['forkTurn']}",
                   "worktree": f"worktree fork at turn {e['forkTurn']}"}.get(e["kind"], "started from")
            out.append("  " * depth + f"\u2514\u2500 {how} \u2192 {label(child)}")
            walk(child["sessionId"], depth + 1)

    for s in view["sessions"]:
        if s["sessionId"] not in linked:
            out.append(label(s))
            for e in view["edges"]:
                if e["sessionId"] == s["sessionId"] and e["kind"] == "from-another-store":
                    out.append(f"  \u2191 forked at turn {e['forkTurn']} from {e['parentId'][:12]} "
                               f"in {e['parentStore']}")
            walk(s["sessionId"], 1)
    for o in view["orphans"]:
        out.append(f"orphan {o['sessionId'][:12]}: {o['reason']}")
    for f in view["interrupted"]:
        out.append(f"interrupted fork {f['branchId'][:12]} of {str(f['parentId'])[:12]} at turn "
                   f"{f['turn']}: {f['phase']}")
    return out


def cmd_compare(ctx) -> int:
    from ..travel.offline import compare

    result = compare(_reader_store(ctx), ctx.args.a, ctx.args.b)
    if ctx.json:
        ctx.emit(result)
    else:
        ctx.print(*compare_lines(result))
    return EXIT_OK


def compare_lines(c: dict) -> list[str]:
    a, b = c["a"], c["b"]
    if c.get("sameSession"):
        return [f"A and B are one session ({c['sessionId'][:12]}, {a['turnCount']} turn(s)): "
                "nothing differs between them. Name two sessions (`turnback branch` lists them)."]
    out = [f"A {a['sessionId'][:12]} ({a['turnCount']} turn(s)) and B {b['sessionId'][:12]} "
           f"({b['turnCount']} turn(s)) share {c['sharedTurns']} turn(s), compared by content."]
    for name, side in (("A", a), ("B", b)):
        out.append(f"{name} after the shared turns:")
        if not side["turns"]:
            out.append("  nothing")
        for t in side["turns"]:
            out.append(f"  turn {t['turn']}: \u201c{clip(t['prompt'], 60)}\u201d, "
                       f"{len(t['steps'])} step(s), {len(t['files'])} file(s)")
        shown = {k: v for k, v in side["effects"].items() if v}
        out.append("  partition of the tail: " + (", ".join(f"{k} {len(v)}" for k, v in shown.items())
                                                 or "no steps"))
    if c["files"]:
        out.append("Files whose final images differ:")
        for f in c["files"]:
            out.append(f"  {f['path']}: A {f['a'] or '(never seen)'}  B {f['b'] or '(never seen)'}")
    else:
        out.append("Every file has the same final image in both.")
    live = c.get("liveReport")
    if live:
        verdict = "matches" if live["agrees"] else "DOES NOT match"
        turn = f" at turn {live['forkTurn']}" if live.get("forkTurn") is not None else ""
        out.append(f"The live fork{turn}'s recorded partition {verdict} the one computed here.")
    return out


COMMANDS = {"fork": cmd_fork, "branch": cmd_branch, "compare": cmd_compare}
