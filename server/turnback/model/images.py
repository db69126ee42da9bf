"""How an image of one path is named: an object digest, or one of three markers.

A folder is part of the captured state too (so an empty one can be restored and one a turn created
removed): its key is its workspace path with a trailing slash (`src/empty/`), which no file path has,
and its image is FOLDER while it exists as a folder, ABSENT when it does not (docs/storage-format.md,
"Folders in the state"). Every folder the sweep walks is recorded, not only empty ones: a rewind can
only remove a folder a discarded turn created if the state says it was not there before.
"""

from __future__ import annotations

ABSENT = "absent"  # the path did not exist
UNKNOWN = "unknown"  # turnback never saw the path's bytes at that moment
FOLDER = "folder"  # a folder key's image: the folder exists

Image = str  # a 32-hex object digest, ABSENT, UNKNOWN or FOLDER


def is_digest(image: Image | None) -> bool:
    return bool(image) and image not in (ABSENT, UNKNOWN, FOLDER)


def is_folder_key(rel: str) -> bool:
    return rel.endswith("/")


def folder_key(rel: str) -> str:
    """The state's key of the folder at workspace path `rel`."""
    return rel.rstrip("/") + "/"


def folder_path(key: str) -> str:
    """The workspace path of a folder key."""
    return key[:-1]
