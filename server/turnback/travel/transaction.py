"""The file transaction shared by rewind and redo: all files and the session change, or none.

Order, and why each step is where it is:
1. back up the current disk image of every file the plan touches, and write every object of the new
   session state, in one durability batch (nothing in the workspace has changed yet);
2. write the intent record naming the plan, the backups and the new state's body (durable);
3. only now touch the workspace: each file is replaced by temp + fsync + rename + folder fsync, or
   deleted; any failure puts the backups back, newest first;
4. commit: publish the head (or replace the sidecar) naming the new body. That single write is the
   commit point: before it the old state is the truth, after it the new one;
5. remove the intent record.
A crash leaves an intent record behind; the next open reads it and rolls forward if the commit point
was reached, otherwise back (see `recover`). A rollback that itself fails becomes a recovery record
that the user sees until it is resolved.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.reader import read_image
from ..errors import TurnbackError
from ..model.images import ABSENT, Image
from ..store import fsio
from ..store.records import read_record, write_record
from .disk import drain, put_image

INTENT_KIND = "intent"
RECOVERY_KIND = "recovery"


@dataclass
class Outcome:
    status: str  # committed | rolled-back
    txn: str
    head_seq: int | None = None
    recovery: list[dict] = field(default_factory=list)
    reason: str = ""


class BackupFailed(TurnbackError):
    code = "backup-failed"


def run(book, ws, **kw) -> Outcome:
    """Run the transaction to its end at once."""
    return drain(run_job(book, ws, **kw))


def run_job(book, ws, *, operation: str, changes: list[tuple[str, Image]], new_state,
            max_bytes: int):
    """Apply `changes` (path -> target image) and commit `new_state`, all or nothing.

    A job: it yields after every backup and every file it writes, so a server can answer reads
    between them; the caller holds the mutation lock for the whole job."""
    store, objects = book.store, book.store.objects
    book.require_owner()
    if book.dirty:
        book.publish()  # start from a published state, so the journal holds nothing to replay
    txn = uuid.uuid4().hex
    new_state.last_op = max(new_state.last_op, book.state.last_op)
    try:
        body, backups = yield from _prepare(book, ws, changes, new_state, max_bytes)
    except OSError as exc:
        raise TurnbackError(f"could not save the backups before the {operation} ({exc}); "
                            "nothing was changed", code="io-error") from exc
    files = [{"rel": rel, "to": to, "backup": backups[rel]} for rel, to in changes]
    intent_path = Path(store.txn_dir) / f"{txn}.cbor"
    try:
        write_record(intent_path, INTENT_KIND, {"id": txn, "operation": operation,
                                                "created": time.time(), "body": body, "files": files})
    except OSError as exc:
        fsio.discard(intent_path)
        raise TurnbackError(f"could not write the {operation}'s intent record ({exc}); "
                            "nothing was changed", code="io-error") from exc
    applied: list[dict] = []
    try:
        for f in files:
            applied.append(f)
            put_image(ws, objects, f["rel"], f["to"])
            yield ("apply", len(applied), len(files))
        seq = book.commit_body(new_state, body, txn=txn)
    except Exception as exc:  # any failure before the commit point: put the backups back
        if _committed_anyway(book, txn):
            return _finish(book, new_state, txn, intent_path)
        return _roll_back(book, ws, operation, txn, intent_path, applied, exc)
    return _finish(book, new_state, txn, intent_path, seq)


def _prepare(book, ws, changes, new_state, max_bytes):
    """Back up every file the plan touches and write the new state, in one durability batch."""
    objects = book.store.objects
    backups: dict[str, Image] = {}
    with objects.batch():
        for rel, _to in changes:
            read = read_image(ws, rel, objects, max_bytes=max_bytes)
            if read.status == "absent":
                backups[rel] = ABSENT
            elif read.status == "ok":
                backups[rel] = read.digest
            else:
                raise BackupFailed(f"cannot back up {rel} before changing it ({read.status}); "
                                   "nothing was changed", data={"path": rel, "reason": read.status})
            yield ("backup", len(backups), len(changes))
        body = book.codec.write(new_state)
    return body, backups


def _committed_anyway(book, txn: str) -> bool:
    """A failure reported after the commit write may still have made it durable; the records decide."""
    try:
        return book.committed_txn(txn)
    except Exception:
        return False


def _finish(book, new_state, txn: str, intent_path: Path, seq: int | None = None) -> Outcome:
    book.adopt(new_state)
    if seq is None and book.head is not None:
        seq = book.head.seq
    try:
        fsio.unlink(intent_path, missing_ok=True)
    except OSError:
        pass  # the next open finds it, sees the commit, and finishes it (a no-op on the files)
    return Outcome("committed", txn, seq)


def _roll_back(book, ws, operation: str, txn: str, intent_path: Path, applied: list[dict],
               cause: Exception) -> Outcome:
    failed = restore_backups(ws, book.store.objects, applied)
    reason = f"{type(cause).__name__}: {cause}"
    recovery = []
    if failed:
        recovery.append(write_recovery(book.store, txn, operation, failed, reason))
    try:
        fsio.unlink(intent_path, missing_ok=True)
    except OSError:
        pass  # found again at the next open, which rolls back once more (idempotent)
    return Outcome("rolled-back", txn, None, recovery, reason)


def restore_backups(ws, objects, files: list[dict]) -> list[dict]:
    """Put each backup back, newest first; return the files that could not be restored."""
    failed = []
    for f in reversed(files):
        try:
            put_image(ws, objects, f["rel"], f["backup"])
        except Exception as exc:  # keep going: every file we can restore is one less to lose
            failed.append(dict(f, error=f"{type(exc).__name__}: {exc}"))
    return failed


def write_recovery(store, txn: str, operation: str, failed: list[dict], reason: str) -> dict:
    record = {"id": txn, "operation": operation, "created": time.time(),
              "paths": [f["rel"] for f in failed], "reason": reason,
              "backups": [{"rel": f["rel"], "digest": f["backup"]} for f in failed]}
    try:
        write_record(Path(store.recovery_dir) / f"{txn}.cbor", RECOVERY_KIND, record)
    except OSError:
        pass  # the intent record, left in place, carries the same backups to the next open
    return record


# -- recovery at open --------------------------------------------------------------------------------
def pending_intents(store) -> list[tuple[Path, dict]]:
    folder = Path(store.txn_dir)
    if not folder.is_dir():
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".cbor") and not fsio.is_temp_name(name):
            out.append((folder / name, read_record(folder / name, INTENT_KIND)))
    return out


def recover(book, ws) -> list[dict]:
    """Finish or roll back every interrupted transaction, as the durable records prove. Returns a
    report line per transaction; failures become recovery records."""
    report = []
    for path, intent in pending_intents(book.store):
        _clean_temps(ws, intent["files"])
        if book.committed_txn(intent["id"]):
            failed = []
            for f in intent["files"]:
                try:
                    put_image(ws, book.store.objects, f["rel"], f["to"])
                except Exception as exc:
                    failed.append(dict(f, backup=f["to"], error=str(exc)))
            action = "finished"
        else:
            failed = restore_backups(ws, book.store.objects, intent["files"])
            action = "rolled-back"
        if failed:
            write_recovery(book.store, intent["id"], intent["operation"], failed,
                           f"the interrupted {intent['operation']} could not be {action} completely")
        fsio.unlink(path, missing_ok=True)
        report.append({"id": intent["id"], "operation": intent["operation"], "action": action,
                       "failed": [f["rel"] for f in failed]})
    return report


def _clean_temps(ws, files: list[dict]) -> None:
    """Temp files a crash left next to the files being restored are ours to remove."""
    for f in files:
        try:
            ws.check_components(f["rel"])  # no folder on the way may be a link leading out
            path = ws.abs_path(f["rel"])
            folder = path.parent
            if not folder.is_dir():
                continue
            prefix = f".{path.name}{fsio.TEMP_MARK}"
            for name in os.listdir(folder):
                if name.startswith(prefix):
                    fsio.unlink(folder / name, missing_ok=True)
        except (OSError, TurnbackError):
            continue
