"""Read-only consistency check of a store. It reports; it never repairs or cuts anything.

Severity: "error" makes the report not ok; "warning" is something the next owner's open tidies up on
its own (a torn journal tail, a temp file left by a crash) and does not make the report not ok;
"note" is a fact worth knowing that is no fault: an intent record pending (`pending`), a transaction
interrupted by a crash (or running now) that the next owner's open finishes or rolls back. A store
with a pending intent is sound: fsck exits 0 and says so, with the note.
"""

from __future__ import annotations

import os
import stat as statmod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CorruptStore
from . import fsck_packs, fs, journal
from .objects import headpack, loose
from .objects.digest import is_digest
from .heads import HeadStore, decode_head
from .layout import KNOWN_NAMES, SUBDIRS, Store
from .records import decode_record

# Deeper checks added by other floors (e.g. head body contents): called as check(store, report).
EXTRA_CHECKS: list[Callable[[Store, "FsckReport"], None]] = []

_RECORD_FILES = {"lease.cbor": "lease", "pid.lock": "pidlock", "sidecar.cbor": None}


@dataclass(frozen=True)
class Problem:
    path: str
    what: str
    severity: str = "error"


@dataclass
class FsckReport:
    path: str
    problems: list[Problem] = field(default_factory=list)
    objects_checked: int = 0
    records_checked: int = 0
    pending: list[dict] = field(default_factory=list)  # intents: {path, id, operation, files, created}

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def add(self, path: str | os.PathLike, what: str, severity: str = "error") -> None:
        self.problems.append(Problem(str(path), what, severity))


def fsck(store_path: str | os.PathLike) -> FsckReport:
    root = Path(store_path)
    report = FsckReport(str(root))
    if root.is_symlink() or not root.is_dir():
        report.add(root, "not a store folder (missing, or a symbolic link)")
        return report
    _check_permissions(root, report)
    try:
        store = Store.open(root, kind=None, create=False)
        report.records_checked += 1
    except (CorruptStore, OSError) as exc:
        report.add(root / "FORMAT", f"unreadable FORMAT: {getattr(exc, 'message', exc)}")
        store = None
    except Exception as exc:  # NotFound, InvalidParams: still not a usable store
        report.add(root / "FORMAT", str(exc))
        store = None
    for name in SUBDIRS:
        if not (root / name).is_dir():
            report.add(root / name, "missing folder", "warning")
    for name in sorted(os.listdir(root)):
        if name not in KNOWN_NAMES and not fs.is_temp_name(name):
            report.add(root / name, "unexpected entry in the store folder", "warning")
    _check_records(root, report)
    heads = _check_heads(root, report)
    _check_journals(root, report)
    if store is not None:
        _check_objects(store, report)
        lease_epoch = _lease_epoch(root)
        for rec in heads:
            if not store.objects.has(rec.body):
                report.add(store.heads.path(rec.seq), f"head {rec.seq} body object {rec.body} is missing")
            if lease_epoch is not None and rec.epoch > lease_epoch:
                report.add(store.heads.path(rec.seq),
                           f"head {rec.seq} carries epoch {rec.epoch}, newer than the lease's {lease_epoch}")
        for check in EXTRA_CHECKS:
            try:
                check(store, report)
            except Exception as exc:  # a broken check must not hide the rest of the report
                report.add(root, f"check {getattr(check, '__name__', check)!s} failed: {exc!r}")
    return report


def _check_permissions(root: Path, report: FsckReport) -> None:
    _check_mode(root, report)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            _check_mode(p, report)
            if fs.is_temp_name(name):
                report.add(p, "temp file left by an interrupted write", "warning")


def _check_mode(p: Path, report: FsckReport) -> None:
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return  # removed since it was listed: a live owner's collection (issue 43, G)
    mode = statmod.S_IMODE(st.st_mode)
    if statmod.S_ISLNK(st.st_mode):
        report.add(p, "symbolic link inside the store")
    elif statmod.S_ISDIR(st.st_mode) and mode != 0o700:
        report.add(p, f"folder mode is {mode:o}, expected 700")
    elif statmod.S_ISREG(st.st_mode) and mode != 0o600:
        report.add(p, f"file mode is {mode:o}, expected 600")
    elif statmod.S_ISSOCK(st.st_mode) and p.parent.name == "run" and p.parent.parent.name:
        if mode != 0o600:  # the live owner's private socket (remote/paths.py), or a dead one's
            report.add(p, f"socket mode is {mode:o}, expected 600")
    elif not (statmod.S_ISDIR(st.st_mode) or statmod.S_ISREG(st.st_mode) or statmod.S_ISLNK(st.st_mode)):
        report.add(p, "special file inside the store")


def _check_record(path: Path, kind: str | None, report: FsckReport) -> dict | None:
    try:
        body = decode_record(fs.read_file(path), path=str(path), kind=kind)
    except CorruptStore as exc:
        report.add(path, exc.message)
        return None
    except OSError as exc:
        report.add(path, f"unreadable: {exc}")
        return None
    report.records_checked += 1
    return body


def _check_records(root: Path, report: FsckReport) -> None:
    for name, kind in _RECORD_FILES.items():
        if os.path.lexists(root / name):
            _check_record(root / name, kind, report)
    for p in _files(root / "recovery"):
        _check_record(p, None, report)
    for p in _files(root / "txn"):
        intent = _check_record(p, None, report)
        if intent is None:
            continue
        files = intent.get("files") if isinstance(intent.get("files"), list) else []
        what = intent.get("operation") or "transaction"
        report.pending.append({"path": str(p), "id": intent.get("id"), "operation": what,
                               "files": len(files), "created": intent.get("created")})
        report.add(p, f"an interrupted {what} ({len(files)} file(s)) is pending, or one is under way: "
                      "the next process that takes the store finishes it or rolls it back", "note")


def _check_heads(root: Path, report: FsckReport) -> list:
    heads = HeadStore(root / "heads")
    good = []
    known = set(heads.loose_seqs())
    for p in _files(root / "heads"):
        if (p.name[:-5].isdigit() and p.name.endswith(".cbor") and len(p.name) == 17
                or p.name == headpack.NAME):
            continue
        report.add(p, "unexpected file in heads/")
    try:
        packed = heads.packed()
        if packed:
            report.records_checked += 1
    except CorruptStore as exc:
        report.add(headpack.path_in(heads.dir), f"the pack of old heads is damaged: {exc.message}")
        packed = {}
    except OSError as exc:
        report.add(headpack.path_in(heads.dir), f"the pack of old heads is unreadable: {exc}")
        packed = {}
    for seq in sorted(known.intersection(packed)):  # a crash between the pack and the unlinks
        try:
            same = fs.read_file(heads.path(seq)) == packed[seq].data
        except OSError:
            continue
        if not same:
            report.add(heads.path(seq), f"head {seq} differs from its copy in the pack of old heads")
    for seq in sorted(set(packed) - known):
        try:
            good.append(decode_head(packed[seq].data, seq, f"{headpack.path_in(heads.dir)} (head {seq})"))
            report.records_checked += 1
        except CorruptStore as exc:
            report.add(headpack.path_in(heads.dir), exc.message)
    for seq in sorted(known):
        try:
            good.append(heads.read(seq))
            report.records_checked += 1
        except CorruptStore as exc:
            report.add(heads.path(seq), exc.message)
        except OSError as exc:
            report.add(heads.path(seq), f"unreadable: {exc}")
    return good


def _check_journals(root: Path, report: FsckReport) -> None:
    for p in _files(root / "journal"):
        if journal.is_evidence(p.name):
            report.add(p, "a damaged journal kept as evidence (its readable frames are pinned); "
                          "remove it once you have looked at it", "warning")
            continue
        if not p.name.endswith(".wal"):
            report.add(p, "unexpected file in journal/")
            continue
        try:
            s = journal.scan(p)
        except CorruptStore as exc:
            report.add(p, exc.message)
            continue
        if s.damage is not None:
            report.add(p, f"damaged at byte {s.damage.offset} ({s.damage.reason}) with "
                          f"{s.damage.later_frames} valid frame(s) after it; kept as evidence on "
                          "the next open")
        if s.torn is not None:
            report.add(p, f"torn tail at byte {s.torn.offset}: {s.torn.dropped_bytes} bytes "
                          f"({s.torn.reason}); cut on the next open", "warning")


def _check_objects(store: Store, report: FsckReport) -> None:
    root = store.objects.root
    for fan in sorted(os.scandir(root), key=lambda e: e.name) if root.is_dir() else []:
        if fs.is_temp_name(fan.name) or fan.name == "pack":
            continue
        if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
            report.add(fan.path, "unexpected entry in objects/")
            continue
        try:
            entries = sorted(os.listdir(fan.path))
        except FileNotFoundError:
            continue  # an emptied fan-out folder a live owner's collection removed meanwhile
        for entry in entries:
            if fs.is_temp_name(entry):
                continue
            digest = fan.name + entry
            if not is_digest(digest):
                report.add(Path(fan.path, entry), "unexpected file in objects/")
                continue
            report.objects_checked += 1
            path = store.objects.path(digest)
            try:
                damage = loose.damage(path, digest, store.hasher, store.objects.limit)
            except FileNotFoundError:
                continue  # a live owner packed or collected it meanwhile: the packs are checked below
            if damage is not None:
                report.add(path, f"object {digest} is damaged: {damage}")
    fsck_packs.check_packs(store, report)  # objects/pack/: indexes, packs, objects inside them


def _lease_epoch(root: Path) -> int | None:
    try:
        body = decode_record(fs.read_file(root / "lease.cbor"), path="lease.cbor", kind="lease")
    except (OSError, CorruptStore):
        return None
    return body.get("epoch") if isinstance(body.get("epoch"), int) else None


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder)
                      if e.is_file(follow_symlinks=False) and not fs.is_temp_name(e.name))
    except FileNotFoundError:
        return []
