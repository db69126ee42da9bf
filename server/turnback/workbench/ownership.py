"""An explicit, confirmed takeover of a store's ownership (`turnback/ownership/takeover`,
`turnback takeover`).

Ownership normally changes hands only when the holder is provably gone (its process exited on this
machine, or its lease expired). A holder on another machine, or one that hangs, is never judged gone
automatically; the user can take the store from it here, after being shown who holds it. The epoch
grows, so the old holder's next publication is refused and it becomes an observer.
"""

from __future__ import annotations

from ..store.ownership.owners import takeover as take_store
from .params import field, obj


def holder(wb) -> dict:
    """Who holds the store now, as the confirmation shows it."""
    info = wb.owner_info() or {}
    return {"pid": info.get("pid"), "host": info.get("host"), "epoch": info.get("epoch"),
            "sameMachine": info.get("sameMachine"), "kind": wb.store.kind}


def takeover(wb, params) -> dict:
    """Without `confirm: true`: who holds the store, and nothing changes (`needs-confirmation`).
    With it: this workbench owns the store (`taken`), or already did (`owner`)."""
    p = obj(params)
    confirm = field(p, "confirm", bool, default=False)
    if wb.is_owner:
        return {"status": "owner", "ownership": "owner", "epoch": wb.book.owner.epoch}
    previous = holder(wb)
    if not confirm:
        return {"status": "needs-confirmation", "ownership": "observer", "owner": previous,
                "message": _question(previous)}
    owner = take_store(wb.store.path, wb.store.kind, confirm=True,
                       **wb.options.ownership_kwargs(wb.store.kind))
    wb._become_owner(owner)
    return {"status": "taken", "ownership": "owner", "epoch": owner.epoch, "previous": previous}


def resign(wb) -> None:
    """Give the store up and stay open as a read-only observer: publish what is pending, release
    the lease (or lock), and read the store as observers do (an owner that cannot serve its socket
    must not keep the others out: server.py)."""
    owner = wb.book.owner
    if owner is None:
        return
    try:
        wb.book.close()  # publishes (unless an interrupted transaction is unsettled: it stays)
    finally:
        owner.release()
        wb.book.lose_ownership()  # an observer from here on, and the clients hear it


def _question(owner: dict) -> str:
    where = "this machine" if owner.get("sameMachine") else f"host {owner.get('host')}"
    return (f"process {owner.get('pid')} on {where} holds the store. Taking it over makes that "
            "process a read-only observer; anything it has not published stays unpublished. "
            "Confirm with confirm: true.")
