"""Reading through the seam (not counted: reads change nothing): never through a link, and in
reads sized to the file, so a small file never costs a 1 MiB buffer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from .ops import StrPath, _open_at

def open_read(path: StrPath) -> int:
    """Open for reading without following a link (none at all below a fenced root)."""
    return _open_at(path, os.O_RDONLY)


def read_file(path: StrPath) -> bytes:
    return read_file_and_stat(path)[0]


def read_file_and_stat(path: StrPath) -> tuple[bytes, os.stat_result]:
    """`read_file`, with the stat of the very file read (taken on its descriptor)."""
    fd = open_read(path)
    try:
        st = os.fstat(fd)
        return b"".join(iter_read(fd, st.st_size)), st
    finally:
        os.close(fd)


READ_CHUNK = 1 << 20


def read_size(total: int, expected: int, chunk: int = READ_CHUNK) -> int:
    """How much to ask of the next read of a file `expected` bytes long (its fstat size) after
    `total`: one byte past the expected end, so that a short read ending there is its end. A fixed
    1 MiB request allocates a 1 MiB buffer however small the file: an mmap and a munmap each time
    (past glibc's mmap threshold), whose TLB shootdowns stall every other thread of the process."""
    return chunk if total > expected else min(chunk, expected - total + 1)


def iter_read(fd: int, expected: int, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """A regular file's bytes from its offset to its end, in reads sized by `read_size`. A read
    shorter than asked that ends at `expected` is the end (no read more to see it); one that does
    not, or a file that grew, reads on until a read returns nothing."""
    total = 0
    while True:
        want = read_size(total, expected, chunk)
        b = os.read(fd, want)
        if not b:
            return
        yield b
        total += len(b)
        if len(b) < want and total == expected:
            return
