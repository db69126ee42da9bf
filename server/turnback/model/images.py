"""How an image of one path is named: an object digest, or one of two markers."""

from __future__ import annotations

ABSENT = "absent"  # the path did not exist
UNKNOWN = "unknown"  # turnback never saw the path's bytes at that moment

Image = str  # a 32-hex object digest, ABSENT or UNKNOWN


def is_digest(image: Image | None) -> bool:
    return bool(image) and image not in (ABSENT, UNKNOWN)
