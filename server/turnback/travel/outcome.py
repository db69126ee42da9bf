"""Which way an intent went, decided from durable records of that very transaction.

An intent names its *base*: the published state it started from (the head's sequence number, or the
plain store's sidecar stamp). The commit point is a publication that names the transaction. So, read
from the store alone:
- the current publication names the transaction: it committed;
- the current publication is still the base: it never reached its commit point;
- anything else: later work was published after it. A process publishes nothing while one of its
  intents has an outcome that is not durable (`Book.unsettled`), so that outcome was settled and
  only the intent's removal failed: it is `superseded`, and recovery touches no file for it.
A publication that cannot be read decides nothing: `OutcomeUnknown`, and the intent stays.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import TurnbackError
from ..store.records import read_record

COMMITTED, NOT_COMMITTED, SUPERSEDED = "committed", "not-committed", "superseded"
SIDECAR_KIND = "sidecar"


class OutcomeUnknown(TurnbackError):
    code = "io-error"


def current_mark(store) -> dict | None:
    """The published state as {base fields..., "txn"}; None when nothing was published yet."""
    try:
        if store.kind == "heads":
            head = store.heads.current()
            return None if head is None else {"seq": head.seq, "txn": head.txn}
        if not Path(store.sidecar_path).exists():
            return None
        rec = read_record(store.sidecar_path, SIDECAR_KIND)
        return {"created": rec.get("created"), "body": rec.get("body"), "txn": rec.get("txn")}
    except (OSError, TurnbackError) as exc:
        raise OutcomeUnknown(f"the published state cannot be read ({exc}), so whether the "
                             "transaction reached its commit point is unknown") from exc


def base_of(mark: dict | None) -> dict | None:
    return None if mark is None else {k: v for k, v in mark.items() if k != "txn"}


def decide(book, intent: dict) -> str:
    mark = current_mark(book.store)
    if mark is not None and mark.get("txn") == intent["id"]:
        return COMMITTED
    if "base" not in intent:  # an intent written before bases existed: the old rule
        return COMMITTED if _named_by_a_head(book, intent["id"]) else NOT_COMMITTED
    return NOT_COMMITTED if base_of(mark) == intent["base"] else SUPERSEDED


def _named_by_a_head(book, txn: str) -> bool:
    try:
        return book.committed_txn(txn)
    except (OSError, TurnbackError) as exc:
        raise OutcomeUnknown(f"the published heads cannot be read ({exc})") from exc
