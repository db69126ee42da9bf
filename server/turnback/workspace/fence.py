"""The fence: workspace-relative paths, file URIs, and the refusal to follow symbolic links out.

Every path the core handles is a *workspace-relative POSIX path* ("src/a.py"): no leading slash, no
"." or ".." components, no empty components, never the root itself, never inside turnback's store.
`Workspace.to_rel` is the one door through which client-supplied references (URIs, absolute paths,
relative paths) become such paths; `Workspace.check_rel` re-validates a relative path that is already
in that form (for example one read back from a record).

Two separate checks, on purpose:

* **Lexical** (`to_rel`, `check_rel`): pure string work, no system calls. It rejects anything whose
  normalised form leaves the root. Lexical normalisation folds "a/../b" to "b" even if "a" is a symlink;
  that is safe only because of the second check.
* **On disk** (`check_components`): `lstat` of every existing component from the root down to and
  including the target; any symbolic link, or an existing parent that is not a folder, is refused.
  Nothing is ever followed, so "a/../b" with a symlinked "a" is refused here before any write.

What is guaranteed (time of check versus time of use)
-----------------------------------------------------
`check_components` and `ensure_parent_dirs` look at the file system at one instant; they give a
clear refusal (`SymlinkRefused`) for what is already there. A process that can write inside the
workspace could still swap a checked folder for a symbolic link right after the check. That window
is closed in the seam itself: a `Workspace` registers its root with `fs.fence_root`, and from then
on every mutation below the root opens each folder of the path with `O_NOFOLLOW|O_DIRECTORY`
relative to the one above and acts on the last folder's descriptor (`store/fs/anchored.py`). A folder
that became a link fails that walk (ELOOP or ENOTDIR) and nothing is written through it; a final
component is never followed either (`O_NOFOLLOW`, `O_EXCL`, modes set with `fchmod`). Callers keep
passing paths.

Inside `.git` (a folder, or a worktree's or submodule's `.git` file) nothing is captured or restored
(`git_internal`): those bytes belong to Git.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat as _stat
from pathlib import Path
from urllib.parse import quote, unquote_to_bytes, urlsplit

from ..errors import InvalidParams, OutsideWorkspace, SymlinkRefused
from ..store import fs

# A reference that starts with "scheme:" is taken as a URI. RFC 3986 schemes are at least one letter;
# we require two characters so a Windows drive letter ("C:") is never mistaken for one.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")


def _current_umask() -> int:
    """The process umask, read without changing it where the platform allows.

    Linux (4.7+) reports it in /proc/self/status. Elsewhere we fall back to the set-and-restore dance,
    which is not thread-safe for the instant between the two calls; it runs once per Workspace.
    """
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _lexical_rel(path: str) -> str:
    """Normalise a relative POSIX path lexically; '' for the root, may start with '..'."""
    norm = posixpath.normpath(path)
    return "" if norm == "." else norm


def _escapes(rel: str) -> bool:
    return rel == ".." or rel.startswith("../") or rel.startswith("/")


class Workspace:
    """One workspace root and its store location; converts and checks paths, never writes files
    except through `ensure_parent_dirs` (which goes through the seam, `store/fs/`).

    `root` is the resolved real path of the workspace. `store_path` may be relative (to the root) or
    absolute; when it lies inside the root, that subtree is fenced off (`in_store`).
    """

    def __init__(self, root: Path | str, store_path: Path | str):
        given = os.path.abspath(os.fspath(root))
        self.root = Path(os.path.realpath(given))
        # Clients may name files through the path they were given (for example a symlinked home
        # folder, or /tmp versus /private/tmp on macOS); both spellings are accepted lexically.
        self._root_spellings = tuple(dict.fromkeys([str(self.root), posixpath.normpath(given)]))
        sp = Path(os.fspath(store_path))
        if not sp.is_absolute():
            sp = self.root / sp
        self.store_path = Path(os.path.realpath(sp))
        # Fence both the spelling we were given and the resolved one (a store folder that is itself a
        # symlink must not be captured either).
        rels = [self._strip_root(os.path.abspath(sp)), self._strip_root(str(self.store_path))]
        rels = [r for r in dict.fromkeys(rels) if r]
        self._store_rel: str | None = rels[0] if rels else None
        self._store_folds = frozenset(r.casefold() for r in rels)
        self._store_prefixes = tuple(f + "/" for f in self._store_folds)  # asked once per file swept
        # Mode for folders a restore creates in the workspace: what `mkdir` would give by default
        # (0o777 minus the umask), because these are the user's project folders, not private store
        # folders. fs.mkdir sets the mode exactly, so we compute it rather than pass 0o777.
        self.dir_mode = 0o777 & ~_current_umask()
        # Every write below the root is resolved from it without following links (store/fs/anchored.py).
        fs.fence_root(self.root)

    # ------------------------------------------------------------------ lexical

    @property
    def store_rel(self) -> str | None:
        """The store's workspace-relative path, or None when the store lives outside the root."""
        return self._store_rel

    def _strip_root(self, absolute: str) -> str | None:
        """Relative form of an absolute path under one of the root spellings; '' for the root itself."""
        norm = posixpath.normpath(absolute)
        if norm.startswith("//"):
            norm = "/" + norm.lstrip("/")
        for spelling in self._root_spellings:
            if norm == spelling:
                return ""
            prefix = spelling if spelling.endswith("/") else spelling + "/"
            if norm.startswith(prefix):
                return norm[len(prefix):]
        return None

    def is_under(self, path: Path | str) -> bool:
        """True when the absolute `path` lies strictly inside the root (lexically; no system calls)."""
        p = os.fspath(path)
        if not os.path.isabs(p) or "\x00" in p:
            return False
        rel = self._strip_root(p)
        return bool(rel)

    def in_store(self, rel: str) -> bool:
        """True when `rel` is the store folder or inside it.

        Compared case-insensitively as well, so ".TurnBack/x" on a case-insensitive file system
        cannot reach the store; on a case-sensitive one that only refuses an unlikely path name.
        """
        folded = rel.casefold()
        return folded in self._store_folds or (bool(self._store_prefixes)
                                               and folded.startswith(self._store_prefixes))

    @staticmethod
    def git_internal(rel: str) -> bool:
        """True for a `.git` folder or file (a worktree's or submodule's) and anything under one.
        Git owns those bytes: turnback never captures or restores them (a rewind lists the
        `git-head-and-index` gap instead)."""
        return rel == ".git" or rel.startswith(".git/") or rel.endswith("/.git") or "/.git/" in rel

    def _refuse(self, ref: object, why: str) -> OutsideWorkspace:
        return OutsideWorkspace(f"{ref!r} is outside the workspace {str(self.root)!r}: {why}",
                                data={"ref": str(ref), "root": str(self.root)})

    def _finish(self, ref: object, rel: str) -> str:
        if rel == "":
            raise self._refuse(ref, "it is the workspace root itself, not a file in it")
        if _escapes(rel):
            raise self._refuse(ref, "it leaves the workspace root")
        if self.in_store(rel):
            raise OutsideWorkspace(
                f"{ref!r} is inside turnback's store ({self._store_rel}); the store is never captured "
                "or restored as a workspace file",
                data={"ref": str(ref), "store": str(self.store_path)})
        return rel

    def to_rel(self, ref: str) -> str:
        """A `file://` URI, an absolute path or a workspace-relative path -> normalised relative path.

        Raises OutsideWorkspace for anything that is not strictly inside the root: "..", other
        absolute paths, other URI schemes, a URI with a remote host, the root itself, NUL bytes,
        undecodable percent escapes, and anything inside the store. Purely lexical.

        A relative reference whose first component looks like "scheme:" is read as a URI and refused
        unless it is `file:`; use `check_rel` for paths already in relative form (such as those
        stored in records), which does no scheme detection.
        """
        if isinstance(ref, Path):
            ref = os.fspath(ref)
        if not isinstance(ref, str):
            raise InvalidParams(f"a path or file URI must be a string, not {type(ref).__name__}")
        if "\x00" in ref:
            raise self._refuse(ref, "it contains a NUL byte")
        if ref == "":
            raise self._refuse(ref, "it is empty")
        if _SCHEME.match(ref):
            return self._from_uri(ref)
        if ref.startswith("/"):
            rel = self._strip_root(ref)
            if rel is None:
                raise self._refuse(ref, "it is an absolute path elsewhere")
            return self._finish(ref, rel)
        return self._finish(ref, _lexical_rel(ref))

    def _from_uri(self, uri: str) -> str:
        parts = urlsplit(uri)
        if parts.scheme.lower() != "file":
            raise self._refuse(uri, f"the {parts.scheme!r} scheme is not a file on this machine")
        if parts.netloc not in ("", "localhost"):
            raise self._refuse(uri, f"it names the remote host {parts.netloc!r}")
        if parts.query or parts.fragment:
            raise self._refuse(uri, "a file URI with a query or fragment does not name a plain file")
        try:
            path = unquote_to_bytes(parts.path).decode("utf-8")
        except UnicodeDecodeError:
            raise self._refuse(uri, "its percent escapes are not UTF-8") from None
        if "\x00" in path:
            raise self._refuse(uri, "it contains a NUL byte")
        if not path.startswith("/"):
            raise self._refuse(uri, "a file URI must carry an absolute path")
        rel = self._strip_root(path)
        if rel is None:
            raise self._refuse(uri, "it is an absolute path elsewhere")
        return self._finish(uri, rel)

    def check_rel(self, rel: str) -> str:
        """Validate a path that should already be normalised and relative; returns it unchanged."""
        if not isinstance(rel, str):
            raise InvalidParams(f"a workspace path must be a string, not {type(rel).__name__}")
        if "\x00" in rel:
            raise self._refuse(rel, "it contains a NUL byte")
        if rel.startswith("/"):
            raise self._refuse(rel, "a workspace-relative path cannot be absolute")
        norm = _lexical_rel(rel)
        if norm != rel:
            if norm == "" or _escapes(norm):
                self._finish(rel, norm)
            raise InvalidParams(f"{rel!r} is not a normalised workspace path (expected {norm!r})",
                                data={"path": rel})
        return self._finish(rel, rel)

    def to_uri(self, rel: str) -> str:
        """A proper `file://` URI for a workspace path, percent-encoded (UTF-8). A folder key of the
        captured state (`src/empty/`, model/images.py) keeps its trailing slash."""
        if rel.endswith("/") and rel != "/":
            return self.to_uri(rel[:-1]) + "/"
        self.check_rel(rel)
        return "file://" + quote(str(self.root / rel), safe="/")

    def abs_path(self, rel: str) -> Path:
        """The absolute path of a (validated) workspace path. No file-system access."""
        return self.root / self.check_rel(rel)

    # ------------------------------------------------------------------ on disk

    def _scan(self, rel: str) -> int:
        """lstat components root-down; return how many exist. Raises SymlinkRefused as documented."""
        self.check_rel(rel)
        parts = rel.split("/")
        current = str(self.root)
        for i, name in enumerate(parts):
            current = current + "/" + name
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                return i
            except NotADirectoryError:  # pragma: no cover - prevented by the parent check below
                raise self._not_dir(rel, "/".join(parts[:i])) from None
            if _stat.S_ISLNK(st.st_mode):
                shown = "/".join(parts[: i + 1])
                raise SymlinkRefused(
                    f"{shown!r} is a symbolic link; turnback never follows links "
                    f"(while handling {rel!r})",
                    data={"path": rel, "component": shown, "reason": "symlink"})
            if i < len(parts) - 1 and not _stat.S_ISDIR(st.st_mode):
                raise self._not_dir(rel, "/".join(parts[: i + 1]))
        return len(parts)

    @staticmethod
    def _not_dir(rel: str, component: str) -> SymlinkRefused:
        return SymlinkRefused(
            f"{component!r} exists and is not a folder, so {rel!r} cannot be reached through it",
            data={"path": rel, "component": component, "reason": "not-a-directory"})

    def check_components(self, rel: str) -> None:
        """Refuse a path whose existing components include a symlink (the target included), or whose
        existing parent is not a folder. Uses lstat only; never follows anything. See the module
        docstring for what this does and does not guarantee under concurrent change."""
        self._scan(rel)

    def ensure_parent_dirs(self, rel: str) -> None:
        """Check the components, then create missing parent folders one level at a time through the seam.

        Folders get `self.dir_mode` (0o777 & ~umask), like any folder the user's tools would create:
        they belong to the project, not to the private store. After each level is created (or found
        created by someone else), it is lstat'ed again and refused if it is not a real folder.
        """
        existing = self._scan(rel)
        parts = rel.split("/")
        for i in range(existing, len(parts) - 1):
            sub = "/".join(parts[: i + 1])
            path = self.root / sub
            try:
                fs.mkdir(path, mode=self.dir_mode, parents=False, exist_ok=True)
            except FileExistsError:
                pass  # something else appeared there; the lstat below decides
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                raise SymlinkRefused(f"folder {sub!r} vanished while being created",
                                     data={"path": rel, "component": sub, "reason": "race"}) from None
            if _stat.S_ISLNK(st.st_mode):
                raise SymlinkRefused(
                    f"{sub!r} became a symbolic link while folders were being created",
                    data={"path": rel, "component": sub, "reason": "symlink"})
            if not _stat.S_ISDIR(st.st_mode):
                raise self._not_dir(rel, sub)
