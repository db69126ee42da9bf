"""`turnback gc` and `turnback fsck`: the store's upkeep (a full collection with a progress bar, and
the read-only check)."""

from __future__ import annotations

from .exits import EXIT_ERROR, EXIT_OK, Unavailable
from .render import Renderer, fsck_json, kept_reasons, size

MYPY = False
if MYPY:  # for the type checker only: `typing` costs every command's start a few milliseconds
    from typing import Any, Callable


def run_collection(wb: Any, progress: Callable[[Any, int], None] | None = None, *,
                   dry_run: bool = False) -> dict[str, Any]:
    """One full collection (with `dry_run`, its plan's summary). With `progress`, drive the
    collector's job and report its yields."""
    coll = wb.collection
    if progress is not None and callable(getattr(coll, "job", None)):
        job = coll.job(pack_all=True, **({"dry_run": True} if dry_run else {}))
        count = 0
        try:
            while True:
                progress(next(job), count)
                count += 1
        except StopIteration as done:
            result = done.value
        if isinstance(result, dict):
            return result
    if not callable(getattr(coll, "run", None)):
        raise Unavailable("the collector (wb.collection.run) is not part of this build yet")
    params = {"packAll": True}  # as `git gc` repacks everything
    if dry_run:
        params["dryRun"] = True
    ran: dict[str, Any] = coll.run(params)
    return ran


class ProgressBar:
    """A one-line bar on stderr, fed by whatever the collector's job yields."""

    def __init__(self, stream):
        self.stream = stream
        self.drawn = False

    def __call__(self, item, count: int) -> None:
        spin = "|/-\\"[count % 4]
        if isinstance(item, dict) and isinstance(item.get("done"), int) and item.get("total"):
            done, total = item["done"], max(item["total"], 1)
            fill = min(30, 30 * done // total)
            text = f"{item.get('phase', 'collecting'):<10} [{'#' * fill}{' ' * (30 - fill)}] {done}/{total}"
        elif isinstance(item, dict) and item.get("phase"):
            text = f"{item['phase']:<10} {spin} slice {count + 1}"
        elif isinstance(item, str):
            text = f"{item:<10} {spin} slice {count + 1}"
        else:
            text = f"collecting {spin} slice {count + 1}"
        self.stream.write("\r" + text[:78].ljust(78))
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 78 + "\r")
            self.stream.flush()


def cmd_gc(ctx: Any) -> int:
    dry_run = bool(getattr(ctx.args, "dry_run", False))
    wb = ctx.open(must_exist=True)
    bar = ProgressBar(ctx.stderr) if not ctx.json and _isatty(ctx.stderr) else None
    try:
        ctx.require_owner(wb)
        try:
            stats = run_collection(wb, bar, dry_run=dry_run)
        finally:
            if bar:
                bar.finish()
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(stats)
    else:
        ctx.print(*(plan_lines(stats) if dry_run else Renderer.stats(stats)))
    return EXIT_OK


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """`turnback gc --dry-run`: what the collection's plan would remove and keep."""
    out = [f"would free {size(plan.get('bytesFreed', 0) + plan.get('packBytesDeleted', 0))}: "
           f"{plan.get('headsRetired', 0)} old state(s) retired, {plan.get('objectsDeleted', 0)} "
           f"unreferenced loose object(s) ({size(plan.get('bytesFreed', 0))}) and "
           f"{plan.get('packsDeleted', 0)} pack(s) ({size(plan.get('packBytesDeleted', 0))}) deleted"]
    if plan.get("packsRewritten") or plan.get("looseToPack"):
        out.append(f"would repack: {plan.get('looseToPack', 0)} loose object(s) into a pack, "
                   f"{plan.get('packsRewritten', 0)} pack(s) "
                   f"({size(plan.get('packBytesRewritten', 0))}) rewritten")
    reasons = kept_reasons(plan.get("keptFor") or {})
    out.append(f"would keep {plan.get('headsKept', 0)} state(s)"
               + (f" ({', '.join(reasons)})" if reasons else "")
               + f" and {plan.get('objectsKept', 0)} loose object(s) ({size(plan.get('bytesKept', 0))});"
               f" the roots reach {plan.get('objectsReached', 0)} object(s)")
    for why in plan.get("skipped") or []:
        out.append(f"nothing would be deleted: {why}")
    out.append("(dry run: nothing was changed)")
    return out


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def cmd_fsck(ctx) -> int:
    # Opens nothing but fsck: no ownership, no workbench, no writes.
    from .. import collect  # noqa: F401 - registers the deep check: every head's body and refs
    from ..store.fsck import fsck

    report = fsck(ctx.store_path)
    ctx.emit(fsck_json(report)) if ctx.json else ctx.print(*Renderer.fsck(report))
    return EXIT_OK if report.ok else EXIT_ERROR


# Commands after which the command line collects by itself when the store is past its thresholds
# (collect/auto.py); never the hooks' (`turnback hook` never reaches here), captures, steps or reads.
AUTO_AFTER = {("turn", "settle"), ("rewind", None), ("restore", None), ("redo", None), ("fork", None)}


def auto_collect(ctx) -> None:
    """git's `gc --auto` for a command that ran without an owner: a quick, bounded collection once
    the store passes its thresholds. Never changes the command's outcome: a failure is a note."""
    args = ctx.args
    if not ctx.owned_here or (args.command, getattr(args, "turn_command", None)) not in AUTO_AFTER:
        return
    from ..collect import auto

    why = auto.due(ctx.store_path)
    if why is None:
        return
    try:
        wb = ctx._open_once(own=True, must_exist=True)
        try:
            if getattr(wb, "is_owner", False) and hasattr(wb, "collection"):
                stats = auto.run_bounded(wb)
                if stats.get("stopped"):
                    ctx.note(f"turnback: collected part of the store ({why}); the rest next time")
        finally:
            wb.close()
    except Exception as exc:  # noqa: BLE001 - the command itself succeeded
        ctx.note(f"turnback: the automatic collection ({why}) did not run: {exc}")


COMMANDS = {"gc": cmd_gc, "fsck": cmd_fsck}
