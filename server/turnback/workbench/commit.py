"""The shared tail of every confirmed rewind, Redo and restore: the file transaction, then its
report and notices. Below both `travel.py` (rewind, Redo) and `restore.py`, which call it."""

from __future__ import annotations

from ..travel import transaction
from ..travel.user_edits import kept_report


def commit_tail_job(wb, operation: str, changes, new_state, kept=None, modes=None, *,
                    conversation: bool = True, announce: dict | None = None):
    """The shared tail of a confirmed rewind, redo or restore: the transaction, then its report and
    notices (`announce`: what `turnback/rewound` says, its files filled in from `changes`). `kept`
    is what keeping the user's edits made (a plan with kept, merged, … lists, or a list of paths)."""
    if announce is not None:
        announce = dict(announce, files=[rel for rel, _ in changes])
    touched = {d.rel for d in wb.state.directives.values()}
    done: dict = {}
    try:
        outcome = yield from transaction.run_job(wb.book, wb.ws, operation=operation,
                                                 changes=changes, new_state=new_state,
                                                 max_bytes=wb.options.max_file_bytes, done=done,
                                                 modes=modes)
    except GeneratorExit:
        # Closed (cancelled, disconnected, shut down) after the first file was touched: the
        # transaction ran on to its outcome; clients still hear of it.
        if "outcome" in done:
            _report(wb, done["outcome"], operation, touched, kept, conversation, announce)
        raise
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
