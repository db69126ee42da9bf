"""The file transaction shared by rewind and redo: all files and the session change, or none.

Order, and why each step is where it is:
1. back up the current disk image of every file the plan touches, and write every object of the new
   session state, in one durability batch (nothing in the workspace has changed yet). When a backup
   differs from the image the session knows (someone's uncaptured edit), a *before* head is published
   too: the old state with those images, so Redo can later bring back exactly the disk the
   transaction overwrote (heads stores only);
2. write the intent record naming its base (the publication it starts from), the plan, the backups,
   the folders it will create and the new state's body (durable);
3. only now touch the workspace: each file is replaced by temp + fsync + rename + folder fsync, or
   deleted; any failure puts the backups back, newest first;
4. commit: publish the head (or replace the sidecar) naming the new body and this transaction. That
   single write is the commit point: before it the old state is the truth, after it the new one;
5. remove the intent record, durably, but only once the outcome is durable: the commit point reached
   and the files written, or every backup restored, or a recovery record written and synced.
   Otherwise it stays, this process writes nothing more until it is settled (`Book.unsettled`), and
   the next open tries again.
Cancelling the job (GeneratorExit at a yield) before the first workspace file is touched changes
nothing; after that it is ignored, and the job runs on, without yielding, to its commit point or to a
complete rollback. Recovery (`recover`) decides from the durable records of the transaction itself
(`outcome.decide`), and overwrites only files whose image is the transaction's target or backup.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.reader import read_image
from ..errors import TurnbackError
from ..model.images import ABSENT, Image, folder_key, is_folder_key
from ..store import fs
from ..store.records import read_record, write_record
from . import outcome as oc
from .disk import Put, drain, folder_image, memo_image, put_many_job
from .before import before_state
from .folders import apply_order
from .settle import missing_folders, remove_created_folders, settle_all

INTENT_KIND = "intent"
# The `txn` of a *before* head: it names the transaction it was kept for, and is never its commit.
BEFORE_MARK = "before:"
RUNNING: set[str] = set()  # transactions of this process between their intent and their outcome
RECOVERY_KIND = "recovery"
NO_LIMIT = 1 << 62  # recovery compares digests of files of any size


@dataclass
class Outcome:
    status: str  # committed | rolled-back
    txn: str
    head_seq: int | None = None
    recovery: list[dict] = field(default_factory=list)
    reason: str = ""
    message: str = ""  # a sentence for people, set when rolled back


class BackupFailed(TurnbackError):
    code = "backup-failed"


class Applying(tuple):
    """What the job yields once it has touched a workspace file: from here on it is not cancellable
    (`binding`), and a runner that is cancelled lets it run to its outcome and answers with it."""

    binding = True


def run(book, ws, **kw) -> Outcome:
    """Run the transaction to its end at once."""
    return drain(run_job(book, ws, **kw))


def run_job(book, ws, *, operation: str, changes: list[tuple[str, Image]], new_state,
            max_bytes: int, done: dict | None = None, modes: dict | None = None,
            keep_before: bool = True, memo=None):
    """Apply `changes` (path -> target image) and commit `new_state`, all or nothing. `modes`
    ((path, image) -> permission bits) names the bits each target is written with; the intent
    records them and each backup's bits, so a rollback or a recovery puts back both.

    Every operation (rewind, Redo, fork in place and in a worktree) keeps the before-images of what it
    overwrites: a backup the session never captured is published first as a *before* head, which Redo
    offers and the collector keeps as the newest head of its group (`keep_before`: a caller whose
    folder cannot hold anything of anyone's may say so; plain stores have no heads to keep it in).

    A job: it yields after every backup and every file it writes, so a server can answer reads
    between them; the caller holds the mutation lock for the whole job. `done`, when given, receives
    the outcome as "outcome" also when the job was closed and finished on its own. `memo`: the
    disk images the plan's derivation hashed (travel/diskmemo.py); a backup the store already holds
    is not read again while nothing touched its file."""
    store = book.store
    book.require_owner()
    if book.dirty:
        book.publish()  # start from a published state, so the journal holds nothing to replay
    txn = uuid.uuid4().hex
    new_state.last_op = max(new_state.last_op, book.state.last_op)
    try:
        body, backups, backup_modes, before = yield from _prepare(
            book, ws, changes, new_state, max_bytes, keep_before, memo)
        if before is not None:  # the disk as it is now, for Redo (see the module doc)
            book.commit_body(*before, txn=BEFORE_MARK + txn)
    except OSError as exc:
        raise TurnbackError(f"could not save the backups before the {operation} ({exc}); "
                            "nothing was changed", code="io-error") from exc
    modes = modes or {}
    changes = apply_order(changes)  # every step possible in turn; a rollback runs it backwards
    files = [{"rel": rel, "to": to, "backup": backups[rel],
              "toMode": None if to == ABSENT else modes.get((rel, to)),
              "backupMode": backup_modes.get(rel),
              "dirs": [] if to == ABSENT else missing_folders(ws, rel)} for rel, to in changes]
    try:
        base = oc.base_of(oc.current_mark(store))
    except oc.OutcomeUnknown as exc:
        raise TurnbackError(f"cannot start the {operation}: {exc}; nothing was changed",
                            code="io-error") from exc
    intent = {"id": txn, "operation": operation, "created": time.time(), "body": body,
              "files": files, "base": base}
    intent_path = Path(store.txn_dir) / f"{txn}.cbor"
    try:
        write_record(intent_path, INTENT_KIND, intent)
    except OSError as exc:
        fs.discard(intent_path)
        raise TurnbackError(f"could not write the {operation}'s intent record ({exc}); "
                            "nothing was changed", code="io-error") from exc
    # Every file may be touched from here: a failure rolls back all of them (settling a file that
    # still holds its backup changes nothing).
    applied: list[dict] = list(files)
    cancelled = False
    RUNNING.add(txn)  # its intent is in progress here, not interrupted (`pending` in session/info)
    try:
        puts = [Put(f["rel"], f["to"], f["toMode"],
                    bits_only=f["to"] == f["backup"] and f["to"] != ABSENT and f["toMode"] is not None)
                for f in files]  # the same bytes with other bits: a change of mode alone
        steps = put_many_job(ws, store.objects, puts, stop_on_error=True)
        while True:
            try:
                step = next(steps)
            except StopIteration:
                break
            if not cancelled:
                try:
                    yield Applying(("apply",) + tuple(step[1:]))
                except GeneratorExit:  # closed: run on to the end without yielding again
                    cancelled = True
        seq = book.commit_body(new_state, body, txn=txn)
    except Exception as exc:  # any failure before the commit point: the records decide what now
        result = _after_failure(book, ws, intent, intent_path, new_state, applied, exc, max_bytes)
    else:
        result = _finish(book, new_state, txn, intent_path, seq)
    finally:
        RUNNING.discard(txn)
    if done is not None:
        done["outcome"] = result
    return result


def _prepare(book, ws, changes, new_state, max_bytes, keep_before, memo=None):
    """Back up every file the plan touches and write the new state (and the before state, when the
    disk holds images the session never captured), in one durability batch."""
    objects = book.store.objects
    backups: dict[str, Image] = {}
    backup_modes: dict[str, int | None] = {}
    with objects.batch():
        for rel in _backup_order(book, changes):
            if is_folder_key(rel):  # a folder's backup is whether it is there
                image, problem = folder_image(ws, rel)
                if problem == "not-a-folder" and (rel.rstrip("/"), ABSENT) in changes:
                    image, problem = ABSENT, None  # a file the plan deletes first stands there
                if problem is not None:
                    raise BackupFailed(f"cannot back up the folder {rel} before changing it "
                                       f"({problem}); nothing was changed",
                                       data={"path": rel, "reason": problem})
                backups[rel] = image
                yield ("backup", len(backups), len(changes))
                continue
            reused = memo_image(ws, rel, memo)
            if reused is not None and objects.has(reused[0]):
                backups[rel], backup_modes[rel] = reused
                yield ("backup", len(backups), len(changes))
                continue
            read = read_image(ws, rel, objects, max_bytes=max_bytes)
            if read.status == "absent" or (read.status == "not-a-file"
                                           and (folder_key(rel), ABSENT) in changes):
                backups[rel] = ABSENT  # (or a folder the plan removes first stands there)
            elif read.status == "ok":
                backups[rel], backup_modes[rel] = read.digest, read.mode
            else:
                raise BackupFailed(f"cannot back up {rel} before changing it ({read.status}); "
                                   "nothing was changed", data={"path": rel, "reason": read.status})
            yield ("backup", len(backups), len(changes))
        body = yield from book.codec.iter_write(new_state)  # a step per turn and shard encoded
        before = before_state(book, backups, backup_modes) if keep_before else None
        before_body = (yield from book.codec.iter_write(before)) if before is not None else None
    return body, backups, backup_modes, (None if before is None else (before, before_body))


def _backup_order(book, changes) -> list[str]:
    """The paths to back up, in the order the store holds their known images (a backup that is
    already stored is read back to confirm it, `ObjectStore.put`): each packed block inflated once."""
    rels = [rel for rel, _to in changes]
    order = getattr(book.store.objects, "read_order", None)
    if order is None or len(rels) < 2:
        return rels
    known = book.state.known
    rank = {d: i for i, d in enumerate(order({known.get(r) for r in rels} - {None}))}
    return sorted(rels, key=lambda r: rank.get(known.get(r), -1))


def _after_failure(book, ws, intent, intent_path, new_state, applied, cause, max_bytes) -> Outcome:
    txn, operation = intent["id"], intent["operation"]
    try:
        verdict = oc.decide(book, intent)  # a failure reported after the commit write may be durable
    except oc.OutcomeUnknown as unknown:
        book.unsettled[txn] = _retry(book, ws, intent_path, intent, new_state)
        raise TurnbackError(
            f"the {operation} failed ({cause}) and {unknown}; its intent record stays, and it is "
            "finished or rolled back before any other change (at the latest when turnback opens the "
            "store again)", code="io-error", data={"txn": txn}) from cause
    if verdict == oc.COMMITTED:
        return _finish(book, new_state, txn, intent_path)
    return _roll_back(book, ws, intent, intent_path, applied, cause, max_bytes)


def _finish(book, new_state, txn: str, intent_path: Path, seq: int | None = None) -> Outcome:
    book.adopt(new_state)
    if seq is None and book.store.kind == "heads":  # the commit write failed late but is durable
        try:
            book.head = book.store.heads.current()
            seq = book.head.seq
        except (OSError, TurnbackError):
            pass  # committed all the same; only the head number in the reply is unknown
    remove_record(intent_path)  # the outcome is durable; a leftover intent is found superseded
    return Outcome("committed", txn, seq)


def _roll_back(book, ws, intent, intent_path: Path, applied: list[dict], cause: Exception,
               max_bytes: int) -> Outcome:
    txn, operation = intent["id"], intent["operation"]
    failed = settle_all(ws, book.store.objects, applied, "backup", max_bytes=max_bytes)
    remove_created_folders(ws, applied)
    reason = f"{type(cause).__name__}: {cause}"
    if not failed:
        remove_record(intent_path)
        return Outcome("rolled-back", txn, None, [], reason,
                       f"The {operation} failed ({cause}); every file was put back as it was and "
                       "the session did not change.")
    record = recovery_record(txn, operation, failed, reason)
    paths = ", ".join(f["rel"] for f in failed)
    if write_recovery(book.store, record):
        remove_record(intent_path)
        return Outcome("rolled-back", txn, None, [record], reason,
                       f"The {operation} failed ({cause}) and {len(failed)} file(s) could not be "
                       f"put back ({paths}); the session did not change. A recovery record lists "
                       "them with their backups: retry or dismiss it.")
    book.unsettled[txn] = _retry(book, ws, intent_path, intent, None)
    return Outcome("rolled-back", txn, None, [], reason,
                   f"The {operation} failed ({cause}) and {len(failed)} file(s) could not be put "
                   f"back ({paths}), nor could a recovery record be written. The intent record "
                   "stays: turnback retries before any other change, and when it opens the store "
                   "again.")


def remove_record(path: Path) -> bool:
    """Remove an intent or recovery record durably (its folder synced); False when that failed."""
    try:
        fs.unlink(path, missing_ok=True)
        fs.fsync_dir(path.parent)
    except OSError:
        return False
    return True


def recovery_record(txn: str, operation: str, failed: list[dict], reason: str) -> dict:
    """`backups[].digest` (with its bits, `mode`) is what a retry puts back; `left` (`leftMode`) the
    only other image it may overwrite."""
    return {"id": txn, "operation": operation, "created": time.time(),
            "paths": [f["rel"] for f in failed], "reason": reason,
            "backups": [{"rel": f["rel"], "digest": f["backup"], "left": f.get("left"),
                         "mode": f.get("backupMode"), "leftMode": f.get("leftMode"),
                         "error": f.get("error", "")} for f in failed]}


def write_recovery(store, record: dict) -> bool:
    """Write and sync a recovery record; False when it could not be made durable."""
    path = Path(store.recovery_dir) / f"{record['id']}.cbor"
    try:
        if not path.parent.is_dir():
            fs.mkdir(path.parent)
        write_record(path, RECOVERY_KIND, record)
    except OSError:
        return False
    return True


# -- recovery at open (and retries of an unsettled outcome) -------------------------------------------
def pending_intents(store) -> list[tuple[Path, dict | None]]:
    """Every intent record; a damaged one is returned as (path, None) and kept as evidence."""
    folder = Path(store.txn_dir)
    if not folder.is_dir():
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".cbor") and not fs.is_temp_name(name):
            try:
                out.append((folder / name, read_record(folder / name, INTENT_KIND)))
            except (OSError, TurnbackError):
                out.append((folder / name, None))
    return out


def recover(book, ws) -> list[dict]:
    """Finish or roll back every interrupted transaction, as the durable records prove. Returns a
    report line per transaction. One whose outcome cannot be made durable now stays in `txn/` and
    blocks further writes of this process (`Book.unsettled`) until a retry settles it."""
    report = []
    for path, intent in pending_intents(book.store):
        if intent is None:
            report.append({"id": path.stem, "operation": "unknown", "action": "unreadable",
                           "failed": []})
            continue
        line, settled = recover_one(book, ws, path, intent)
        if not settled:
            book.unsettled[intent["id"]] = _retry(book, ws, path, intent, None)
        report.append(line)
    return report


def recover_one(book, ws, path: Path, intent: dict) -> tuple[dict, bool]:
    """Settle one intent; (report line, whether its outcome is durable now and the intent gone)."""
    line = {"id": intent["id"], "operation": intent["operation"], "failed": [],
            "files": len(intent.get("files", ())), "created": intent.get("created")}
    cleaned = clean_temps(ws, intent["files"])
    try:
        verdict = oc.decide(book, intent)
    except oc.OutcomeUnknown as exc:
        return dict(line, action="deferred", reason=str(exc)), False
    if verdict == oc.SUPERSEDED:  # settled long ago; later work stands on it: touch no file
        remove_record(path)
        return dict(line, action="superseded"), True
    objects = book.store.objects
    if verdict == oc.COMMITTED:
        failed = settle_all(ws, objects, intent["files"], "to", max_bytes=NO_LIMIT)
        action = "finished"
    else:
        failed = settle_all(ws, objects, intent["files"], "backup", max_bytes=NO_LIMIT)
        remove_created_folders(ws, intent["files"])
        action = "rolled-back"
    line.update(action=action, failed=[f["rel"] for f in failed])
    if failed:
        reason = f"the interrupted {intent['operation']} could not be {action} completely"
        if not write_recovery(book.store, recovery_record(intent["id"], intent["operation"],
                                                          failed, reason)):
            return dict(line, recoveryRecord=False), False
        line["recoveryRecord"] = True
    if not cleaned:  # the files are settled; the intent stays so a later try removes our temp file
        return dict(line, tempFilesLeft=True), False
    remove_record(path)
    return line, True


def _retry(book, ws, path: Path, intent: dict, new_state):
    """A retry for `Book.unsettled`: True once the intent's outcome is durable. After a commit it
    learns of late, the live process adopts the committed state."""
    def retry() -> bool:
        line, settled = recover_one(book, ws, path, intent)
        if settled and line["action"] == "finished" and new_state is not None:
            book.adopt(new_state)
        return settled
    return retry


def clean_temps(ws, files: list[dict]) -> bool:
    """Temp files a crash left next to the files being restored are ours to remove. False when one
    could not be removed, or its removal could not be made durable: the intent that names its folder
    must stay, or nothing would find it again (a power cut undoes an unlink whose folder was not
    synced, and would bring the temp file back after the intent was gone). Each folder is listed
    once, however many of its files the transaction names."""
    clean = True
    by_folder: dict[str, set[str]] = {}
    for f in files:
        try:
            ws.check_components(f["rel"])  # no folder on the way may be a link leading out
        except (OSError, TurnbackError):
            continue
        path = ws.abs_path(f["rel"])
        by_folder.setdefault(str(path.parent), set()).add(f".{path.name}{fs.TEMP_MARK}")
    removed_in = []  # folders whose temp files were removed: each synced once, at the end
    for folder, prefixes in sorted(by_folder.items()):
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            clean = False
            continue
        ours = [n for n in names if fs.TEMP_MARK in n
                and n[:n.index(fs.TEMP_MARK) + len(fs.TEMP_MARK)] in prefixes]
        for name in ours:
            try:
                fs.unlink(Path(folder) / name, missing_ok=True)
            except OSError:
                clean = False
        if ours:
            removed_in.append(folder)
    for folder in removed_in:
        try:
            fs.fsync_dir(folder)  # the removals are durable before the intent naming them goes
        except OSError:
            clean = False
    return clean
