"""The shared tail of every confirmed rewind, Redo and restore: the file transaction, then its
report and notices. Below the confirmed-operation skeleton (confirmed.py), which calls it."""

from __future__ import annotations

from ..travel import transaction
from ..travel.diskmemo import DiskMemo
from ..travel.user_edits import kept_report


def disk_memo(wb, *, fresh: bool = False) -> DiskMemo:
    """The workbench's memo of disk images hashed (travel/diskmemo.py), refreshed against the
    watcher: what a plan's preparation hashed, its commit and the transaction's backups reuse. A
    preparation starts it afresh (`fresh`) and the commit's end forgets it, so an owner keeps
    nothing of it between plans."""
    memo = getattr(wb, "_disk_memo", None)
    if memo is None:
        memo = wb._disk_memo = DiskMemo(watcher=lambda: getattr(wb, "watcher", None))
    if fresh:
        memo.clear()
    memo.refresh()
    return memo


def commit_tail_job(wb, operation: str, changes, new_state, kept=None, modes=None, *,
                    conversation: bool = True, announce: dict | None = None):
    """The shared tail of a confirmed rewind, redo or restore: the transaction, then its report and
    notices (`announce`: what `turnback/rewound` says, its files filled in from `changes`). `kept`
    is what keeping the user's edits made (a plan with kept, merged, … lists, or a list of paths)."""
    if announce is not None:
        announce = dict(announce, files=[rel for rel, _ in changes])
    touched = {d.rel for d in wb.state.directives.values()}
    done: dict = {}
    memo = disk_memo(wb)
    try:
        outcome = yield from transaction.run_job(wb.book, wb.ws, operation=operation,
                                                 changes=changes, new_state=new_state,
                                                 max_bytes=wb.options.max_file_bytes, done=done,
                                                 modes=modes, memo=memo)
    except GeneratorExit:
        # Closed (cancelled, disconnected, shut down) after the first file was touched: the
        # transaction ran on to its outcome; clients still hear of it.
        if "outcome" in done:
            _report(wb, done["outcome"], operation, touched, kept, conversation, announce)
        raise
    finally:
        memo.clear()  # the plan is done: nothing of it is kept
    return _report(wb, outcome, operation, touched, kept, conversation, announce)


def _report(wb, outcome, operation: str, touched, kept=None, conversation=True, announce=None) -> dict:
    result = wb.after_transaction(outcome, operation, touched=touched, conversation=conversation,
                                  announce=announce)
    if outcome.message:
        result["message"] = outcome.message
    if kept and result.get("status") == "committed":
        # what keeping the user's edits did: kept as they were, merged, conflicts (with markers)
        result.update(kept_report(kept, wb.ws.to_uri))
    return result
