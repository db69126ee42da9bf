"""The ignore rules of the last full sweep, kept so a later sweep can tell *new* from *no longer hidden*.

A path a sweep meets for the first time was either created since the last sweep, or existed all along
but was ignored then (a `.gitignore` line removed, a `!negation` added, a default entry overridden).
Only the rules that sweep used can tell the two apart: under them, a path that was ignored then has an
unknown before-image, never `absent` (docs/capture.md, "Ignore rules that change").

The snapshots live in one small self-checking CBOR file in the store's `cache/` folder, written (and
synced) only when the rules differ from the last ones, so an ordinary sweep writes nothing. Usually it
holds one snapshot; while a sweep with new rules is being folded in it holds the old and the new, and a
path counts as hidden if any of them hid it (capture/recorder.py, `_rules_moving_to`). Missing, torn or
corrupt, it loads as None, and the recorder then treats every first-seen path as unknown rather than
new: losing the cache costs a gap, never a file.
"""

from __future__ import annotations

from pathlib import Path

from ..store import fs
from .ignore import RulesSnapshot
from .sealed import seal, unseal

_MAGIC = b"TBIR"
_VERSION = 1
FILE_NAME = "ignore-rules.cbor"


def _raw(lines) -> list[bytes]:
    return [line.encode("utf-8", "surrogateescape") for line in lines]


def _text(raw) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(b, bytes) for b in raw):
        raise ValueError("bad lines")
    return tuple(b.decode("utf-8", "surrogateescape") for b in raw)


def _one(snap: RulesSnapshot) -> dict:
    return {"folders": {folder: _raw(lines) for folder, lines in sorted(snap.folders.items())},
            "exclude": None if snap.exclude is None else _raw(snap.exclude),
            "defaults": list(snap.defaults)}


def encode(snaps: list[RulesSnapshot]) -> bytes:
    return seal(_MAGIC, _VERSION, {"snapshots": [_one(s) for s in snaps]})


def decode(data: bytes) -> list[RulesSnapshot]:
    """Decode; raises ValueError on anything unexpected."""
    doc = unseal(_MAGIC, _VERSION, data, "an ignore-rules snapshot")
    snaps = doc.get("snapshots")
    if not isinstance(snaps, list) or not snaps:
        raise ValueError("no snapshots")
    return [_snapshot(one) for one in snaps]


def _snapshot(doc) -> RulesSnapshot:
    if not isinstance(doc, dict):
        raise ValueError("bad snapshot")
    folders, defaults = doc.get("folders"), doc.get("defaults")
    if not isinstance(folders, dict) or not all(isinstance(k, str) for k in folders):
        raise ValueError("bad folders")
    if not isinstance(defaults, list) or not all(isinstance(p, str) for p in defaults):
        raise ValueError("bad defaults")
    exclude = doc.get("exclude")
    return RulesSnapshot({k: _text(v) for k, v in folders.items()},
                         None if exclude is None else _text(exclude), tuple(defaults))


def load(path: Path | str) -> list[RulesSnapshot] | None:
    try:
        return decode(fs.read_file(path))
    except Exception:  # noqa: BLE001 - rebuildable: any failure means "not known"
        return None


def save(path: Path | str, snaps: list[RulesSnapshot]) -> None:
    """Replace the file atomically and durably: the order of this write and the journal's is what
    keeps a crash from ever judging a hidden file by rules that did not hide it."""
    p = Path(path)
    fs.mkdir(p.parent, mode=0o700, parents=True, exist_ok=True, sync=True)
    fs.write_atomic(p, encode(snaps), mode=0o600, sync=True)
