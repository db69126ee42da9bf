"""Show a plan and ask: the confirmation every mutating command shares (rewind, redo, restore, fork)."""

from __future__ import annotations

from .render import Renderer


def renderer(wb) -> Renderer:
    """A renderer that names files relative to the workspace of `wb`."""
    root_uri = getattr(wb, "root_uri", None)  # through an owner: without the fence's imports
    return Renderer(root_uri() if root_uri else wb.ws.to_uri("x").rsplit("/", 1)[0])


def decide(ctx, yes: bool, question: str) -> str:
    """`yes`, `no` (the person answered no) or `unasked` (no terminal to ask on, or --json)."""
    if yes:
        return "yes"
    if ctx.json or not ctx.interactive():
        return "unasked"
    return "yes" if ctx.confirm(question) else "no"


def declined(ctx, answer: str, what: str, flag: str) -> None:
    if answer == "no":
        ctx.print("Cancelled: nothing changed.")
    else:
        ctx.print(f"Nothing changed. Run again with {flag} to {what}.")


def confirmed(ctx, wb, candidate: dict, lines, what: str, noop_text: str) -> bool:
    """Show a plan (`lines`) and ask; True when the commit may go ahead (the owner checked). A plan
    with nothing to do, a no and --json without --yes answer here and return False."""
    if candidate.get("noop"):  # the current state: no question, no commit, no epoch
        ctx.emit({"candidate": candidate, "commit": {"status": "nothing-to-do"}}) if ctx.json \
            else ctx.print(noop_text)
        return False
    if not ctx.json:
        ctx.print(*lines)
    answer = decide(ctx, ctx.args.yes, f"{what.capitalize()}?")
    if answer != "yes":
        if ctx.json:
            ctx.emit({"candidate": candidate, "commit": None})
        else:
            declined(ctx, answer, what, "--yes")
        return False
    ctx.require_owner(wb)
    return True
