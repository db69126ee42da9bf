"""`turnback diff --turn K [PATH]` and `turnback diff --since K [PATH]`: what a turn changed, or every
change from turn K on (each turn's, and your own edits between turns, each as what it is), as
unified diffs headed in words. Reads only; through a live owner when one answers.
"""

from __future__ import annotations

import os
from pathlib import Path

from .exits import EXIT_OK

STATUS_WORDS = {"created": "created", "deleted": "deleted", "modified": "changed",
                "mode": "permission bits changed", "transient": "created and removed again",
                "unknown-before": "changed (turnback never saw it before)",
                "gap": "not captured"}



def add_parsers(sub, add) -> None:
    p = add("diff", "what a turn changed (--turn K), or every change from turn K on (--since K), "
            "your own edits between turns included, as unified diffs")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--turn", type=int, metavar="K", help="the changes turn K made")
    which.add_argument("--since", type=int, metavar="K",
                       help="every change from the start of turn K on, in the order it happened")
    p.add_argument("path", nargs="?", metavar="PATH", help="only this file, or the files of this folder")
    p.add_argument("--session", metavar="ID", help="another session of the store (a frozen parent)")
    p.add_argument("--stat", action="store_true", help="the list of files only, without the diffs")


def cmd_diff(ctx) -> int:
    a = ctx.args
    wb = ctx.open(own=False, must_exist=True)
    try:
        params: dict = {"turn": a.turn} if a.turn is not None else {"since": a.since}
        if a.path:
            absolute = os.path.abspath(a.path)
            wb.ws.to_rel(absolute)  # outside the workspace: refused, naming both
            params["uri"] = Path(absolute).as_uri()
        if a.session:
            params["sessionId"] = a.session
        if a.stat:
            params["text"] = False
        result = wb.run(wb.diffs.diff_job(params))
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(result)
        return EXIT_OK
    ctx.print(*render(result, stat=a.stat))
    return EXIT_OK


def render(result: dict, *, stat: bool = False) -> list[str]:
    """The diff as a person reads it: a heading per turn and per stretch of your own edits, a line
    per file in words, then its unified diff."""
    changes = result.get("changes", [])
    rng = result.get("range", {})
    if not changes:
        what = (f"turn {rng['turn']} changed no file" if "turn" in rng
                else f"no file changed from turn {rng.get('since')} on")
        return [what + (f" under {result['path']}" if result.get("path") else "") + "."]
    out: list[str] = []
    heading = None
    for c in changes:
        now = heading_of(c)
        if now != heading:
            if out:
                out.append("")
            out.append(now)
            heading = now
        out.append("  " + file_line(c))
        if not stat and c.get("diff"):
            out.extend(c["diff"].rstrip("\n").split("\n"))
    return out


def heading_of(c: dict) -> str:
    if c["source"] == "turn":
        prompt = " ".join((c.get("prompt") or "").split())
        prompt = prompt if len(prompt) <= 70 else prompt[:69] + "…"
        return f"Turn {c['turn']} \u201c{prompt}\u201d:"
    after = c.get("afterTurn") or 0
    return (f"Your own edits after turn {after}, before turn {after + 1}:" if after
            else "Your own edits before turn 1:")


def file_line(c: dict) -> str:
    from ..diffs.changes import BY_WORDS  # here: `turnback` parses every command's options first

    words = str(STATUS_WORDS.get(c.get("status") or "", c.get("status")))
    if c["source"] == "user" and c.get("by") in BY_WORDS:
        words += f" ({BY_WORDS[c['by']]})"
    if c.get("status") == "gap":
        gap = c.get("gap") or {}
        words += f": {gap.get('reason')}" + (f", {gap['detail']}" if gap.get("detail") else "")
    elif c.get("binary"):
        words += ", a binary file (no line diff)"
    elif c.get("tooLargeToDiff"):
        words += ", too large to diff here (open it in an editor's diff view)"
    elif c.get("unavailable"):
        words += f" ({c['unavailable']})"
    elif "added" in c:
        words += f", {plural(c['added'], 'line')} added, {c['removed']} removed"
    return f"{c['path']}: {words}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


COMMANDS = {"diff": cmd_diff}
