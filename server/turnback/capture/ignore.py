"""Which workspace paths capture skips: `.gitignore` semantics, through the `pathspec` library.

Sources, in git's order of precedence (first decisive answer wins):

1. the `.gitignore` in the path's own folder, then each parent folder's, up to the root's; patterns in
   a nested file are relative to the folder that holds it, and a deeper file overrides a shallower one;
2. `.git/info/exclude` (patterns relative to the root);
3. the default list of editor and tool droppings (`DEFAULT_IGNORE`, below), lowest of all, so a
   `.gitignore` line `!name` re-includes one of them; `capture.defaultIgnore` in the
   `initializationOptions` replaces the list (`[]` turns it off). See docs/capture.md.

Within one file the last matching pattern wins and `!pattern` re-includes (pathspec compiles each
pattern with git's exact rules, including directory-only patterns and anchoring; see `_Rules` for how
we apply them). As in git, a path inside
an ignored folder cannot be re-included by a negation: `ignored` checks the ancestors first.

Always skipped, whatever the rules say: any `.git` component (git never tracks one), turnback's
store, and turnback's own temporary files (names holding `.tbtmp.`, written by every atomic write). Not read: the user's global `core.excludesFile` and `$GIT_DIR/info/exclude` of a worktree whose
`.git` is a file; an unreadable, symlinked, oversized or undecodable `.gitignore` contributes no rules
(git itself refuses symlinked `.gitignore` files); a pattern pathspec cannot parse is skipped, like git.

Rules are cached per folder for the life of the object; call `invalidate()` when a `.gitignore` may
have changed (the sweep does so at its start).
"""

from __future__ import annotations

import os
import re
import stat as _stat
from typing import NamedTuple

from ..store.fs import is_temp_name
from . import compiled
from ..workspace.fence import Workspace

# Editor and tool droppings: scratch files that come and go around a save and are never the user's
# work. gitignore syntax; each line says whose it is.
DEFAULT_IGNORE = (
    "\\#*#",             # Emacs auto-save files (the backslash: `#` starts a comment)
    ".#*",              # Emacs lock files (dangling symbolic links)
    "*~",               # Emacs (and many others') backup files
    ".*.sw[po]",        # Vim swap files (.x.swp, .x.swo)
    "4913",             # Vim's probe that a folder is writable
    "*___jb_tmp___",    # JetBrains safe-write temporaries
    "*___jb_old___",
    "*.vsctmp",         # VS Code atomic-save temporaries
    ".*.tmp.*",         # atomic-save temporaries of other editors and tools (.x.tmp.1234)
    ".goutputstream-*",  # GNOME (gedit) atomic-save temporaries
    "*.kate-swp",       # Kate swap files
    "sed[a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9][a-zA-Z0-9]",  # `sed -i` (sedXXXXXX)
)

MAX_IGNORE_FILE = 1 << 20  # a .gitignore larger than this is not read (it would stall the loop)
_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0))


class _Rules:
    """The patterns of one rule file, matched the way git matches them.

    pathspec compiles each line to git's regex (anchoring, `**`, escapes, trailing spaces,
    directory-only rules) and matches with `search`. Its own `match_file` also answers for
    *descendants* of a matched folder ("!keep.log" matches "keep.log/x.log"), because it evaluates file
    lists, not walks. Git matches a pattern against the path itself only; the descendant effect comes
    from not descending into an excluded folder, which `IgnoreRules.ignored` reproduces by checking
    ancestors first. So a pattern counts only when it matches the probed path itself: its regex ends
    in a `ps_d` group (the slash after a matched folder) or `$`, and we require that ending to be the end
    of the probe by appending `\\Z`. Patterns without a `ps_d` group ("*" is ".", "foo/**" is "^foo/")
    already mean "this path and everything under it" in git too, and are used as they are.
    (A differential test against `git ls-files --others --exclude-standard` backs this.)
    """

    __slots__ = ("rules", "any")

    def __init__(self, patterns):
        # (regex, include) as compiled.py gives them, the `\\Z` already appended; last match wins
        rules = list(reversed(patterns))
        self.rules = rules
        self.any = _union(rules)

    def verdict(self, probe: str) -> bool | None:
        # Most paths match no pattern at all: one search of the union answers them.
        if self.any is not None and self.any.search(probe) is None:
            return None
        for regex, include in self.rules:
            if regex.search(probe) is not None:
                return include
        return None


def _union(rules) -> re.Pattern | None:
    """One regex that matches where any rule matches (group names stripped so they can coexist)."""
    if len(rules) < 2 or len({r.flags for r, _ in rules}) != 1:
        return None
    parts = [re.sub(r"\(\?P<[A-Za-z_]\w*>", "(?:", r.pattern) for r, _ in rules]
    try:
        return re.compile("|".join(f"(?:{p})" for p in parts), rules[0][0].flags)
    except re.error:
        return None


def _parse(lines) -> _Rules | None:
    patterns = []
    for line in lines:  # compiled by pathspec, or as it compiled them before (compiled.py)
        patterns.extend(compiled.patterns(line))
    return _Rules(patterns) if patterns else None


def _read_rules_file(path: str) -> list[str] | None:
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode) or st.st_size > MAX_IGNORE_FILE:
            return None
        chunks = []
        total = 0
        while b := os.read(fd, 65536):
            chunks.append(b)
            total += len(b)
            if total > MAX_IGNORE_FILE:
                return None
    except OSError:
        return None
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8", errors="surrogateescape")
    return text.splitlines()


def is_own_temp(rel: str) -> bool:
    """A temporary file turnback itself writes (temp + fsync + rename): never captured."""
    return is_temp_name(rel.rsplit("/", 1)[-1])


class IgnoreRules:
    def __init__(self, ws: Workspace, defaults=DEFAULT_IGNORE):
        self.ws = ws
        self.defaults = tuple(defaults)
        self._default_rules = _parse(self.defaults) if self.defaults else None
        self._specs: dict[str, _Rules | None] = {}
        self._exclude: _Rules | None = None
        self._exclude_loaded = False
        self._dir_verdicts: dict[str, bool] = {}
        self._chains: dict[str, list[tuple[_Rules, int]]] = {}
        self._lines: dict[str, tuple[str, ...]] = {}  # folder -> its .gitignore, as read
        self._exclude_text: tuple[str, ...] | None = None

    def invalidate(self) -> None:
        """Forget every cached rule file and verdict (a .gitignore may have changed)."""
        self._specs.clear()
        self._lines.clear()
        self._exclude_text = None
        self._dir_verdicts.clear()
        self._chains.clear()
        self._exclude = None
        self._exclude_loaded = False

    # ------------------------------------------------------------------ loading

    def _spec(self, folder: str) -> _Rules | None:
        try:
            return self._specs[folder]
        except KeyError:
            pass
        lines = self._folder_lines(folder)
        if lines:
            self._lines[folder] = tuple(lines)
        spec = _parse(lines) if lines else None
        self._specs[folder] = spec
        return spec

    def _chain(self, folder: str) -> list[tuple[_Rules, int]]:
        """The rule files that apply inside `folder`, nearest first, each with the offset at which a
        path below it starts. Cached per folder: a walker asks once per file of the same folder."""
        chain = self._chains.get(folder)
        if chain is None:
            chain = []
            current = folder
            while True:
                spec = self._spec(current)
                if spec is not None:
                    chain.append((spec, len(current) + 1 if current else 0))
                if not current:
                    break
                cut = current.rfind("/")
                current = current[:cut] if cut >= 0 else ""
            self._chains[folder] = chain
        return chain

    def _exclude_spec(self) -> _Rules | None:
        if not self._exclude_loaded:
            lines = self._exclude_lines()
            self._exclude_text = tuple(lines) if lines else None
            self._exclude = _parse(lines) if lines else None
            self._exclude_loaded = True
        return self._exclude

    def _folder_lines(self, folder: str) -> list[str] | None:
        base = str(self.ws.root / folder) if folder else str(self.ws.root)
        return _read_rules_file(base + "/.gitignore")

    def _exclude_lines(self) -> list[str] | None:
        git = str(self.ws.root / ".git")
        try:
            is_dir = _stat.S_ISDIR(os.lstat(git).st_mode)
        except OSError:
            is_dir = False
        return _read_rules_file(git + "/info/exclude") if is_dir else None

    # ------------------------------------------------------------------ remembering

    def snapshot(self) -> "RulesSnapshot":
        """The rule texts read since the last `invalidate`. After a full sweep that is every rule
        file that decided anything: each folder the walk entered (an ignored folder is not entered,
        and everything under it was ignored anyway)."""
        self._exclude_spec()
        return RulesSnapshot(dict(self._lines), self._exclude_text, self.defaults)

    @classmethod
    def replay(cls, ws: Workspace, snap: "RulesSnapshot") -> "IgnoreRules":
        """The rules as they were when `snap` was taken: a folder the snapshot does not name had no
        rule file then (or sat in an ignored folder, where it decided nothing)."""
        return _Replayed(ws, snap)

    # ------------------------------------------------------------------ deciding

    @staticmethod
    def _always(rel: str) -> bool:
        return (rel == ".git" or rel.startswith(".git/") or rel.endswith("/.git") or "/.git/" in rel
                or is_own_temp(rel))

    def match(self, rel: str, is_dir: bool) -> bool:
        """The verdict for `rel` itself, assuming none of its parent folders is ignored.

        For walkers that never descend into ignored folders; everyone else calls `ignored`.
        """
        if self._always(rel) or self.ws.in_store(rel):
            return True
        probe_suffix = "/" if is_dir else ""
        cut = rel.rfind("/")
        for spec, start in self._chain(rel[:cut] if cut >= 0 else ""):
            verdict = spec.verdict(rel[start:] + probe_suffix)
            if verdict is not None:
                return bool(verdict)
        spec = self._exclude_spec()
        if spec is not None:
            verdict = spec.verdict(rel + probe_suffix)
            if verdict is not None:
                return bool(verdict)
        if self._default_rules is not None:
            verdict = self._default_rules.verdict(rel + probe_suffix)
            if verdict is not None:
                return bool(verdict)
        return False

    def junk(self, rel: str) -> bool:
        """True for turnback's own temporaries and the default droppings (unless a rule re-includes
        one): names no capture source should record, whoever reports them."""
        if is_own_temp(rel):
            return True
        return self._default_rules is not None and self._default_rules.verdict(rel) is True \
            and self.match(rel, False)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """True when capture should skip `rel` (a file, or with is_dir a folder and all it holds)."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            verdict = self._dir_verdicts.get(folder)
            if verdict is None:
                verdict = self._dir_verdicts[folder] = self.match(folder, True)
            if verdict:
                return True
        return self.match(rel, is_dir)


class RulesSnapshot(NamedTuple):
    """The rule texts one full sweep used: `.gitignore` lines per folder, `.git/info/exclude`, and
    the default list. Small (rule files only) and kept in the store's cache (capture/lastrules.py)."""

    folders: dict[str, tuple[str, ...]]
    exclude: tuple[str, ...] | None
    defaults: tuple[str, ...]


class _Replayed(IgnoreRules):
    """IgnoreRules that read their rule files from a snapshot instead of the disk."""

    def __init__(self, ws: Workspace, snap: RulesSnapshot):
        super().__init__(ws, snap.defaults)
        self._snap = snap

    def _folder_lines(self, folder: str) -> list[str] | None:
        lines = self._snap.folders.get(folder)
        return list(lines) if lines else None

    def _exclude_lines(self) -> list[str] | None:
        return list(self._snap.exclude) if self._snap.exclude else None
