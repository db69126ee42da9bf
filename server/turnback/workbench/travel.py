"""Rewind, Redo and the recovery records they may leave: thin wiring of `travel/` into the workbench."""

from __future__ import annotations

import os
from pathlib import Path

from ..capture.statcache import StatCache
from ..errors import CorruptStore, NotFound, TurnbackError
from ..store import fs
from ..store.records import read_record
from ..travel import redo as redo_plan
from ..travel import transaction
from ..travel.disk import put_image
from ..travel.rewind import derive_job
from ..travel.uncaptured import uncaptured_job
from ..travel.settle import settle
from ..travel.user_edits import keep_user_edits
from . import params as P
from .agentlinks import annotate
from .commit import commit_tail_job, disk_memo
from .restore import left_the_machine_job, rewind_args


NO_HEADS = ("this store keeps one sidecar record under a PID lock; it publishes no heads, so there "
            "is nothing to redo")
PENDING_SHOWN = 20  # paths listed per pending intent (the count says how many there are)
PENDING_WORDS = {
    "in-progress": "under way in the process that owns the store",
    "interrupted": "interrupted: the next process that takes the store (an editor, or any command "
                   "that changes something) finishes it or rolls it back before anything else",
    "interrupted-or-in-progress": "under way on another machine, or interrupted there",
    "unsettled": "its outcome could not be made durable yet; nothing else is changed until it is",
}


def _keep_user_edits(p: dict) -> bool:
    return P.field(p, "keepUserEdits", bool, default=False)


def uncaptured_edits_job(wb, memo=None):
    """Known paths changed on disk since turnback last captured them (travel/uncaptured.py): a
    healthy watcher names where to look, else every known path, with the stat cache's help."""
    watcher = getattr(wb, "watcher", None)
    only = watcher.pending() if watcher is not None else None
    kept = getattr(wb, "_stat_cache", None)
    cache = kept.cache if kept is not None and kept.cache is not None and not kept.partial else None
    if cache is None and only is None:
        cache = StatCache.load(wb.store.cache_dir / "stat.cbor")
    return (yield from uncaptured_job(wb.state, wb.ws, wb.store.objects.hasher,
                                      max_bytes=wb.options.max_file_bytes, cache=cache, only=only,
                                      memo=memo))


class RewindFeature:
    def __init__(self, wb):
        self.wb = wb

    def _derive_job(self, boundary, mode: str = "all", dirty=(), *, fresh: bool = False):
        wb = self.wb
        memo = disk_memo(wb, fresh=fresh)
        edits = yield from uncaptured_edits_job(wb, memo)
        return (yield from derive_job(wb.state, wb.ws, wb.store.objects, boundary,
                                      max_bytes=wb.options.max_file_bytes, mode=mode, dirty=dirty,
                                      uncaptured=edits, memo=memo))

    def prepare(self, params) -> dict:
        return self.wb.run(self.prepare_job(params))

    def prepare_job(self, params):
        p = P.obj(params)
        args = rewind_args(self.wb, p)
        settled = yield from self.wb.turns.settle_idle_job("rewind")  # an idle agent turn
        derived = yield from self._derive_job(*args, fresh=True)
        candidate = yield from left_the_machine_job(self.wb, derived.candidate)
        return annotate(dict(candidate), settled)

    def commit(self, params) -> dict:
        return self.wb.run(self.commit_job(params))

    def commit_job(self, params):
        p = P.obj(params)
        boundary, mode, dirty = rewind_args(self.wb, p)
        plan = P.field(p, "planHash", str)
        # `conflictMarkers`: with keepUserEdits, a conflicting file gets conflict markers instead of
        # staying as it is now (travel/user_edits.py)
        keep, markers = P.keep_flags(p)
        wb = self.wb
        wb.book.require_owner()
        settled = yield from wb.turns.settle_idle_job("rewind")
        derived = yield from self._derive_job(boundary, mode, dirty)
        if derived.candidate["planHash"] != plan:
            return {"status": "stale", "candidate": annotate(dict(derived.candidate), settled)}
        if derived.noop:
            return {"status": "nothing-to-do"}  # the boundary is the current state: no epoch
        if keep:
            derived = derived.keeping_user_edits(wb.state, markers=markers)
        return (yield from commit_tail_job(wb, "rewind", derived.changes, derived.new_state,
                                            derived if keep else None, derived.modes,
                                            conversation=mode != "files",
                                            announce={"operation": "rewind", "mode": mode,
                                                      "boundary": boundary}))


class RedoFeature:
    def __init__(self, wb):
        self.wb = wb

    def list(self, params=None) -> dict:
        return self.wb.run(self.list_job(params))

    def list_job(self, params=None):
        """The Redo listing as a job (`turnback/redo/list` is a read-job: a served listing runs in
        slices, the owner answering everything else meanwhile, and a client may cancel it)."""
        p = P.obj(params)
        everything = P.field(p, "all", bool, default=False)
        wb = self.wb
        if wb.store.kind != "heads":
            return {"available": False, "groups": [], "reason": NO_HEADS}
        every = yield from redo_plan.groups_job(wb.store, wb.state, wb.book.head, wb.book.codec,
                                                everything=True)
        groups = every if everything else [g for g in every if not g.get("ancestor")]
        # `hidden`: earlier moments of the current line, one `{all: true}` away
        out = {"available": bool(groups), "groups": groups, "all": everything,
               "hidden": len(every) - len(groups)}
        if not groups:
            out["reason"] = ("no state has been left behind by a rewind"
                             + (f" ({out['hidden']} earlier state(s) of this line: ask for all states)"
                                if out["hidden"] else ""))
        return out

    def _plan_job(self, head_seq, *, fresh: bool = False):
        wb = self.wb
        return redo_plan.prepare_job(wb.store, wb.book.codec, wb.state, wb.book.head, wb.ws,
                                     head_seq, max_bytes=wb.options.max_file_bytes,
                                     memo=disk_memo(wb, fresh=fresh))

    def prepare(self, params) -> dict:
        return self.wb.run(self.prepare_job(params))

    def prepare_job(self, params):
        p = P.obj(params)
        head_seq = P.field(p, "headSeq", int)
        settled = yield from self.wb.turns.settle_idle_job("redo")  # an idle agent turn
        plan = yield from self._plan_job(head_seq, fresh=True)
        return annotate(dict(plan.result), settled)

    def commit(self, params) -> dict:
        return self.wb.run(self.commit_job(params))

    def commit_job(self, params):
        p = P.obj(params)
        head_seq = P.field(p, "headSeq", int)
        plan_hash = P.field(p, "planHash", str)
        keep = _keep_user_edits(p)
        wb = self.wb
        wb.book.require_owner()
        settled = yield from wb.turns.settle_idle_job("redo")
        plan = yield from self._plan_job(head_seq)
        if plan.result["planHash"] != plan_hash:
            return {"status": "stale", "plan": annotate(dict(plan.result), settled)}
        if keep:
            plan = keep_user_edits(plan, wb.state)
        return (yield from commit_tail_job(wb, "redo", plan.changes, plan.new_state,
                                            plan if keep else None, plan.modes,
                                            conversation=plan.conversation,
                                            announce={"operation": "redo", "mode": "all",
                                                      "boundary": None, "headSeq": head_seq}))


class RecoveryFeature:
    def __init__(self, wb):
        self.wb = wb

    def _dir(self) -> Path:
        return Path(self.wb.store.recovery_dir)

    def records(self) -> list[dict]:
        """The readable recovery records; a damaged one is left out here (see `damaged`), so one
        flipped bit never stops capture, begin, status or the resolving of the others."""
        return [rec for rec in self._scan() if "damage" not in rec]

    def damaged(self) -> list[dict]:
        """Recovery records that cannot be read, by id: kept as evidence until dismissed."""
        return [rec for rec in self._scan() if "damage" in rec]

    def _scan(self) -> list[dict]:
        folder = self._dir()
        if not folder.is_dir():
            return []
        out = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".cbor") and not fs.is_temp_name(name):
                try:
                    out.append(read_record(folder / name, transaction.RECOVERY_KIND))
                except CorruptStore as exc:
                    out.append({"id": name[:-len(".cbor")], "damage": exc})
        return out

    def count(self) -> int:
        """Pending records, damaged ones included (they need the user too)."""
        return len(self._scan())

    def wire_damaged(self, record: dict) -> dict:
        exc = record["damage"]
        return {"id": record["id"], "operation": None, "created": None, "paths": [],
                "reason": f"this recovery record is damaged and cannot be read: {exc.message}",
                "backups": [], "damaged": True, "code": exc.code}

    def wire(self, record: dict) -> dict:
        to_uri = self.wb.ws.to_uri
        return {"id": record["id"], "operation": record["operation"], "created": record["created"],
                "paths": [to_uri(r) for r in record["paths"]], "reason": record["reason"],
                "backups": [{"uri": to_uri(b["rel"]), "digest": b["digest"]} for b in record["backups"]]}

    def list(self, params=None) -> dict:
        P.obj(params)
        return {"recovery": [self.wire(r) for r in self.records()]
                + [self.wire_damaged(r) for r in self.damaged()],
                "pending": self.pending(self.wb.owner_state()["state"])}

    def pending(self, owner_state: str = "live") -> list[dict]:
        """Every intent record in the store: a transaction under way (its owner runs), interrupted
        (its owner is gone: the next process that takes the store finishes or rolls it back), or
        unsettled in this very process (`recovery-pending`)."""
        wb = self.wb
        out = []
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

    def resolve(self, params) -> dict:
        p = P.obj(params)
        rid = P.field(p, "id", str)
        action = P.field(p, "action", str, choices=("retry", "dismiss"))
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

    def recover_interrupted(self) -> list[dict]:
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


def retry_record(wb, record: dict) -> list[dict]:
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


def _put_unguarded(wb, rel: str, image, mode=None) -> str | None:
    try:
        put_image(wb.ws, wb.store.objects, rel, image, mode=mode)
    except Exception as exc:  # noqa: BLE001 - reported in the record
        return f"{type(exc).__name__}: {exc}"
    return None
