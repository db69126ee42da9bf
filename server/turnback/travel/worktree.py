"""Worktree Fork: the branch in a separate folder, restored to turn k, beside a live parent.

The folder must be new or empty, and is never the workspace or inside it. It becomes a workspace of
its own, with its own store: every file is written through the seam and checked against *its* fence.
Two ways to fill it:
* `git`: `git worktree add --detach` of HEAD (the workspace must be the top of a git repository with
  a commit), every submodule initialised at the commit HEAD records (cloned from the parent's own
  checkout of it, so no network is needed), then every captured file put at its turn-k image on top;
* plain: every captured file at its turn-k image, nothing else.

Refusals come first, before the fork writes any record (`check_target`, `check_git`): a folder that
is not new or empty, a workspace that is not a repository or has no commit, a submodule with local
changes (its changes would not be in the branch). A folder that appears between the check and the
fork's first write is caught by the exclusive creation (`create_folder`) and refused too.
A path whose turn-k image turnback never saw is a gap, listed, not guessed; so is a submodule that
cannot be initialised (the parent never checked it out, or lacks the recorded commit): it is left
empty, as git leaves an uninitialised submodule, and no captured file is written into it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..errors import TurnbackError
from ..store import fs


class BadTarget(TurnbackError):
    code = "fork-worktree-target"


class GitRefused(TurnbackError):
    """A git worktree fork that cannot be made honestly (`data.reason` says why)."""

    code = "fork-git"


@dataclass
class Submodule:
    path: str  # relative to the workspace root
    commit: str  # the commit HEAD records for it
    initialised: bool  # the parent has a checkout of it to clone from
    children: list["Submodule"] = field(default_factory=list)


@dataclass
class GitPlan:
    head: str
    submodules: list[Submodule]


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


def _git(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)


def is_git_repo(root: Path) -> bool:
    return (Path(root) / ".git").exists()


def check_git(root: Path) -> GitPlan:
    """What a git worktree fork of `root` starts from, or a refusal (before anything is written)."""
    root = Path(root)
    if not is_git_repo(root):
        raise GitRefused("the workspace is not the top of a git repository (no .git here); fork "
                         "into a plain copy instead (leave out --git)",
                         data={"reason": "not-a-repository", "path": str(root)})
    head = _git("-C", str(root), "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if head.returncode != 0:
        raise GitRefused("the git repository has no commit yet, so there is nothing to check out; "
                         "commit once, or fork into a plain copy (leave out --git)",
                         data={"reason": "no-commits", "path": str(root)})
    subs = submodules(root)
    changed = [s for s in _flatten(subs) if s.initialised and _local_changes(root / s.path, s.commit)]
    if changed:
        names = ", ".join(s.path for s in changed)
        raise GitRefused(f"submodule(s) {names} have local changes (uncommitted files, or a checkout "
                         "other than the commit HEAD records); a git worktree fork checks out the "
                         "recorded commit, so those changes would not be in the branch. Commit them "
                         "in the submodule and the superproject, or fork into a plain copy",
                         data={"reason": "submodule-changed", "paths": [s.path for s in changed]})
    return GitPlan(head.stdout.strip(), subs)


def submodules(root: Path, prefix: str = "") -> list[Submodule]:
    """Every gitlink HEAD records (recursively, for the submodules the parent has checked out)."""
    listing = _git("-C", str(root), "ls-tree", "-r", "-z", "HEAD")
    out = []
    for entry in listing.stdout.split("\0") if listing.returncode == 0 else ():
        meta, _tab, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) != 3 or parts[0] != "160000":
            continue
        here = root / path
        initialised = (here / ".git").exists()
        sub = Submodule(prefix + path, parts[2], initialised)
        if initialised:
            sub.children = submodules(here, prefix + path + "/")
        out.append(sub)
    return out


def _flatten(subs: list[Submodule]) -> list[Submodule]:
    return [x for s in subs for x in (s, *_flatten(s.children))]


def _local_changes(folder: Path, recorded: str) -> bool:
    head = _git("-C", str(folder), "rev-parse", "--verify", "--quiet", "HEAD")
    if head.returncode != 0 or head.stdout.strip() != recorded:
        return True
    status = _git("-C", str(folder), "status", "--porcelain", "--ignore-submodules=none")
    return status.returncode != 0 or bool(status.stdout.strip())


def create_folder(target: Path, *, use_git: bool, root: Path) -> None:
    """Make the branch's folder, refusing one that appeared (or filled up) since it was checked."""
    if use_git:
        proc = _git("-C", str(root), "worktree", "add", "--detach", "--quiet", str(target), "HEAD")
        if proc.returncode != 0:
            raise BadTarget(f"git worktree add {target} failed: {proc.stderr.strip()}",
                            data={"path": str(target)})
        return
    if target.exists():
        if not target.is_dir() or any(os.scandir(target)):
            raise BadTarget(f"{target} is no longer an empty folder: something was put there while "
                            "the fork was being prepared; nothing was written",
                            data={"path": str(target)})
        return
    try:
        fs.mkdir(target, 0o777 & ~_umask(), parents=False, exist_ok=False)
    except FileExistsError:
        raise BadTarget(f"{target} appeared while the fork was being prepared; nothing was written "
                        "into it", data={"path": str(target)}) from None


def init_submodules(root: Path, target: Path, subs: list[Submodule]) -> list[dict]:
    """Check out every submodule in the new worktree at the commit HEAD records, cloned from the
    parent's own checkout of it. Returns a gap for each one that cannot be (left empty, like an
    uninitialised submodule); a failure half way is raised (the fork then fails, listing the folder)."""
    gaps = []
    for s in _flatten(subs):
        if any(g["path"] == s.path or s.path.startswith(g["path"] + "/") for g in gaps):
            continue  # inside a submodule that could not be initialised
        source, dest = Path(root) / s.path, Path(target) / s.path
        if not s.initialised:
            gaps.append(_submodule_gap(s, "the parent workspace never checked this submodule out, "
                                          "so there is nothing to clone it from"))
            continue
        if _git("-C", str(source), "cat-file", "-e", f"{s.commit}^{{commit}}").returncode != 0:
            gaps.append(_submodule_gap(s, f"the parent's checkout of it lacks the recorded commit "
                                          f"{s.commit[:12]}"))
            continue
        for args in (("clone", "--quiet", "--no-checkout", str(source), str(dest)),
                     ("-C", str(dest), "checkout", "--quiet", "--detach", s.commit)):
            proc = _git(*args)
            if proc.returncode != 0:
                raise TurnbackError(f"could not initialise the submodule {s.path} in {target} "
                                    f"({proc.stderr.strip()})", code="io-error",
                                    data={"path": str(dest)})
        url = _git("-C", str(source), "remote", "get-url", "origin")
        if url.returncode == 0 and url.stdout.strip():  # fetch from where the parent's copy does
            _git("-C", str(dest), "remote", "set-url", "origin", url.stdout.strip())
    return gaps


def _submodule_gap(s: Submodule, why: str) -> dict:
    return {"path": s.path, "reason": "submodule-uninitialised",
            "detail": f"{why}; it is left empty, as an uninitialised submodule (no captured file "
                      "is written into it): run `git submodule update --init` there"}


def inside(rel: str, folders) -> bool:
    return any(rel == f or rel.startswith(f + "/") for f in folders)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
