"""Replaying trees as turns: put a tree in a workspace, read one back, compare, and a git peer whose
own copy of the tree goes back with `git reset --hard` (the baseline of every travel row)."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

from .peer import ShadowGit
from .sdists import Entry, Tree

SKIP = (".turnback", ".git")  # the store, and a git directory a tree must never hold


def apply_tree(root: Path, old: Tree, new: Tree) -> int:
    """Turn the workspace from `old` into `new`: remove what left, write what changed (bytes or
    mode), then drop the folders left empty. Returns how many paths changed."""
    changed = 0
    for rel in sorted(set(old) - set(new), reverse=True):
        p = root / rel
        if os.path.lexists(p):
            p.unlink()
        changed += 1
    for rel in sorted(set(old) - set(new), reverse=True):
        _prune(root, Path(rel).parent)
    for rel, e in new.items():
        was = old.get(rel)
        if was == e:
            continue
        changed += 1
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if was is not None and was.data == e.data and was.link == e.link and not e.link:
            os.chmod(p, e.mode)
            continue
        if os.path.lexists(p):
            p.unlink()
        if e.link:
            os.symlink(e.data.decode(), p)
            continue
        with open(p, "wb") as f:
            f.write(e.data)
        os.chmod(p, e.mode)
    return changed


def _prune(root: Path, folder: Path) -> None:
    while str(folder) not in ("", "."):
        try:
            (root / folder).rmdir()
        except OSError:
            return
        folder = folder.parent


def read_tree(root: Path) -> Tree:
    """The workspace as a tree (the store and any `.git` left out), links as their targets."""
    out: Tree = {}
    for folder, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(folder, root)
        if rel_dir == ".":
            dirs[:] = [d for d in dirs if d not in SKIP]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            p = os.path.join(folder, name)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = Entry(os.readlink(p).encode(), 0o777, link=True)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    out[rel] = Entry(f.read(), 0o755 if st.st_mode & 0o100 else 0o644)
    return out


def empty_folders(root: Path) -> list[str]:
    """Folders of the workspace with nothing in them (a tree never has one)."""
    out = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel.split("/")[0] in SKIP:
            continue
        if rel != "." and not dirs and not files:
            out.append(rel)
    return out


def differences(want: Tree, got: Tree, skip: set[str] = frozenset()) -> list[str]:
    """What differs between two trees, path by path (bytes, mode, link), `skip` left out."""
    out = []
    for rel in sorted(set(want) | set(got)):
        if rel in skip:
            continue
        a, b = want.get(rel), got.get(rel)
        if a == b:
            continue
        if a is None or b is None:
            out.append(f"{rel}: {'extra' if a is None else 'missing'}")
        elif a.data != b.data:
            out.append(f"{rel}: other bytes")
        else:
            out.append(f"{rel}: mode {b.mode:o}, want {a.mode:o}" if a.link == b.link
                       else f"{rel}: link {b.link}, want {a.link}")
    return out


class GitPeer(ShadowGit):
    """A shadow git with a work tree of its own: commits the same trees, and goes back to any of
    them with `git reset --hard` (which rewrites only the files that differ) + `git clean -fdq`."""

    def __init__(self, base: Path):
        self.tree_dir = base / "git-tree"
        shutil.rmtree(base, ignore_errors=True)
        self.tree_dir.mkdir(parents=True)
        super().__init__(base / "shadow.git", self.tree_dir, base / "home")
        self.init()
        self.git("config", "core.symlinks", "true")
        self.commits: list[str] = []
        self.tree: Tree = {}

    def commit_tree(self, tree: Tree, message: str) -> float:
        apply_tree(self.tree_dir, self.tree, tree)
        self.tree = tree
        commit, seconds = self.checkpoint(message)
        self.commits.append(commit)
        return seconds

    def reset(self, index: int) -> float:
        t0 = time.perf_counter()
        self.git("reset", "-q", "--hard", self.commits[index])
        self.git("clean", "-fdq")
        return time.perf_counter() - t0

    def objects_bytes(self) -> tuple[int, int]:
        from .runner import disk_usage

        return disk_usage(self.git_dir / "objects")
