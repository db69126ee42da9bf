"""The store folder: its FORMAT record, its sub-folders, and where each kind of file lives.

Creation order makes a half-created store harmless: folders and .gitignore first, FORMAT last and by
exclusive create, so two processes creating the same store agree on one store id and seed. A folder
without FORMAT is finished on the next open (create=True) or reported as not a store (create=False).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

from ..errors import InvalidParams, NewerFormat, NotFound, RecordError, SymlinkRefused
from . import fs, trust
from .objects.digest import Hasher, new_seed
from .heads import HeadStore
from .objects.objectstore import ObjectStore
from .records import decode_record, encode_record

# 2: objects may be zstd envelopes (store/objects/envelope.py); images carry their modes.
# 3: objects may live in packs (store/objects/packs.py), some of them as deltas.
# 4: old heads may live in the pack of old heads (store/objects/headpack.py): a format-3 turnback would not
#    see them, and its collector would delete what they reference.
# 5: pack indexes of version 2 (their tables in one zstd frame, store/objects/packformat.py): a format-4
#    turnback would take every new pack for a broken one and miss its objects.
FORMAT_VERSION = 5
READABLE_FORMATS = (1, 2, 3, 4, 5)  # an older store reads as it is; its owner's open upgrades it
KINDS = ("heads", "pid")
SUBDIRS = ("objects", "heads", "journal", "recovery", "txn", "cache", "sessions")
# Names a store folder may contain; anything else means the path is not (only) a turnback store.
KNOWN_NAMES = frozenset(SUBDIRS) | {"FORMAT", ".gitignore", "lease.cbor", "lease.lock", "pid.lock",
                                    "pid.flock", "sidecar.cbor",
                                    "run",  # the live owner's socket folder (remote/paths.py)
                                    "agents", "config.toml"}  # agents/: agents/agentrecord.py
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class Store:
    """An opened store. Opening never takes ownership; see `ownership()`."""

    def __init__(self, path: Path, kind: str, store_id: str, seed: int, created: float,
                 version: int = FORMAT_VERSION):
        self.path = path
        self.version = version
        self.kind = kind
        self.store_id = store_id
        self.created = created
        self.hasher = Hasher(seed)
        self.objects = ObjectStore(path / "objects", self.hasher, compress=version >= 2,
                                   pack=version >= 3)
        self.heads = HeadStore(path / "heads")  # present for both kinds; pid stores leave it empty
        self.format_path = path / "FORMAT"
        self.journal_dir = path / "journal"
        self.recovery_dir = path / "recovery"
        self.txn_dir = path / "txn"
        self.cache_dir = path / "cache"
        self.sidecar_path = path / "sidecar.cbor"
        self.lease_path = path / "lease.cbor"
        self.pid_lock_path = path / "pid.lock"

    @classmethod
    def open(cls, path: str | os.PathLike, *, kind: str | None = "heads", create: bool = True) -> "Store":
        """Open (and with `create`, create or finish creating) the store at `path`.

        `kind=None` accepts whatever kind the store has. With create=False nothing is written.
        """
        path = Path(path)
        if kind is not None and kind not in KINDS:
            raise InvalidParams(f"unknown store kind {kind!r}; expected one of {KINDS}")
        if path.is_symlink():
            raise SymlinkRefused(f"the store folder {path} is a symbolic link; refusing to follow it",
                                 data={"path": str(path)})
        trust.require_store(path)  # another user's, or open to others: never read, never written
        # From now on the store folder itself is reached from its parent without following a link:
        # a store moved away and linked back mid-session gets no write (store/fs/anchored.py).
        fs.fence_root(path.absolute().parent)
        fmt = path / "FORMAT"
        if not os.path.lexists(fmt):
            if not create:
                raise NotFound(f"no turnback store at {path}", data={"path": str(path)})
            if kind is None:
                raise InvalidParams("a new store needs a kind")
            cls._create(path, kind)
        store = cls._from_format(path)
        if kind is not None and store.kind != kind:
            raise InvalidParams(f"the store at {path} is a {store.kind!r} store, not {kind!r}",
                                data={"path": str(path), "kind": store.kind})
        if create:
            for name in SUBDIRS:
                if not (path / name).is_dir():
                    fs.mkdir(path / name)
            if store.version < FORMAT_VERSION:
                store._upgrade()
        return store

    def _upgrade(self) -> None:
        """Say the current format in FORMAT (same id, seed and kind), then write envelopes and packs
        (objects, and old heads). Every older object and head stays valid as it is (the collector
        packs the small ones later); only a turnback that reads this format may open it after. One atomic replace: a crash leaves
        the old FORMAT or the new one, and either reads."""
        body = decode_record(fs.read_file(self.format_path), path=str(self.format_path), kind="format")
        fs.write_atomic(self.format_path, encode_record("format", {**body, "format": FORMAT_VERSION}))
        self.version = FORMAT_VERSION
        self.objects.compress = True
        self.objects.pack = True

    @classmethod
    def _create(cls, path: Path, kind: str) -> None:
        if path.is_dir():
            strangers = sorted(n for n in os.listdir(path)
                               if n not in KNOWN_NAMES and not fs.is_temp_name(n))
            if strangers:
                raise InvalidParams(f"{path} exists and is not a turnback store (it holds {strangers[:3]})",
                                    data={"path": str(path)})
        fs.mkdir(path)
        for name in SUBDIRS:
            fs.mkdir(path / name)
        if not os.path.lexists(path / ".gitignore"):
            fs.write_atomic(path / ".gitignore", b"*\n")
        body = {"format": FORMAT_VERSION, "store_id": uuid.uuid4().hex, "kind": kind,
                "seed": new_seed(), "created": time.time()}
        fs.create_exclusive(path / "FORMAT", encode_record("format", body))  # loser reads the winner's

    @classmethod
    def _from_format(cls, path: Path) -> "Store":
        fmt = path / "FORMAT"
        body = decode_record(fs.read_file(fmt), path=str(fmt), kind="format")
        version = body.get("format")
        if isinstance(version, int) and version > FORMAT_VERSION:
            raise NewerFormat(f"the store at {path} has format {version}; this turnback reads up to "
                              f"format {FORMAT_VERSION}. Upgrade turnback to use it.",
                              data={"path": str(path), "version": version})
        kind, store_id, seed = body.get("kind"), body.get("store_id"), body.get("seed")
        if (version not in READABLE_FORMATS or kind not in KINDS or not isinstance(store_id, str)
                or not isinstance(seed, int) or not 0 <= seed < 1 << 64):
            raise RecordError(f"corrupt record {fmt}: FORMAT fields are missing or invalid",
                              data={"path": str(fmt), "offset": 4})
        return cls(path, kind, store_id, seed, float(body.get("created", 0.0)), version)

    def journal_path(self, session_id: str) -> Path:
        if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
            raise InvalidParams(f"invalid session id for a journal name: {session_id!r}")
        return self.journal_dir / f"{session_id}.wal"

    def ownership(self, **kwargs):
        """Acquire this store's ownership (Lease for heads stores, PidLock for pid stores)."""
        from .ownership.owners import open_ownership

        return open_ownership(self.path, self.kind, **kwargs)

    def sweep_temp(self, older_than: float = 0.0) -> list[Path]:
        """Remove leftover temp files (from crashes). Owner only: a temp file may belong to a write
        in progress, which only the owner performs. Returns what was removed."""
        removed = []
        cutoff = time.time() - older_than
        for folder in [self.path, *(self.path / n for n in SUBDIRS), *self._fanouts(),
                       self.objects.packs.folder]:
            try:
                entries = list(os.scandir(folder))
            except FileNotFoundError:
                continue
            for e in entries:
                if fs.is_temp_name(e.name) and e.is_file(follow_symlinks=False) \
                        and e.stat(follow_symlinks=False).st_mtime <= cutoff:
                    fs.unlink(e.path, missing_ok=True)
                    removed.append(Path(e.path))
        removed += self._orphan_packs()
        return removed

    def _orphan_packs(self) -> list[Path]:
        """A pack whose index never appeared (a crash between the two renames) holds nothing anyone
        can see; the owner removes it at open."""
        folder = self.objects.packs.folder
        try:
            names = set(os.listdir(folder))
        except FileNotFoundError:
            return []
        orphans = [folder / n for n in sorted(names) if n.endswith(".pack") and len(n) == 37
                   and not fs.is_temp_name(n) and n[:-5] + ".idx" not in names]
        for p in orphans:
            fs.unlink(p, missing_ok=True)
        return orphans

    def _fanouts(self) -> list[Path]:
        try:
            return [Path(e.path) for e in os.scandir(self.objects.root)
                    if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return []
