"""A reference model of what the documents promise (docs/rewind.md, docs/capture.md), small enough
to check by reading.

The model knows the workspace as whole trees: every file as ("file", bytes, bits), every folder as
"a/b/" -> FOLDER, every symbolic link as ("link", target). A session is:

* `C[k]`: the tree when prompt k was sent (turn k's pre-turn checkpoint, the user's edits before it
  included); `E[k]`: the tree when turn k settled (`E[0]`: the tree the session started from);
* `loose[k]`: every path something other than a turn touched after turn k (the user, a restore, a
  files-only rewind, what a conversation-only rewind or keep-my-edits kept): "a change no turn made";
* `captured`: per path, the images turnback may have captured (a set: with a live owner, the
  watcher takes the user's edits whenever it sees them; without one, only a sweep does).

From those alone: a rewind to before prompt n leaves C(n); the user edits it must flag are the
planned paths the user changed since (net, after some turn >= n-1), and it may flag only those
something other than a turn touched; keep-my-edits leaves each flagged file no discarded turn
touched as it is; Redo writes the paths whose captured image differs from the head's, and nothing
else. Where the documents leave the exact bytes to a merge, the model says "any" (`Loose`).
"""

from __future__ import annotations

import copy
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

FOLDER = "folder"
ABSENT = None


def read_tree(root: Path) -> dict:
    """The workspace as the model sees it (the store and .git left out)."""
    out = {}
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in (".turnback", ".git"))
        rel = Path(dirpath).relative_to(root).as_posix()
        if rel != ".":
            out[rel + "/"] = FOLDER
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            key = p.relative_to(root).as_posix()
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[key] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def is_link(value) -> bool:
    return isinstance(value, tuple) and value[0] == "link"


def tracked(tree: dict) -> dict:
    """What turnback captures: files and folders, never links."""
    return {p: v for p, v in tree.items() if not is_link(v)}


def changed(a: dict, b: dict) -> set[str]:
    """Paths whose value differs between two trees (links left out: turnback never captures them)."""
    a, b = tracked(a), tracked(b)
    return {p for p in set(a) | set(b) if a.get(p) != b.get(p)}


@dataclass
class Session:
    tree: dict  # the disk, as the model expects it
    C: list = field(default_factory=lambda: [None])  # C[k], k >= 1
    E: list = field(default_factory=list)  # E[k], k >= 0
    loose: list = field(default_factory=lambda: [set()])  # loose[k], k >= 0
    # restored[k]: paths whose latest change after turn k was turnback's own restore (not the
    # user's edit: a later plan undoes it unflagged, docs/rewind.md "Restore"; seed 5001)
    restored: list = field(default_factory=lambda: [set()])
    captured: dict = field(default_factory=dict)  # path -> frozenset of images (None: absent)
    seen: set = field(default_factory=set)  # paths surely in turnback's known map

    @property
    def turns(self) -> int:
        return len(self.C) - 1

    def copy(self) -> "Session":
        return copy.deepcopy(self)

    # -- capture ---------------------------------------------------------------------------------
    def sweep(self) -> None:
        """A full sweep (turn begin, settle): turnback knows the disk."""
        now = tracked(self.tree)
        for p in set(self.captured) | set(now):
            self.captured[p] = frozenset([now.get(p)])
        self.seen |= set(now)

    def unseen(self, target: dict) -> set[str]:
        """Paths on disk turnback never saw (made by the user since the last sweep, where nothing
        was known before): a plan leaves them as they are (docs/rewind.md, what a rewind cannot
        undo: anything never captured)."""
        return {p for p in tracked(self.tree) if p not in self.seen and p not in target}

    def left_in_place(self, target: dict, unseen: set[str]) -> dict:
        """The target of a rewind with the user's paths turnback never saw left where they are:
        a recorded folder (and what it held) where the user put such a file is a gap
        (`not-a-folder`), a recorded file where the user put such a folder one (`not-a-file`),
        never made over it (docs/rewind.md, "Exact trees")."""
        target = dict(target, **{p: self.tree[p] for p in unseen})
        files = [u for u in unseen if not u.endswith("/")]
        # likewise a recorded file where the user put such a folder (`not-a-file`; seeds 5010, 5024)
        return {q: v for q, v in target.items() if not any(q.startswith(u + "/") for u in files)
                and not (v != FOLDER and q + "/" in unseen)}

    def shadowed(self, target: dict, unseen: set[str]) -> dict:
        """What `left_in_place` leaves out of `target` (with a live owner the watcher may have
        captured the user's file, and the plan then swaps it for the folder)."""
        kept = self.left_in_place(target, unseen)
        return {q: v for q, v in target.items() if q not in kept}

    def user_changed(self, before: dict, owner: bool) -> None:
        """The user changed the disk between turns (from `before` to `self.tree`)."""
        paths = changed(before, self.tree)
        self.loose[self.turns] |= paths
        self.restored[self.turns] -= paths
        if owner:  # the watcher may have taken any of them, or not yet
            now = tracked(self.tree)
            for p in paths:
                self.captured[p] = self.captured.get(p, frozenset([None])) | {now.get(p)}

    def maybe_captured(self, paths) -> None:
        """turnback may have captured these paths as they are on disk now, or not (a rewind's
        commit captures what it overwrites before its commit point, and a kill that rolls it back
        leaves that capture: seed 2016)."""
        now = tracked(self.tree)
        for p in paths:
            self.captured[p] = self.captured.get(p, frozenset([None])) | {now.get(p)}

    # -- turns -------------------------------------------------------------------------------------
    def begin(self) -> None:
        self.sweep()
        self.C.append(copy.deepcopy(self.tree))

    def settle(self) -> None:
        self.sweep()
        self.E.append(copy.deepcopy(self.tree))
        self.loose.append(set())
        self.restored.append(set())

    # -- what a rewind must flag ---------------------------------------------------------------------
    def must_flag(self, keep: int, planned: set[str]) -> set[str]:
        """Planned paths the user changed (net) after the boundary: flagged, captured or not;
        unless the latest such change was turnback's own restore."""
        out = set()
        for k in range(keep + 1, self.turns + 1):
            end = self.C[k + 1] if k + 1 <= self.turns else self.tree
            out |= changed(self.E[k], end)
        for p in set(out):
            last = max((k for k in range(keep + 1, self.turns + 1) if p in self.loose[k]),
                       default=None)
            if last is not None and p in self.restored[last]:
                out.discard(p)
        return out & planned

    def rewound(self, expected: dict, skip) -> None:
        """After a committed rewind of files and turns: turnback's new state knows the target's
        image of every path it holds a change record of since the boundary, also where the disk
        already held it (the user's uncaptured edit undid the turn's change): where the disk now
        holds the target's image, that is what turnback knows (seed 2014: the model kept the
        image it captured before, and expected a Redo to leave a folder the head had absent)."""
        now, want = tracked(self.tree), tracked(expected)
        for p in set(want) | set(self.captured):
            if p not in skip and len(self.captured.get(p, frozenset([None]))) == 1 \
                    and now.get(p) == want.get(p):
                self.captured[p] = frozenset([now.get(p)])

    def truncate(self, keep: int) -> None:
        """Turns after `keep` discarded."""
        del self.C[keep + 1:]
        del self.E[keep + 1:]
        del self.loose[keep + 1:]
        del self.restored[keep + 1:]

    def may_flag(self, keep: int) -> set[str]:
        """What something other than a turn touched after the boundary: what the steps recorded,
        and any net change between turns (by definition no turn's; the steps missed the folders
        a kept file kept, seeds 2020, 2029, 2060, 3004)."""
        out = set()
        for k in range(keep + 1, self.turns + 1):
            end = self.C[k + 1] if k + 1 <= self.turns else self.tree
            out |= self.loose[k] | changed(self.E[k], end)
        return out

    def touched_by_turns(self, keep: int) -> set[str]:
        out = set()
        for k in range(keep + 1, self.turns + 1):
            out |= changed(self.C[k], self.E[k])
        return out


class Loose:
    """An expected tree with paths whose value the documents leave open (a merge, a capture the
    watcher may or may not have made): each such path lists what it may hold."""

    def __init__(self, tree: dict, allowed: dict | None = None):
        self.tree = tree
        self.allowed = allowed or {}  # path -> set of values (None: absent); "any": anything

    def differences(self, actual: dict) -> list[str]:
        out = []
        for p in sorted(set(self.tree) | set(actual) | set(self.allowed)):
            got = actual.get(p)
            if p in self.allowed:
                ok = self.allowed[p] == "any" or got in self.allowed[p] or _under_any(p, self.allowed)
            else:
                ok = got == self.tree.get(p) or _under_any(p, self.allowed)
            if not ok:
                out.append(f"{p!r}: expected {_show(self.tree.get(p))}"
                           + (f" (or one of {sorted(map(_show, self.allowed[p]))})"
                              if p in self.allowed else "") + f", found {_show(got)}")
        return out


def _under_any(p: str, allowed: dict) -> bool:
    """A path below (or a folder above) a path left open is open too: a kept file keeps its
    folders, a merged one may have replaced a folder."""
    for q, v in allowed.items():
        if v != "any":
            continue
        if p.startswith(q.rstrip("/") + "/") or q.startswith(p.rstrip("/") + "/"):
            return True
    return False


def _show(v) -> str:
    if v is None:
        return "absent"
    if v == FOLDER:
        return "folder"
    if v[0] == "file":
        data = v[1] if len(v[1]) <= 24 else v[1][:20] + b"..."
        return f"file {data!r} {v[2]:o}"
    return f"link -> {v[1]}"


def with_folders(tree: dict) -> dict:
    """A tree with every folder above each entry present (what a file system has anyway)."""
    out = dict(tree)
    for p in list(tree):
        parts = p.rstrip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out["/".join(parts[:i]) + "/"] = FOLDER
    return out


def overlay_untracked(target: dict, now: dict) -> dict:
    """The target's tracked paths with the links of `now` kept where they are (never touched)."""
    out = dict(tracked(target))
    for p, v in now.items():
        if is_link(v):
            out[p] = v
    return out


def redo_expectation(s: Session, head: Session) -> Loose:
    """Redo to `head`: the paths whose captured image differs between now and the head get the
    head's image; every other path stays as it is on disk (docs/rewind.md, "Redo")."""
    now = s.tree
    expected = dict(now)
    allowed: dict = {}
    redone_paths = set()
    paths = set(tracked(now)) | set(head.captured) | set(s.captured)
    for p in paths:
        cur = s.captured.get(p, frozenset([None]))
        want = head.captured.get(p, frozenset([None]))
        if len(cur) == 1 and len(want) == 1:
            if cur != want:
                redone_paths.add(p)
                (v,) = want
                if v is None:
                    expected.pop(p, None)
                else:
                    expected[p] = v
        else:
            allowed[p] = set(want) | {now.get(p)}
    # what stays in the way of what the head has (a folder the user made where its file goes,
    # a file where its folder goes, never captured) stays, and the head's path is a gap
    # (`not-a-file`, `not-a-folder`: docs/rewind.md, "Exact trees"; seed 5018)
    # (only what surely stays: a path whose capture is open may be redone too, and then what it
    # blocked is written; seed 7124)
    surely = _blocked_by_what_stays(expected, redone_paths | set(allowed))
    for p in _blocked_by_what_stays(expected, redone_paths):
        if p not in surely:
            allowed[p] = {expected.get(p), now.get(p)}
        elif now.get(p) is None:
            expected.pop(p, None)
        else:
            expected[p] = now[p]
    # a folder the head lacks that still holds what stays (a file the user made since) is left,
    # with it: a gap `folder-not-empty` (docs/rewind.md, "Exact trees"; seeds 2014, 2061, 2072)
    full = with_folders(expected)
    # ... and one that holds only what may go (a capture the watcher may or may not have made)
    # may go with it (seed 7302: the model kept `d/` for a file the Redo could delete)
    firm = with_folders({p: v for p, v in expected.items()
                         if p not in allowed or None not in allowed[p]})
    for p in full:
        if p.endswith("/") and p not in firm and p not in allowed:
            allowed[p] = {FOLDER, None}
    return Loose(full, allowed)  # links stay: never captured, never planned


def _blocked_by_what_stays(expected: dict, redone_paths: set) -> set:
    """The head's paths in `expected` that something Redo leaves as it is stands in the way of:
    a file whose place keeps a folder, anything below a file that stays (`redone_paths` may name
    paths it may or may not change, taken as not staying: none of them is blocked)."""
    stays = {p for p, v in expected.items() if p not in redone_paths}
    out = set()
    for p in redone_paths:
        v = expected.get(p)
        if v is not None and v != FOLDER and p + "/" in stays and expected.get(p + "/") == FOLDER:
            out.add(p)
        if v == FOLDER and p.rstrip("/") in stays and expected.get(p.rstrip("/")) not in (None, FOLDER):
            out.add(p)  # a folder whose place keeps a file
        parts = p.rstrip("/").split("/")[:-1]
        if any("/".join(parts[:i]) in stays and expected.get("/".join(parts[:i])) not in (None, FOLDER)
               for i in range(1, len(parts) + 1)):
            out.add(p)
    return out


def redone(s: Session, head: Session, actual: dict) -> Session:
    """The session after a Redo to `head` left `actual` on disk: the head's, with what differs a
    change no turn made. A path Redo meant to change but left as it is (a folder that holds what
    stays, a file it could not write) is known as turnback knew it before, recorded as a change
    after the head's last turn (docs/rewind.md, "Exact trees"; seeds 2014, 2085: the model took
    the head's image, and expected a later Redo to remove the folder)."""
    new = head.copy()
    new.tree = actual
    # a Redo forgets nothing the current state knows: a path the head never saw keeps its image
    # (absent too), so what the user makes there later is an uncaptured change (seed 6029)
    new.seen |= s.seen
    new.loose[new.turns] |= changed(head.tree, actual)
    new.restored[new.turns] -= changed(head.tree, actual)
    now = tracked(actual)
    for p in set(s.captured) | set(head.captured):
        cur = s.captured.get(p, frozenset([None]))
        want = head.captured.get(p, frozenset([None]))
        if len(cur) == 1 and len(want) == 1 and cur != want and {now.get(p)} != set(want):
            new.captured[p] = cur
    return new
