"""Deltas: a new version of a file stored against its previous version.

A delta is one zstd frame compressed with the base object's raw bytes as a raw-content dictionary
(what `zstd --patch-from` does), so the bytes the two versions share cost a few bytes of match each.
Decoding needs the base's raw bytes and inflates to exactly the declared size or it is damage.

A frame is made at level 3 (the collector's at level 19, `collector_level`, off the loop); one
that beats the object compressed alone but not by enough is made again at level 9, whose deeper
match search finds what level 3 misses in text of a few hundred short words repeated (a word
list, a CSV of codes: 1,245 bytes for a 22-byte insertion in 18 KB at level 3, 69 at level 9).
Unrelated versions never get the retry: their level-3 frame is already past the object compressed
alone.

Chains are bounded (`MAX_CHAIN`): reading the tip of a chain of depth d inflates its base and d
frames, so the bench reports what the deepest chain costs to read (`restore cost`).
"""

from __future__ import annotations

import zstandard

from . import envelope

LEVEL = 3
MAX_CHAIN = 8  # a delta's base may itself be a delta, at most this deep
MIN_BASE = 64  # tinier bases give zstd nothing to match against
# Worth it only when the delta is at most this share of the object compressed alone. Not of its raw
# size: a version written afresh that shares some text with the one before it gave deltas of
# 0.25-0.5x raw, more than the object compressed alone (0.3x), and more again than its share of a
# solid block (long-session at full: 1.35x git with the raw rule, 0.91x with this; docs/performance.md).
MAX_RATIO = 0.5
RETRY_LEVEL = 9
RETRY_MAX = 1 << 20  # bigger objects are not made twice (level 9 costs about 3x the CPU of level 3)
COLLECTOR_LEVEL = 19  # a delta the collector makes, up to RETRY_MAX (about 10 MB/s of raw bytes)


class DeltaError(ValueError):
    pass


def _dict(base: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(base, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def encode(base: bytes, data: bytes, level: int = LEVEL) -> bytes:
    """The delta frame of `data` against `base`."""
    params = zstandard.ZstdCompressionParameters.from_level(
        level, source_size=len(data), window_log=_window_log(len(base) + len(data)),
        write_checksum=0, write_content_size=1, write_dict_id=0)
    return zstandard.ZstdCompressor(compression_params=params, dict_data=_dict(base)).compress(data)


def collector_level(size: int) -> int:
    """The level of a delta the collector makes (on its helper thread, off every loop): its
    deepest search up to RETRY_MAX, where mypy's 857 deltas came out 42 % smaller than at level 3
    (docs/performance.md), RETRY_LEVEL above."""
    return COLLECTOR_LEVEL if size <= RETRY_MAX else RETRY_LEVEL


def worth_keeping(base: bytes, data: bytes, level: int = LEVEL) -> bytes | None:
    """The delta frame of `data` against `base` when it is worth keeping instead of `data` itself
    (at most MAX_RATIO of `data` compressed alone), else None."""
    frame = encode(base, data, level)
    if len(frame) / MAX_RATIO > len(data) + 16:
        return None  # no compression of `data` is bigger than `data`: no need to try
    alone = len(envelope.compress(data))
    if len(frame) <= alone * MAX_RATIO:
        return frame
    if len(frame) >= alone or len(data) > RETRY_MAX or level >= RETRY_LEVEL:
        return None  # shares too little with the base for a deeper search to find more
    frame = encode(base, data, RETRY_LEVEL)
    return frame if len(frame) <= alone * MAX_RATIO else None


def decode(base: bytes, frame: bytes, size: int) -> bytes:
    """The raw bytes a delta frame makes of `base`; DeltaError unless exactly `size` bytes."""
    try:
        if zstandard.frame_content_size(frame) not in (-1, size):  # zstd would allocate it
            raise DeltaError(f"the delta frame declares {zstandard.frame_content_size(frame)} bytes, "
                             f"the index {size}")
        out = zstandard.ZstdDecompressor(dict_data=_dict(base), max_window_size=1 << 27) \
            .decompress(frame, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise DeltaError(f"the delta frame is damaged ({exc})") from None
    if len(out) != size:
        raise DeltaError(f"the delta inflates to {len(out)} bytes, the index declares {size}")
    return out


def _window_log(span: int) -> int:
    log = 10
    while (1 << log) < span and log < 27:
        log += 1
    return max(log, 17)
