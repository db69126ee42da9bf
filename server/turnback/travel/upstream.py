"""Which changes a plan would undo have already left the machine: committed and pushed.

A file whose image on disk now is the one the upstream of the current Git branch holds has been
pushed: a rewind or restore puts back an older copy here, but the pushed one stays on the remote. The
confirmation says so (`files[].pushed`, and "this change has left the machine").

Read-only Git, bounded in time: `git rev-parse` (the upstream and where the repository starts) and
`git ls-tree` (the upstream's blob ids of the planned paths), with `GIT_OPTIONAL_LOCKS=0` so Git
writes nothing, and a deadline for the whole look. The disk side is hashed here, reading each file
without following links, as a Git blob of its raw bytes. Anything that fails or runs late answers
"unknown" (None), never a guess; the plan itself never depends on it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from pathlib import Path

from ..store import fs

DEADLINE = 3.0  # seconds for the whole look at the upstream
CHUNK = 400  # paths per `git ls-tree`
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class _Unknown(Exception):
    """Git could not be asked in time (missing, too slow): nothing is claimed."""


def _git(root: Path, args: list[str], deadline: float) -> str | None:
    """Git's output, or None when it answered with an error; _Unknown when it could not answer."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Unknown()
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=left,
                              env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        raise _Unknown() from None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape")


def in_git(root: Path) -> bool:
    """A `.git` in the workspace or a folder above it (no process started when there is none)."""
    for folder in (root, *root.parents):
        if os.path.lexists(folder / ".git"):
            return True
    return False


def pushed(root: Path, rels: list[str], *, max_bytes: int, deadline: float | None = None) -> dict | None:
    """{rel: upstream name} for the paths whose bytes on disk are the upstream's; None when unknown
    (no Git, no upstream, Git failing or too slow)."""
    root = Path(root)
    rels = [r for r in rels if not r.endswith("/")]  # folder keys (model/images.py): no blob to match
    if not rels or not in_git(root):
        return {}
    deadline = deadline or time.monotonic() + DEADLINE
    try:
        return _pushed(root, rels, max_bytes, deadline)
    except _Unknown:
        return None


def _pushed(root: Path, rels: list[str], max_bytes: int, deadline: float) -> dict | None:
    repo = _git(root, ["rev-parse", "--show-toplevel", "--show-object-format"], deadline)
    if repo is None or len(repo.splitlines()) < 2:
        return None  # a .git that is not a repository git can read
    top, fmt = Path(repo.splitlines()[0]), repo.splitlines()[1].strip()
    upstream = _git(root, ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"],
                    deadline)
    if not upstream or not upstream.strip():
        return {}  # no upstream: nothing has been pushed from this branch
    upstream = upstream.strip()
    try:
        prefix = Path(os.path.realpath(root)).relative_to(os.path.realpath(top)).as_posix()
    except ValueError:
        return None
    prefix = "" if prefix == "." else prefix + "/"
    blobs: dict[str, str] = {}
    for i in range(0, len(rels), CHUNK):
        chunk = [prefix + rel for rel in rels[i:i + CHUNK]]
        out = _git(top, ["ls-tree", "-z", "--full-tree", upstream, "--", *chunk], deadline)
        if out is None:
            return None  # the upstream cannot be read (a pruned remote ref)
        for entry in out.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob" and path.startswith(prefix):
                blobs[path[len(prefix):]] = parts[2]
    algo = hashlib.sha256 if fmt == "sha256" else hashlib.sha1
    found = {}
    for rel, blob in blobs.items():
        if time.monotonic() > deadline:
            raise _Unknown()
        mine = _blob_id(root / rel, algo, max_bytes)
        if mine is not None and mine == blob:
            found[rel] = upstream
    return found


def _blob_id(path: Path, algo, max_bytes: int) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000) or st.st_size > max_bytes:
            return None
        h = algo(b"blob %d\0" % st.st_size)
        for chunk in fs.iter_read(fd, st.st_size):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def annotate_job(candidate: dict, root: Path, *, max_bytes: int):
    """Mark the planned files whose change has left the machine (`pushed`: the upstream's name), and
    say so in the summary. A job: the look runs on a thread of its own and the job yields while it
    waits, so a server's loop is never held by Git."""
    planned = [f for f in candidate.get("files", []) if f.get("action") in ("restore", "delete")]
    if not planned or not in_git(Path(root)):
        return candidate
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(found=pushed(
        Path(root), [f["path"] for f in planned], max_bytes=max_bytes)), daemon=True,
        name="turnback-upstream")
    worker.start()
    while worker.is_alive():
        worker.join(0.002)
        yield ("upstream", 0)
    found = box.get("found")
    if found is None:
        candidate["upstream"] = "unknown"
        return candidate
    hit = [f for f in planned if f["path"] in found]
    for f in hit:
        f["pushed"] = found[f["path"]]
    if hit:
        names = ", ".join(f["path"] for f in hit[:8]) + ("…" if len(hit) > 8 else "")
        candidate["summary"] += (f" This change has left the machine: {names} "
                                 f"{'is' if len(hit) == 1 else 'are'} committed and pushed to "
                                 f"{hit[0]['pushed']}; putting back an older copy here does not "
                                 "change the remote.")
    return candidate
