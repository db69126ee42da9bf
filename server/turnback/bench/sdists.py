"""Real trees for the bench: the source distributions of a project's releases on PyPI.

A release is fetched once into a cache (`~/.cache/turnback-bench/sdists`, or `$TURNBACK_BENCH_CACHE`),
its sha256 checked against the registry's JSON metadata before it is kept, and read back as a `Tree`:
every member of the archive below its top folder, with its bytes and permission bits (a symbolic
link keeps its target). Nothing fetched is ever written inside a worktree.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

INDEX = "https://pypi.org/pypi"
TIMEOUT = 60.0


class Unreachable(Exception):
    """The registry could not be reached (no network): the caller says so instead of measuring."""


@dataclass(frozen=True)
class Entry:
    data: bytes  # a file's bytes, or a link's target
    mode: int  # permission bits (st_mode & 0o777)
    link: bool = False


Tree = dict[str, Entry]


def cache_dir() -> Path:
    base = os.environ.get("TURNBACK_BENCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "turnback-bench")
    return Path(base) / "sdists"


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as reply:
            return reply.read()
    except urllib.error.HTTPError as exc:  # the registry answered: not a network problem
        raise LookupError(f"{url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise Unreachable(f"{url}: {getattr(exc, 'reason', exc)}") from None


_projects: dict[str, dict] = {}


def sdist_meta(project: str, version: str) -> dict:
    """The registry's record of the release's source distribution (url, filename, sha256), from
    the project's JSON document (one request per project and process)."""
    if project not in _projects:
        _projects[project] = json.loads(_get(f"{INDEX}/{project}/json"))
    for u in _projects[project].get("releases", {}).get(version, []):
        if u.get("packagetype") == "sdist" and u.get("filename", "").endswith(".tar.gz"):
            return {"url": urllib.parse.urljoin(f"{INDEX}/{project}/json", u["url"]), "filename": u["filename"], "sha256": u["digests"]["sha256"],
                    "size": u.get("size")}
    raise LookupError(f"{project} {version} has no .tar.gz source distribution on PyPI")


def fetch(project: str, version: str) -> Path:
    """The cached archive of a release, downloaded (and its sha256 checked) on first use."""
    folder = cache_dir() / project.lower()
    done = folder / f"{version}.tar.gz"
    if done.exists():
        return done
    meta = sdist_meta(project, version)
    data = _get(meta["url"])
    got = hashlib.sha256(data).hexdigest()
    if got != meta["sha256"]:
        raise ValueError(f"{meta['filename']}: sha256 {got} is not the registry's {meta['sha256']}")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{version}.{os.getpid()}.part"
    tmp.write_bytes(data)
    os.replace(tmp, done)  # a concurrent fetch of the same release writes the same bytes
    return done


def reachable() -> str | None:
    """None when the registry answers, else why not."""
    try:
        _get(f"{INDEX}/pip/json")
    except Unreachable as exc:
        return str(exc)
    return None


def read_tree(archive: Path) -> Tree:
    """Every file and link of an sdist below its top folder. Names that would leave the tree
    (absolute, `..`) are refused; hard links and devices are left out (pip ignores them too)."""
    tree: Tree = {}
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar:
            name = posixpath.normpath(m.name)
            parts = name.split("/", 1)
            if len(parts) < 2 or name.startswith("/") or ".." in name.split("/"):
                continue
            rel = parts[1]
            if m.isfile():
                f = tar.extractfile(m)
                tree[rel] = Entry(f.read() if f else b"", 0o755 if m.mode & 0o111 else 0o644)
            elif m.issym():
                tree[rel] = Entry(m.linkname.encode(), 0o777, link=True)
    return tree


def release_trees(project: str, versions: list[str]) -> list[tuple[str, Tree]]:
    return [(v, read_tree(fetch(project, v))) for v in versions]
