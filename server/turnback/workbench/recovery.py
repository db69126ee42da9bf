"""Recovery records (`turnback/recovery/list|resolve`) and the intents still pending: what a rolled-back
or interrupted transaction (travel/transaction.py) could not put back, kept with its backups until
the person retries or dismisses it. Not a confirmed operation (nothing is derived or hashed): a
resolve names a record and an action, parsed once into `ResolveArgs`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..errors import CorruptStore, NotFound, TurnbackError
from ..store import fs
from ..store.records import read_record
from ..travel import transaction
from ..travel.disk import put_image
from ..travel.settle import settle
from . import params as P

PENDING_SHOWN = 20  # paths listed per pending intent (the count says how many there are)
PENDING_WORDS = {
    "in-progress": "under way in the process that owns the store",
    "interrupted": "interrupted: the next process that takes the store (an editor, or any command "
                   "that changes something) finishes it or rolls it back before anything else",
    "interrupted-or-in-progress": "under way on another machine, or interrupted there",
    "unsettled": "its outcome could not be made durable yet; nothing else is changed until it is",
}
Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class ResolveArgs:
    id: str  # the recovery record's id
    action: str  # retry | dismiss

    @classmethod
    def parse(cls, params: Any) -> ResolveArgs:
        p = P.obj(params)
        return cls(P.field(p, "id", str), P.field(p, "action", str, choices=("retry", "dismiss")))


class RecoveryFeature:
    def __init__(self, wb: Any) -> None:
        self.wb = wb

    def _dir(self) -> Path:
        return Path(self.wb.store.recovery_dir)

    def records(self) -> Rows:
        """The readable recovery records; a damaged one is left out here (see `damaged`), so one
        flipped bit never stops capture, begin, status or the resolving of the others."""
        return [rec for rec in self._scan() if "damage" not in rec]

    def damaged(self) -> Rows:
        """Recovery records that cannot be read, by id: kept as evidence until dismissed."""
        return [rec for rec in self._scan() if "damage" in rec]

    def _scan(self) -> Rows:
        folder = self._dir()
        if not folder.is_dir():
            return []
        out: Rows = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".cbor") and not fs.is_temp_name(name):
                try:
                    out.append(cast("dict[str, Any]",  # never None: a missing one raises
                                    read_record(folder / name, transaction.RECOVERY_KIND)))
                except CorruptStore as exc:
                    out.append({"id": name[:-len(".cbor")], "damage": exc})
        return out

    def count(self) -> int:
        """Pending records, damaged ones included (they need the user too)."""
        return len(self._scan())

    def wire_damaged(self, record: dict[str, Any]) -> dict[str, Any]:
        exc = record["damage"]
        return {"id": record["id"], "operation": None, "created": None, "paths": [],
                "reason": f"this recovery record is damaged and cannot be read: {exc.message}",
                "backups": [], "damaged": True, "code": exc.code}

    def wire(self, record: dict[str, Any]) -> dict[str, Any]:
        to_uri = self.wb.ws.to_uri
        return {"id": record["id"], "operation": record["operation"], "created": record["created"],
                "paths": [to_uri(r) for r in record["paths"]], "reason": record["reason"],
                "backups": [{"uri": to_uri(b["rel"]), "digest": b["digest"]} for b in record["backups"]]}

    def list(self, params: Any = None) -> dict[str, Any]:
        P.obj(params)
        return {"recovery": [self.wire(r) for r in self.records()]
                + [self.wire_damaged(r) for r in self.damaged()],
                "pending": self.pending(self.wb.owner_state()["state"])}

    def pending(self, owner_state: str = "live") -> Rows:
        """Every intent record in the store: a transaction under way (its owner runs), interrupted
        (its owner is gone: the next process that takes the store finishes or rolls it back), or
        unsettled in this very process (`recovery-pending`)."""
        wb = self.wb
        out: Rows = []
        for path, intent in transaction.pending_intents(wb.store):
            if intent is None:
                out.append({"id": path.stem, "operation": None, "created": None, "files": 0,
                            "paths": [], "state": "unreadable",
                            "message": "an intent record that cannot be read is kept as evidence"})
                continue
            if intent["id"] in wb.book.unsettled:
                state = "unsettled"
            elif intent["id"] in transaction.RUNNING:
                state = "in-progress"  # this process is running it (a read between its slices)
            elif wb.is_owner or owner_state in ("dead", "none"):
                state = "interrupted"
            else:
                state = "in-progress" if owner_state == "live" else "interrupted-or-in-progress"
            rels = [f["rel"] for f in intent.get("files", ())]
            out.append({"id": intent["id"], "operation": intent.get("operation"),
                        "created": intent.get("created"), "files": len(rels),
                        "paths": [wb.ws.to_uri(rel) for rel in rels[:PENDING_SHOWN]],
                        "state": state, "message": PENDING_WORDS[state]})
        return out

    def resolve(self, params: Any) -> dict[str, Any]:
        args = ResolveArgs.parse(params)
        rid, action = args.id, args.action
        wb = self.wb
        wb.book.require_owner()
        record = next((r for r in self._scan() if r["id"] == rid), None)
        if record is None:
            raise NotFound(f"no recovery record {rid!r}", data={"id": rid})
        path = self._dir() / f"{rid}.cbor"
        if "damage" in record:
            if action == "retry":
                raise CorruptStore(f"recovery record {rid} is damaged: there is nothing to retry; "
                                   "dismiss it once you have looked at the files",
                                   data={"id": rid, "path": str(path)})
            if not transaction.remove_record(path):
                raise TurnbackError(f"the recovery record {rid} could not be removed; it stays",
                                    code="io-error", data={"id": rid})
            wb.emit_status()
            return {"status": "dismissed", "recovery": self.list()["recovery"]}
        status = "dismissed"
        if action == "retry":
            failed = retry_record(wb, record)
            if failed:
                status = "failed"
                transaction.write_recovery(wb.store, transaction.recovery_record(
                    rid, record["operation"], failed, failed[0].get("error") or record["reason"]))
            else:
                status = "resolved"
        if status != "failed":
            if not transaction.remove_record(path):
                raise TurnbackError(f"the recovery record {rid} could not be removed; it stays",
                                    code="io-error", data={"id": rid})
        wb.emit_status()
        return {"status": status, "recovery": self.list()["recovery"]}

    def recover_interrupted(self) -> Rows:
        report = transaction.recover(self.wb.book, self.wb.ws)
        self._clean_record_temps()
        # Temp files in the store are leftovers of interrupted writes: only an owner writes, and the
        # owner is us, now, before any new work.
        self.wb.open_report["tempFilesRemoved"] = len(self.wb.store.sweep_temp())
        if report:
            self.wb.collection.schedule("recovery")
        return report

    def _clean_record_temps(self) -> None:
        """A retry killed mid-write leaves a temp file next to a path of its record: ours too."""
        try:
            records = self.records()
        except Exception:  # noqa: BLE001 - a damaged record is reported elsewhere; cleanup is best effort
            return
        for record in records:
            transaction.clean_temps(self.wb.ws, [{"rel": b["rel"]} for b in record["backups"]])


def retry_record(wb: Any, record: dict[str, Any]) -> Rows:
    """Put a recovery record's backups back; return the entries that still fail. A file is
    overwritten only when it holds the image the transaction left (`left`) or is already right; a
    record written before `left` existed overwrites as before. Each image goes with its permission
    bits (`mode`, `leftMode`) when the record names them."""
    failed = []
    for b in reversed(record["backups"]):
        allowed = (b["left"],) if b.get("left") is not None else None
        if allowed is None:
            error = _put_unguarded(wb, b["rel"], b["digest"], b.get("mode"))
        else:
            error = settle(wb.ws, wb.store.objects, b["rel"], b["digest"], allowed,
                           max_bytes=transaction.NO_LIMIT, mode=b.get("mode"),
                           allowed_modes=(b.get("leftMode"),))
        if error is not None:
            failed.append({"rel": b["rel"], "backup": b["digest"], "backupMode": b.get("mode"),
                           "left": b.get("left"), "leftMode": b.get("leftMode"), "error": error})
    return failed


def _put_unguarded(wb: Any, rel: str, image: Any, mode: int | None = None) -> str | None:
    try:
        put_image(wb.ws, wb.store.objects, rel, image, mode=mode)
    except Exception as exc:  # noqa: BLE001 - reported in the record
        return f"{type(exc).__name__}: {exc}"
    return None
