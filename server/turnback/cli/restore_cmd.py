"""`turnback restore PATH… (--turn K | --before-prompt K)`, and the boundary picker both it and
`turnback rewind` offer on a terminal when no boundary is given.

Restore drives the live session like `rewind`: prepare, show the plan, commit with `--yes` or an
interactive yes. Without a boundary flag and without a terminal it says which flag to give (exit 2).
"""

from __future__ import annotations

import os

from .confirm import confirmed, renderer
from .exits import EXIT_ERROR, EXIT_OK, Unavailable
from .render import Renderer, boundary_words, clip, when

GLOB_CHARS = frozenset("*?[")


class NeedsBoundary(Unavailable):
    """No boundary flag, and no terminal to pick one on (exit status 2)."""

    code = "needs-boundary"


def add_parsers(sub, add) -> None:
    p = add("restore", "put files back as they were at a turn; every turn and the conversation stay "
            "(Redo brings the files back)")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="files, folders or quoted globs ('src/**/*.py'); folders and globs cover the "
                        "files they held at that turn")
    b = p.add_mutually_exclusive_group()
    b.add_argument("--turn", type=int, metavar="K", help="as turn K left them, when it ended")
    b.add_argument("--before-prompt", type=int, metavar="K",
                   help="as they were when prompt K was sent (edits saved before it included)")
    p.add_argument("--yes", action="store_true", help="commit without asking")
    p.add_argument("--keep-user-edits", action="store_true",
                   help="leave the files listed as your own edits as they are now")


def cli_spec(wb, path: str) -> str:
    """A PATH from the command line (relative to the current directory) as the protocol's path: a
    file URI, or a glob relative to the workspace. Outside the workspace is refused."""
    root = str(wb.ws.root)
    absolute = os.path.abspath(path)
    if GLOB_CHARS & set(path):
        rel = os.path.relpath(absolute, root)
        if rel == ".." or rel.startswith("../"):
            wb.ws.to_rel(absolute)  # raises outside-workspace, naming the path and the workspace
        return rel
    real = os.path.realpath(absolute)
    if real == root or os.path.normpath(absolute) == os.path.normpath(root):
        return "."
    wb.ws.to_rel(absolute)  # raises outside-workspace
    from pathlib import Path

    return Path(absolute).as_uri()


def turn_rows(log: dict, *, restore: bool, specs=()) -> list:
    """The picker's rows, newest first: for a rewind, "before prompt k" of every turn; for a restore,
    "the end of turn k" of every turn and the start of the session."""
    from .picker import Row

    rows = []
    for t in reversed(log.get("turns", [])):
        files = [f.get("path") or "" for f in t.get("files", [])]
        gaps = len(t.get("gaps", []))
        shown = ", ".join(files[:3]) + ("…" if len(files) > 3 else "")
        stamp = when(t.get("ended") or t.get("started"))
        words = (f"{len(files)} file(s)" + (f": {shown}" if files else "")
                 + (f" · {gaps} gap(s)" if gaps else ""))
        prompt = clip(t.get("prompt"), 50)
        n = t["turn"]
        if restore:
            rows.append(Row({"kind": "afterResponse", "turn": n},
                            f"end of turn {n:<3} {stamp}  \u201c{prompt}\u201d  {words}"))
        else:
            rows.append(Row({"kind": "beforePrompt", "turn": n},
                            f"before prompt {n:<3} {stamp}  \u201c{prompt}\u201d  {words}"))
    if restore and rows:
        rows.append(Row({"kind": "beforePrompt", "turn": 1}, "before prompt 1: the start of the session"))
    return rows


def pick_boundary(ctx, wb, *, restore: bool, mode: str | None = None, flags: str = ""):
    """(boundary, mode) chosen on the terminal; NeedsBoundary without one; None when cancelled."""
    from .picker import Cancelled, choose

    if ctx.json or not ctx.interactive():
        raise NeedsBoundary(f"no boundary given: run it on a terminal to pick a turn, or give {flags}")
    log = wb.turns.log({})
    rows = turn_rows(log, restore=restore)
    if not rows:
        raise NeedsBoundary("this session has no turns yet: there is nothing to go back to")
    title = ("Restore to how they were at which point?" if restore
             else "Rewind to before which prompt? (that prompt and everything after it go)")
    try:
        return choose(rows, title, mode=mode, stdin=ctx.stdin, stdout=ctx.stdout)
    except Cancelled:
        return None


def restore_lines(r: Renderer, c: dict, *, keep_user_edits: bool) -> list[str]:
    named = ", ".join(r.path(p) if p.startswith("file:") else p for p in c.get("paths", []))
    out = [f"Restore {named} to how they were {boundary_words(c['boundary'])}:"
           f" every turn ({c['keep']['turnCount']}) and the conversation stay."]
    planned = [f for f in c.get("files", [])]
    out.extend(r.files(planned))
    out.extend(r.user_edits(planned, keep_user_edits))
    for u in c.get("createdSince", []):
        out.append(f"  left as it is (created since): {r.path(u)}")
    for g in c.get("gaps", []):
        out.append(f"  cannot restore: {r.gap(g)}")
    if c.get("summary"):
        out.append("In short: " + c["summary"])
    return out


def cmd_restore(ctx) -> int:
    a = ctx.args
    wb = ctx.open(must_exist=True)
    try:
        specs = [cli_spec(wb, p) for p in a.paths]
        if a.turn is not None:
            boundary = {"kind": "afterResponse", "turn": a.turn}
        elif a.before_prompt is not None:
            boundary = {"kind": "beforePrompt", "turn": a.before_prompt}
        else:
            chosen = pick_boundary(ctx, wb, restore=True, flags="--turn K or --before-prompt K")
            if chosen is None:
                ctx.print("Cancelled: nothing changed.")
                return EXIT_OK
            boundary = chosen[0]
        params = {"paths": specs, "boundary": boundary}
        candidate = wb.restore.prepare(params)
        r = renderer(wb)
        keep = bool(a.keep_user_edits)
        if not confirmed(ctx, wb, candidate, restore_lines(r, candidate, keep_user_edits=keep),
                         "restore", candidate["summary"]):
            return EXIT_OK
        result = wb.restore.commit({**params, "planHash": candidate["planHash"],
                                    "keepUserEdits": keep})
    finally:
        wb.close()
    if ctx.json:
        ctx.emit({"candidate": candidate, "commit": result})
    else:
        ctx.print(*r.commit(result, "restore"))
        if result.get("status") == "committed":
            ctx.print("Redo brings the files back: `turnback redo` lists the state before the restore.")
    return EXIT_OK if result.get("status") == "committed" else EXIT_ERROR


COMMANDS = {"restore": cmd_restore}
