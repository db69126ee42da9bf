"""Published heads: tiny immutable records `heads/%012d.cbor`, one per publication.

The next sequence number is claimed by an exclusive create of its file name: that create is the
compare-and-swap between writers. The record is small on purpose; what a head references lives in its
body object, so a cold scan reads only these facts. Kept heads older than the newest `LOOSE_NEWEST`
are moved by the collector into one file, `heads/packed.cbor` (store/objects/headpack.py), with the same
bytes; every read looks at the loose name first, then at the pack.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import HeadRace, InvalidParams, RecordError
from . import fs
from .objects import headpack
from .objects.digest import Digest, is_digest
from .records import decode_record, encode_record

KIND = "head"
EPOCH_WINDOW = 16  # how many of the newest heads `current` weighs against each other
# The newest heads always stay loose files (publication, `current` and a stalled writer's compare-and-
# swap see only loose names); the collector packs kept heads older than these. Above EPOCH_WINDOW.
LOOSE_NEWEST = 64
_NAME = re.compile(r"^(\d{12})\.cbor$")


@dataclass(frozen=True)
class HeadRecord:
    seq: int
    parent: int | None
    session: str
    created: float
    turn_count: int
    fork_point: str
    settled: bool
    epoch: int
    body: Digest  # object digest of the head body
    last_prompt: str = ""
    txn: str | None = None

    def to_body(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_body(cls, body: dict, *, path: str) -> "HeadRecord":
        try:
            rec = cls(**{f.name: body[f.name] for f in dataclasses.fields(cls) if f.name in body})
        except TypeError as exc:
            raise RecordError(f"corrupt head record {path}: {exc}", data={"path": path}) from None
        _check_types(rec, path)
        return rec


def _check_types(rec: HeadRecord, path: str) -> None:
    ok = (isinstance(rec.seq, int) and rec.seq >= 1
          and (rec.parent is None or (isinstance(rec.parent, int) and 0 <= rec.parent < rec.seq))
          and isinstance(rec.session, str) and isinstance(rec.created, (int, float))
          and isinstance(rec.turn_count, int) and rec.turn_count >= 0
          and isinstance(rec.fork_point, str) and isinstance(rec.settled, bool)
          and isinstance(rec.epoch, int) and is_digest(rec.body)
          and isinstance(rec.last_prompt, str) and (rec.txn is None or isinstance(rec.txn, str)))
    if not ok:
        raise RecordError(f"corrupt head record {path}: a field has the wrong type or range",
                          data={"path": path})


def head_name(seq: int) -> str:
    return "%012d.cbor" % seq


class HeadStore:
    def __init__(self, dir: str | os.PathLike):
        self.dir = Path(dir)

    def path(self, seq: int) -> Path:
        return self.dir / head_name(seq)

    def loose_seqs(self) -> list[int]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _NAME.match(n)))

    def packed(self) -> dict[int, headpack.Packed]:
        """The packed heads (RecordError when the pack is damaged)."""
        return headpack.read(self.dir)

    def list_seqs(self) -> list[int]:
        loose = self.loose_seqs()  # listed before the pack is read: a head the collector packs
        packed = self.packed()     # meanwhile is in the pack by the time its loose name is gone
        return sorted(set(loose).union(packed)) if packed else loose

    def read(self, seq: int) -> HeadRecord:
        where = str(self.path(seq))
        try:
            data = fs.read_file(where)
        except FileNotFoundError:
            entry = self.packed().get(seq)
            if entry is None:
                raise
            data, where = entry.data, f"{headpack.path_in(self.dir)} (head {seq})"
        return decode_head(data, seq, where)

    def current(self) -> HeadRecord | None:
        """The head in force: the newest one not superseded, or None for a store without heads.

        Passed over: a 0-byte placeholder (a publication that crashed before its bytes arrived, see
        `fs.create_exclusive`), and a head stamped with an epoch lower than an earlier head's (an
        owner that stalled past its lease published after another had taken over). Damage to the
        newest candidate is raised, never silently skipped; older heads only bound the epoch.
        """
        seqs = (self.loose_seqs() or self.list_seqs())[-EPOCH_WINDOW:]
        best: HeadRecord | None = None
        best_error: Exception | None = None
        top = -1
        for seq in seqs:
            if fs.is_placeholder(self.path(seq)):
                continue
            try:
                rec = self.read(seq)
            except (RecordError, OSError) as exc:
                best, best_error = None, exc
                continue
            if rec.epoch >= top:
                best, best_error, top = rec, None, rec.epoch
        if best_error is not None:
            raise best_error
        return best

    def clear_placeholders(self) -> list[int]:
        """Remove the empty names crashed publications left (owner only, at open); returns them."""
        gone = [seq for seq in self.loose_seqs()[-EPOCH_WINDOW:] if fs.is_placeholder(self.path(seq))]
        for seq in gone:
            fs.unlink(self.path(seq), missing_ok=True)
        if gone:
            fs.fsync_dir(self.dir)
        return gone

    def publish(self, *, parent: int | None, session: str, created: float, turn_count: int,
                fork_point: str, settled: bool, epoch: int, body: str, last_prompt: str = "",
                txn: str | None = None, expect_seq: int | None = None) -> HeadRecord:
        """Publish the next head durably and return it.

        The seq is max+1 (or `expect_seq` if given). Raises HeadRace if another writer took that
        number first; the caller re-reads the current head and decides again. The body object must
        already be durable: a head is only ever written after what it references.
        """
        if not is_digest(body):
            raise InvalidParams(f"head body is not an object digest: {body!r}")
        if expect_seq is None:
            seqs = self.list_seqs()
            seq = (seqs[-1] if seqs else 0) + 1
        else:
            seq = expect_seq
            if seq <= max(self.packed(), default=0):  # a packed head has no loose name to collide with
                raise HeadRace(f"head {seq} was published long ago", data={"seq": seq})
        rec = HeadRecord(seq=seq, parent=parent, session=session, created=float(created),
                         turn_count=turn_count, fork_point=fork_point, settled=settled, epoch=epoch,
                         body=body, last_prompt=last_prompt, txn=txn)
        _check_types(rec, str(self.path(seq)))
        if not self.dir.is_dir():
            fs.mkdir(self.dir)
        if not fs.create_exclusive(self.path(seq), encode_record(KIND, rec.to_body())):
            raise HeadRace(f"head {seq} was published by another writer", data={"seq": seq})
        return rec

    def retire(self, seq: int) -> None:
        """Remove a head, loose or packed, durably. For the collector only."""
        fs.unlink(self.path(seq), missing_ok=True)
        fs.fsync_dir(self.dir)
        self.repack(add=(), drop=(seq,))

    def pack_old(self, *, drop=()) -> list[int]:
        """Pack every loose head older than the newest LOOSE_NEWEST heads, and take the retired
        `drop` out of the pack; the seqs moved (the collector's, after its retirements)."""
        loose = self.loose_seqs()
        packed = self.packed()
        every = sorted(set(loose).union(packed))
        cutoff = every[-LOOSE_NEWEST] if len(every) > LOOSE_NEWEST else 0
        return self.repack(add=[s for s in loose if s < cutoff], drop=[s for s in drop if s in packed])

    def repack(self, *, add, drop) -> list[int]:
        """Move the loose heads `add` into the pack and take `drop` out of it; the seqs moved.

        The new pack is durable before any loose copy goes, so a crash between leaves a head in both
        places (the same bytes), never in neither. Each loose record is checked before it is packed:
        a damaged one stays loose, for fsck to name. For the collector only (one writer)."""
        entries = dict(self.packed())
        changed = False
        for seq in drop:
            changed |= entries.pop(seq, None) is not None
        moved = []
        for seq in add:
            try:
                data, st = fs.read_file_and_stat(self.path(seq))
                decode_head(data, seq, str(self.path(seq)))
            except (FileNotFoundError, RecordError):  # gone meanwhile, or damaged: stays as it is
                continue
            entries[seq] = headpack.Packed(st.st_mtime_ns, data)
            moved.append(seq)
        if not changed and not moved:
            return []
        headpack.write(self.dir, entries)
        for seq in moved:
            fs.unlink(self.path(seq), missing_ok=True)
        if moved:
            fs.fsync_dir(self.dir)
        return moved


def decode_head(data: bytes, seq: int, where: str) -> HeadRecord:
    """The head record `seq` in `data` (a loose file's bytes, or a packed entry's)."""
    rec = HeadRecord.from_body(decode_record(data, path=where, kind=KIND), path=where)
    if rec.seq != seq:
        raise RecordError(f"corrupt head record {where}: it says seq {rec.seq}", data={"path": where})
    return rec
