"""Worktree Fork: the branch in a separate folder, restored to turn k, beside a live parent.

The folder must be new or empty, and is never the workspace or inside it. It becomes a workspace of
its own: every file is written through the seam and checked against *its* fence (a `Workspace` rooted
at the folder). Two ways to fill it:
* `git`: `git worktree add --detach` (when the workspace is a git repository and the user agreed),
  then every captured file is put at its turn-k image on top of the checkout;
* plain: every captured file at its turn-k image, nothing else.
A path whose turn-k image turnback never saw is a gap, listed, not guessed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..errors import TurnbackError
from ..model.images import ABSENT, is_digest
from ..store import fsio
from ..workspace.fence import Workspace
from .disk import put_image


class BadTarget(TurnbackError):
    code = "fork-worktree-target"


def check_target(ws, raw: str) -> Path:
    """The folder a worktree fork may fill: new or empty, outside the workspace, not a link."""
    text = unquote(urlparse(raw).path) if raw.startswith("file://") else os.path.expanduser(raw)
    if not text:
        raise BadTarget("the worktree folder is empty text")
    given = Path(os.path.abspath(text))
    if os.path.islink(given):
        raise BadTarget(f"{given} is a symbolic link; a worktree fork needs a real folder",
                        data={"path": str(given)})
    target = Path(os.path.realpath(given))
    root = Path(ws.root)
    if target == root or root in target.parents:
        raise BadTarget(f"{target} is the workspace or inside it; a worktree fork needs a folder "
                        "outside the workspace", data={"path": str(target)})
    if target.exists():
        if not target.is_dir():
            raise BadTarget(f"{target} exists and is not a folder", data={"path": str(target)})
        if any(os.scandir(target)):
            raise BadTarget(f"{target} is not empty; a worktree fork needs a new or empty folder",
                            data={"path": str(target)})
    elif not target.parent.is_dir():
        raise BadTarget(f"the folder {target.parent} does not exist", data={"path": str(target)})
    return target


def is_git_repo(root: Path) -> bool:
    return (Path(root) / ".git").exists()


def materialise_job(parent_ws, objects, images: dict, target: Path, *, use_git: bool):
    """Fill `target` with `images` (path -> turn-k image). Returns {mode, files, gaps}; yields per file."""
    mode = "git" if use_git else "copy"
    if use_git:
        if not is_git_repo(parent_ws.root):
            raise BadTarget("the workspace is not a git repository; fork into a plain copy instead",
                            data={"path": str(target)})
        proc = subprocess.run(["git", "-C", str(parent_ws.root), "worktree", "add", "--detach",
                               str(target)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise BadTarget(f"git worktree add failed: {proc.stderr.strip()}",
                            data={"path": str(target)})
    else:
        fsio.mkdir(target, 0o777 & ~_umask())
    fence = Workspace(target, target / ".turnback")
    files, gaps = [], []
    for rel in sorted(images):
        image = images[rel]
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if image == ABSENT:
            if use_git and os.path.lexists(fence.abs_path(rel)):
                put_image(fence, objects, rel, ABSENT)
                files.append({"path": rel, "action": "delete"})
            continue
        if not is_digest(image):
            gaps.append({"path": rel, "reason": "unknown-before-image"})
            continue
        put_image(fence, objects, rel, image)
        files.append({"path": rel, "action": "restore", "to": image})
        yield ("materialise", len(files), len(images))
    return {"mode": mode, "files": files, "gaps": gaps}


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
