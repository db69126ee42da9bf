"""Where an agent's hook or plugin file may be written: inside the workspace only through the fence
(no link followed out, no component that is not a folder), in the user's own config folder made
private when turnback creates it."""

from __future__ import annotations

from pathlib import Path

from ..store import fs


def prepare_parent(path: Path, scope: str, root: Path) -> None:
    """Make `path`'s folder ready for a write of `scope` ("project": inside `root`; else the user's)."""
    if scope == "project":
        from ..workspace.fence import Workspace

        ws = Workspace(root, root / ".turnback")
        rel = ws.to_rel(str(path))
        ws.ensure_parent_dirs(rel)
        ws.check_components(rel)
    else:
        fs.mkdir(path.parent, 0o700)
