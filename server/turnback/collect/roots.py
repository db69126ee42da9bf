"""Roots besides heads: journal pins, transaction intents, recovery records, the live state.

Every reader here is read-only. The rule for records that carry digests is deliberately blunt: walk
the record recursively and pin every string that is an object digest (32 lowercase hex). That covers
every operation shape the reducer knows (`image` before/after, `seen` images, step `result`s,
`instructions` snapshots) and any shape added later, at the price of perhaps keeping an object that a
string merely happens to name, which is harmless.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..store import fs, journal as journal_mod
from ..store.objects.digest import is_digest
from ..store.records import read_record
from ..timeline.staterefs import NOT_DIGESTS


def digests_in(value, out: set[str]) -> set[str]:
    """Every object digest mentioned anywhere in a decoded CBOR value (keys included)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if is_digest(v):
                out.add(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return out


class StateRefs:
    """The live state's objects (`staterefs.state_refs`) for a collection that looks again after
    every change: it reads only the parts that may have changed since its last look, in steps (a
    storm's every hook made each whole look hold the owner's loop 22 to 26 ms at 20,000 files, and a
    first look reads everything). Pins never shrink in a run, so what a look adds is added to what
    earlier looks of the same collection added.

    A part is read in one step, after its mark is taken, so a part changed at a yield is read again
    by the next pass: `iter_add` for the steps, then `add` (no yield: only what moved meanwhile) in
    the step that returns. The parts and their marks: a known-image shard and its generation (every
    change of one goes through `KnownMap`, which bumps it); a turn and its state, file count and
    step count (the running turn always: the reducer changes a file entry in place only there, and
    the same image goes into the known map); a bucket of loose changes, its length and how many
    pairs the reducer replaced in place (`SessionState.between_edits`: the new after-image also goes
    into the known map, but a later `seen` may replace it there before the look reads the shard). A
    different state object, or a different known map, is read whole."""

    STEP = 2048  # digests gathered per step

    def __init__(self) -> None:
        self._state = None  # held, so the ids below cannot be reused while they are remembered
        self._turns: dict[int, tuple] = {}  # id(turn) -> (turn, its mark)
        self._map = None
        self._generations: list[int | None] = []
        self._buckets: dict[int, tuple] = {}  # k -> (bucket, (its length, its edits))

    def add(self, state, out: set[str]) -> None:
        for _ in self._iter(state, out, None):
            pass

    def iter_add(self, state, out: set[str]):
        yield from self._iter(state, out, self.STEP)

    def _iter(self, state, out: set[str], step: int | None):
        if state is not self._state:
            self._state, self._turns, self._map, self._buckets = state, {}, None, {}
        done = 0
        for turn in list(state.turns):
            mark = (turn.state, len(turn.files), len(turn.steps))
            was = self._turns.get(id(turn))
            if turn.state != "running" and was is not None and was[0] is turn and was[1] == mark:
                continue
            self._turns[id(turn)] = (turn, mark)
            for entry in turn.files.values():
                out.add(entry.before)
                out.add(entry.after)
            out.update(s.result for s in turn.steps if s.result)
            out.update(turn.instructions.values())
            done += len(turn.files) + len(turn.steps)
            if step is not None and done >= step:
                done = 0
                yield None
        known = state.known  # always a KnownMap (SessionState makes one)
        if known is not self._map:
            self._map, self._generations = known, [None] * len(known.generations)
        for i, generation in enumerate(known.generations):
            if self._generations[i] == generation:
                continue
            self._generations[i] = generation
            shard = known.shard(i)
            out.update(shard.values())
            done += len(shard)
            if step is not None and done >= step:
                done = 0
                yield None
        for k, bucket in list(state.between.items()):
            bucket_mark = (len(bucket), state.between_edits.get(k, 0))
            was = self._buckets.get(k)
            if was is not None and was[0] is bucket and was[1] == bucket_mark:
                continue
            self._buckets[k] = (bucket, bucket_mark)
            pairs = list(bucket.values())  # a copy, in the step that took the mark
            size = step or len(pairs) or 1
            for at in range(0, len(pairs), size):
                for pair in pairs[at:at + size]:
                    out.update(pair)
                if step is not None:
                    yield None
        out.difference_update(NOT_DIGESTS)


def _record_files(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder)
                      if e.name.endswith(".cbor") and not fs.is_temp_name(e.name)
                      and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []


def journal_files(store) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(store.journal_dir)
                      if (e.name.endswith(".wal") or journal_mod.is_evidence(e.name))
                      and e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []


def journal_signature(store) -> tuple:
    """Cheap identity of the journals' contents: names and sizes (journals only grow or reset)."""
    out = []
    for p in journal_files(store):
        try:
            out.append((p.name, os.stat(p).st_size))
        except FileNotFoundError:
            continue
    return tuple(out)


def journal_pins(store) -> set[str]:
    """Every digest any journal's good frames mention (the live journal and any left by an earlier
    session of this store). A torn tail is ignored, as replay ignores it."""
    pins: set[str] = set()
    JournalPins().read(store, pins)
    return pins


class JournalPins:
    """`journal_pins` for a collection that looks again and again: a journal that only grew since
    the last look (the same file, and this process, its only writer, has not cut it back) is read
    from where that look ended. A hook storm's 20,000 operations made each full re-read hold the
    owner's loop 170 ms. What it adds to `pins` it never takes back (pins never shrink in a run)."""

    CHUNK = 512  # frames read per step of `iter_read` at most
    CHUNK_BYTES = 64 << 10  # and bytes of frames: 512 frames of a sweep's `seen` held a loop 13-20 ms

    def __init__(self) -> None:
        self._seen: dict[str, tuple] = {}  # path -> (inode, cuts, size or good_end)

    def read(self, store, pins: set[str]) -> None:
        for _ in self.iter_read(store, pins):
            pass

    def iter_read(self, store, pins: set[str]):
        """`read` for a job: it yields between chunks of `CHUNK` frames. The last chunk of each
        journal reads to its end in the same step that moves on, so when it returns, `pins` holds
        every frame written up to that step."""
        for p in journal_files(store):
            key = str(p)
            try:
                st = os.stat(p)
                if journal_mod.is_evidence(p.name):  # kept as it was found: read once
                    mark = (st.st_ino, 0, st.st_size)
                    if self._seen.get(key) != mark:
                        for frame in journal_mod.salvage_frames(p):
                            digests_in(frame, pins)
                        self._seen[key] = mark
                    continue
                ino, cuts = st.st_ino, journal_mod.cuts(p)
                was = self._seen.get(key)
                start = was[2] if was is not None and was[:2] == (ino, cuts) else None
                if start is not None and st.st_size == start:
                    continue  # nothing new
                while True:
                    s = journal_mod.scan(p, start=start, max_frames=self.CHUNK,
                                         max_bytes=self.CHUNK_BYTES)
                    for frame in s.frames:
                        digests_in(frame, pins)
                    self._seen[key] = (ino, cuts, s.good_end)
                    if not s.more:
                        break
                    start = s.good_end
                    yield
                    if journal_mod.cuts(p) != cuts or os.stat(p).st_ino != ino:
                        start = None  # cut back meanwhile: this journal is read anew
                        cuts, ino = journal_mod.cuts(p), os.stat(p).st_ino
            except FileNotFoundError:
                continue


def record_names(store) -> tuple:
    return (tuple(p.name for p in _record_files(store.txn_dir)),
            tuple(p.name for p in _record_files(store.recovery_dir)))


def intents(store) -> list[tuple[Path, dict]]:
    """Transaction intent records (`txn/`): their backups, targets and new body are roots."""
    return [(p, _read(p, "intent")) for p in _record_files(store.txn_dir)]


def recoveries(store) -> list[tuple[Path, dict]]:
    """Recovery records (`recovery/`): their backups are roots until the user resolves them."""
    return [(p, _read(p, "recovery")) for p in _record_files(store.recovery_dir)]


def _read(path: Path, kind: str) -> dict:
    rec = read_record(path, kind)
    if rec is None:  # only when told a missing file is fine, which it is not here
        raise FileNotFoundError(path)
    return rec


def sidecar_body(store) -> str | None:
    """The body named by a plain file store's sidecar record (its one durable state), if any."""
    rec = read_record(store.sidecar_path, "sidecar", missing_ok=True)
    if rec is None:
        return None
    body = rec.get("body")
    return body if is_digest(body) else None
