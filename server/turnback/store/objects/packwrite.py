"""Writing one pack: objects gathered into solid zstd blocks, deltas beside them, then the index.

The pack and its index are built as temp files in `objects/pack/` and never synced here: the caller
makes them durable in its one pass (an object batch syncs everything it wrote at once), then
`publish` renames the pack, then the index (the index is what makes the pack's objects visible), and
the caller syncs the folder. `discard` removes whatever was written. Every write goes through the
file-system seam.

Blocks: objects are appended to the current block until it would pass `block_raw` raw bytes; a
block is compressed as one frame on a helper thread (zstd releases the GIL), at most `IN_FLIGHT`
blocks at a time, and written in order. Blocks are small (256 KiB at put time, 512 KiB when the
collector repacks) so that reading one object inflates at most its block, never megabytes: the 8 MiB
blocks of earlier versions made a Redo listing of 100 mypy turns spend 17 of its 20 s inflating them.
Similar files still share their bytes inside a block (the collector orders objects by path), and the
collector makes its blocks at a higher level on its helper thread (`REPACK_LEVEL`), which more than
wins back what the smaller window costs; docs/performance.md ("Pack layout") has the figures.
Deltas are frames of their own (delta.py), against a base in the same pack.

Writes: once a pack has a compressing thread it has a writing thread too, and every write after that
(blocks, delta frames) goes to it, in the order they were made: a 2 MiB frame's `write` costs about
5 ms of the kernel's time on these machines, which on the caller's thread held an event loop 8 to
15 ms. Offsets are known when a write is queued (its length is); a read-back of a segment waits
for the writes that start below its end, the trailer's hash and the close for all of them
(`_written`), and a failed write fails the next call that queues or waits, never silently: nothing
is written after a write that failed.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import xxhash
import zstandard

from . import delta, zstdctx
from .. import fs, memory, waiting
from .packformat import (BLOCK, DELTA, PACK_HEADER, RAW, TRAILER, PackFiles, Segment,
                         encode_index, pack_header, segment_check)

BLOCK_RAW = 256 << 10  # put time: what one object's read inflates at most (besides itself)
LEVEL = 3
REPACK_BLOCK_RAW = 512 << 10  # the collector's blocks
REPACK_LEVEL = 19  # the collector's level, on its helper thread (about 2.5 MB/s of raw bytes)
REPACK_LEVEL_BIG = 9  # ...past REPACK_LEVEL_BYTES of raw bytes in one pack (a big first repack)
REPACK_LEVEL_BYTES = 64 << 20
INDEX_HIGH_MAX = 20_000  # the collector's index at its level up to this many objects (0.1 s)
IN_FLIGHT = 2  # blocks being compressed at once (memory: about 3 x BLOCK_RAW)
# Past this many a block's `add` waits for the oldest (memory stays bounded); a job waits in slices
# before that (`iter_settle`), so an event loop never blocks on the compressing thread.
IN_FLIGHT_MAX = 4 * IN_FLIGHT
INLINE_BLOCK = 32 << 10  # smaller blocks are compressed on the caller's thread (well under 1 ms)
_QUEUED_MAX = 1024  # writes queued at most (delta frames are many and small; blocks are fewer)
_KEEP_SMALL = 1024  # objects this small stay readable from memory while the pack is built
_KEEP_SMALL_TOTAL = 8 << 20
Compressed = tuple[int, bytes, int]  # a block as written: (kind, stored bytes, checksum)


def _block_compressor(level: int) -> zstandard.ZstdCompressor:
    # The window covers the biggest block a writer makes, and the parameters are zstd's for inputs
    # of that size (a level-19 compressor tuned for unknown sizes holds about 80 MiB of tables).
    params = zstandard.ZstdCompressionParameters.from_level(
        level, source_size=REPACK_BLOCK_RAW, window_log=_window_log(REPACK_BLOCK_RAW),
        write_checksum=0, write_content_size=1)
    return zstandard.ZstdCompressor(compression_params=params)


def _window_log(size: int) -> int:
    return max(17, (size - 1).bit_length())


_compressors: dict[int, zstdctx.Kept] = {}  # level -> kept contexts (a few MiB each once used)


def _kept_for(level: int) -> zstdctx.Kept:
    kept = _compressors.get(level)
    if kept is None:
        kept = _compressors.setdefault(level, zstdctx.Kept(lambda: _block_compressor(level), keep=1))
    return kept


def compress_block(pieces: list[bytes], raw_len: int, level: int = LEVEL) -> Compressed:
    """(kind, stored, check) of one block made of `pieces` (raw_len bytes in all): a zstd frame, or
    the raw bytes when compression does not pay. The pieces are streamed into the compressor, not
    joined first: joining a big block is one call that holds the interpreter lock for milliseconds."""
    with _kept_for(level).use() as c:
        if len(pieces) == 1:
            frame = c.compress(pieces[0])
        else:
            stream = c.compressobj(size=raw_len)
            parts = [stream.compress(piece) for piece in pieces]
            parts.append(stream.flush())
            frame = b"".join(parts)
    if len(frame) < raw_len:
        return BLOCK, frame, segment_check(frame)
    raw = b"".join(pieces)
    return RAW, raw, segment_check(raw)


def repack_level(raw_bytes: int) -> int:
    """The level of the collector's blocks once a pack holds `raw_bytes`: its highest for the
    first REPACK_LEVEL_BYTES (what a collection of a session's new objects writes), a fast one past
    them, so a first repack of a big store stays minutes shorter."""
    return REPACK_LEVEL if raw_bytes < REPACK_LEVEL_BYTES else REPACK_LEVEL_BIG


class PackWriter(PackFiles):
    def __init__(self, folder: Path, *, block_raw: int = BLOCK_RAW, repack: bool = False):
        """`repack`: the collector's pack (bigger blocks at its levels, marked so in the header)."""
        self.folder = Path(folder)
        self.repack = repack
        self.block_raw = REPACK_BLOCK_RAW if repack and block_raw == BLOCK_RAW else block_raw
        self.pack_id = os.urandom(16)
        self.name = self.pack_id.hex()
        self.pack_tmp = fs.temp_path(self.folder / f"{self.name}.pack")
        self.index_tmp: Path | None = None
        self._fd: int | None = None
        self._hash = xxhash.xxh3_128()
        self._offset = 0
        self.segments: list[Segment] = []
        # digest -> [segment number (or -1: in the open block), start, size, base digest or None]
        self.objects: dict[str, list[Any]] = {}
        self.depth: dict[str, int] = {}  # deltas only: how deep each is (whole objects are 0)
        self._block: list[bytes] = []
        self._block_members: list[str] = []
        self._block_pieces: dict[str, bytes] = {}
        self._inflight_pieces: dict[str, bytes] = {}  # objects of blocks being compressed
        self._block_size = 0
        self._inflight: deque[tuple[Future[Compressed] | None, list[str], int, Any]] = deque()
        self._pool: ThreadPoolExecutor | None = None
        self._writer: ThreadPoolExecutor | None = None  # with the pool: the ordered writes
        self._writes: deque[tuple[int, Future[None]]] = deque()  # (start offset, write), oldest first
        self._write_failed: BaseException | None = None
        self._small: dict[str, bytes] = {}
        self._small_total = 0
        self._readback: tuple[int, bytes] | None = None
        self.raw_bytes = 0
        self.block_bytes = 0  # raw bytes gone into blocks (what the collector's level is paid on)
        self.finished = False
        self.published = False

    # ---------------------------------------------------------------- adding
    def __contains__(self, digest: str) -> bool:
        return digest in self.objects

    def __len__(self) -> int:
        return len(self.objects)

    def add(self, digest: str, data: bytes) -> None:
        """Add a whole object (its bytes already hashed to `digest`)."""
        if digest in self.objects or self.finished:
            raise ValueError("an object is added to a pack once, before it is finished")
        if self._block and self._block_size + len(data) > self.block_raw:
            self._flush_block(wait=False)
        self.objects[digest] = [-1, self._block_size, len(data), None]
        self._block.append(data)
        self._block_members.append(digest)
        self._block_pieces[digest] = data
        self._block_size += len(data)
        self.raw_bytes += len(data)
        self.block_bytes += len(data)
        self._keep(digest, data)

    def add_delta(self, digest: str, data: bytes, base: str, base_data: bytes,
                  frame: bytes | None = None) -> bool:
        """Add `data` as a delta against `base` (an object of this pack) when that pays (or with
        `frame`, an existing delta frame copied as it is); False, and nothing added, otherwise."""
        if digest in self.objects or self.finished:
            raise ValueError("an object is added to a pack once, before it is finished")
        if base not in self.objects:
            raise ValueError("a delta's base must be in the same pack")
        depth = self.depth.get(base, 0) + 1
        if depth > delta.MAX_CHAIN or len(base_data) < delta.MIN_BASE:
            return False
        if frame is None:
            level = delta.collector_level(len(data)) if self.repack else delta.LEVEL
            frame = delta.worth_keeping(base_data, data, level)
            if frame is None:
                return False
        self._ensure_open()
        self.segments.append(Segment(self._offset, len(frame), len(data), DELTA,
                                     segment_check(frame)))
        self._write(frame)
        self.objects[digest] = [len(self.segments) - 1, 0, len(data), base]
        self.depth[digest] = depth
        self.raw_bytes += len(data)
        self._keep(digest, data)
        return True

    def _keep(self, digest: str, data: bytes) -> None:
        if len(data) <= _KEEP_SMALL and self._small_total < _KEEP_SMALL_TOTAL:
            self._small[digest] = data
            self._small_total += len(data)

    # ---------------------------------------------------------------- blocks
    def _ensure_open(self) -> None:
        if self._fd is None:
            if not self.folder.is_dir():
                fs.mkdir(self.folder, sync=False)  # the caller's pass syncs objects/ too
            self._fd = fs.create(self.pack_tmp)
            self._write(pack_header(self.pack_id, REPACK_LEVEL if self.repack else LEVEL))

    def _write(self, data: bytes) -> None:
        start = self._offset
        self._offset += len(data)
        if self._writer is None:
            self._append(data)
            return
        while self._writes and (self._writes[0][1].done() or len(self._writes) > _QUEUED_MAX):
            self._pop_write()  # a failed write is raised here, on our thread
        self._writes.append((start, self._writer.submit(self._append_queued, data)))

    def _append(self, data: bytes) -> None:
        fs.append(self._fd, data)
        self._hash.update(data)

    def _append_queued(self, data: bytes) -> None:
        if self._write_failed is not None:
            raise self._write_failed  # the file stops where the first failure left it
        try:
            self._append(data)
        except BaseException as exc:
            self._write_failed = exc
            raise

    def _pop_write(self) -> None:
        self._writes.popleft()[1].result()

    def _written(self, below: int | None = None) -> None:
        """Wait for every queued write (or those that start below offset `below`: the bytes up to
        there are then in the file); raise the first that failed."""
        while self._writes and (below is None or self._writes[0][0] < below):
            self._pop_write()
        if self._write_failed is not None:
            raise self._write_failed

    def _iter_writes_down_to(self, keep: int) -> Generator[Any, Any, None]:
        """Wait (a job's steps, each at most `waiting.WAIT_SLICE`) until at most `keep` writes
        are queued."""
        while len(self._writes) > keep:
            yield from waiting.wait_in_slices(self._writes[0][1])
            self._pop_write()

    @property
    def _writes_behind(self) -> bool:
        return len(self._writes) > IN_FLIGHT

    def _flush_block(self, *, wait: bool = True) -> None:
        """The open block goes to be compressed. Blocks done are written, in order; with `wait`,
        the oldest are waited for until at most IN_FLIGHT remain. Without it, only past
        IN_FLIGHT_MAX (a job waits for them in slices instead: `iter_settle`, `iter_finish`)."""
        if not self._block:
            return
        pieces, raw_len = self._block, self._block_size
        members = self._block_members
        self._block, self._block_members, self._block_size = [], [], 0
        self._inflight_pieces.update(self._block_pieces)  # readable until written
        self._block_pieces = {}
        self._ensure_open()
        level = repack_level(self.block_bytes) if self.repack else LEVEL
        if raw_len < INLINE_BLOCK:
            self._inflight.append((None, members, raw_len, compress_block(pieces, raw_len, level)))
            del pieces
        else:
            if self._pool is None:
                memory.bound_malloc()  # a big pack: its buffers must not pin memory afterwards
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="turnback-pack")
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="turnback-pack-write")
            self._inflight.append((self._pool.submit(compress_block, pieces, raw_len, level), members,
                                   raw_len, pieces))
        limit = IN_FLIGHT if wait else IN_FLIGHT_MAX
        while self._inflight and (len(self._inflight) > limit or self._oldest_done()):
            self._write_oldest()
        while len(self._writes) > limit:  # a slow disk: the queue of frames stays bounded too
            self._pop_write()

    def _oldest_done(self) -> bool:
        fut = self._inflight[0][0]
        return fut is None or fut.done()

    @property
    def backlog(self) -> bool:
        """More blocks are being compressed than IN_FLIGHT: the producer should wait (in slices)."""
        return len(self._inflight) > IN_FLIGHT or self._writes_behind

    def iter_settle(self) -> Generator[Any, Any, None]:
        """Wait (a job's steps, each at most `waiting.WAIT_SLICE`) until at most IN_FLIGHT blocks
        are being compressed, writing each one done, and at most IN_FLIGHT are queued to write."""
        while self._inflight and (len(self._inflight) > IN_FLIGHT or self._oldest_done()):
            fut = self._inflight[0][0]
            if fut is not None and not fut.done():
                yield from waiting.wait_in_slices(fut)
            self._write_oldest()
        yield from self._iter_writes_down_to(IN_FLIGHT)

    def _write_oldest(self) -> None:
        fut, members, raw_len, done = self._inflight.popleft()
        if fut is None:  # compressed inline: a small block (else `done` is its pieces)
            kind, stored, check = done
        else:
            kind, stored, check = fut.result()
        self.segments.append(Segment(self._offset, len(stored), raw_len, kind, check))
        self._write(stored)
        seg = len(self.segments) - 1
        for d in members:
            self.objects[d][0] = seg
            self._inflight_pieces.pop(d, None)
        if fut is not None:
            # The block's buffers (8 MiB of pieces, its frame) are freed on the compressing
            # thread: freeing big buffers returns them to the system (munmap), which waits for the
            # reading threads' page faults; on the loop's thread that was 30 ms at a time.
            box = [done, fut, stored]
            del done, fut, stored
            assert self._pool is not None  # it compressed this block
            self._pool.submit(box.clear)

    # ---------------------------------------------------------------- reading back (inside a batch)
    def read(self, digest: str) -> bytes:
        """The raw bytes of an object added to this pack (not verified: they never left memory or
        this process's temp file)."""
        small = self._small.get(digest)
        if small is not None:
            return small
        seg_no, start, size, base = self.objects[digest]
        if seg_no == -1:
            piece = self._block_pieces.get(digest)
            if piece is None:
                piece = self._inflight_pieces.get(digest)
            if piece is not None:
                return piece
            self._drain()  # in a block being compressed: wait for it, then read it back
            return self.read(digest)
        seg = self.segments[seg_no]
        if seg.kind == DELTA:
            return delta.decode(self.read(base), self._stored(seg), size)
        if self._readback is None or self._readback[0] != seg_no:
            stored = self._stored(seg)
            if seg.kind == BLOCK:
                from .packs import inflate

                stored = inflate(stored, seg.raw)
            self._readback = (seg_no, stored)
        return self._readback[1][start:start + size]

    def _stored(self, seg: Segment) -> bytes:
        self._written(below=seg.offset + seg.stored)
        fd = fs.open_read(self.pack_tmp)
        try:
            return os.pread(fd, seg.stored, seg.offset)
        finally:
            os.close(fd)

    def _drain(self) -> None:
        while self._inflight:
            self._write_oldest()

    # ---------------------------------------------------------------- finishing
    def finish(self) -> list[Path]:
        """Write the last block, the trailer and the index; returns the temp files to sync."""
        if self.finished:
            return self.temp_files()
        self._flush_block()
        self._drain()
        return self._finish_tail()

    def iter_finish(self) -> Generator[Any, Any, list[Path]]:
        """`finish` for a job (a generator; its value is the temp files): it yields while the last
        blocks are compressed and while the index is built on a helper thread, each wait at most
        `waiting.WAIT_SLICE`, so the end of a big pack never holds an event loop (250,000 files: 0.6 s
        on a quiet machine). Between its yields the writer reads back as ever."""
        if self.finished:
            return self.temp_files()
        self._flush_block(wait=False)
        while self._inflight:
            fut = self._inflight[0][0]
            if fut is not None and not fut.done():
                yield from waiting.wait_in_slices(fut)
            self._write_oldest()
        yield from self._iter_writes_down_to(0)
        temps: list[Path] = yield from waiting.wait_in_slices(waiting.in_thread(self._finish_tail))
        return temps

    def _finish_tail(self) -> list[Path]:
        """After the last block is written: trailer, index (its encoding is the costly part)."""
        self._written()
        self._close_writer()
        self._ensure_open()
        assert self._fd is not None  # _ensure_open
        digest = self._hash.digest()
        fs.append(self._fd, digest)
        size = self._offset + TRAILER
        os.close(self._fd)
        self._fd = None
        self._close_pool()
        objects = [(bytes.fromhex(d), seg, start, n, bytes.fromhex(base) if base else None)
                   for d, (seg, start, n, base) in self.objects.items()]
        level = REPACK_LEVEL if self.repack and len(objects) <= INDEX_HIGH_MAX else LEVEL
        index = encode_index(self.pack_id, size, digest, self.segments, objects, level)
        self.index_tmp = fs.temp_path(self.folder / f"{self.name}.idx")
        fd = fs.create(self.index_tmp)
        try:
            fs.append(fd, index)
        finally:
            os.close(fd)
        self.finished = True
        assert self.segments and self.segments[0].offset == PACK_HEADER
        return self.temp_files()

    def temp_files(self) -> list[Path]:
        return [p for p in (self.pack_tmp, self.index_tmp) if p is not None]

    def publish(self) -> None:
        """Rename the synced pack into place, then its index (the commit point of the pack)."""
        assert self.finished and self.index_tmp is not None
        fs.rename(self.pack_tmp, self.pack_path)
        try:
            fs.rename(self.index_tmp, self.index_path)
        except BaseException:
            fs.discard(self.pack_path)  # invisible without its index; do not leave it behind
            raise
        self.published = True

    def discard(self) -> None:
        """Remove everything written (before `publish`); never masks the caller's error."""
        self._close_writer(cancel=True)  # before the fd closes: its number could be reused
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        self._close_pool(cancel=True)
        if not self.published:
            for p in self.temp_files():
                fs.discard(p)

    def _close_writer(self, cancel: bool = False) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True, cancel_futures=cancel)
            self._writer = None
            self._writes.clear()

    def _close_pool(self, cancel: bool = False) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            self._pool = None
