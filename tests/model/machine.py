"""The state machine that drives the real command line (and a real owner) through random sequences
and compares the workspace and the session with the reference model (tests/model/reference.py)
after every step. The test module picks its size; this module holds the steps.

Each step is what a person or an agent does: a turn with writes, deletes, renames, mode changes,
binary, empty and large files in nested folders (a file that becomes a folder, names with spaces and
a newline); the user's own edits between turns (a symlink, a folder filled while a rewind wants it
gone, a file made unreadable); rewinds by both boundaries and all three modes, with and without
keep-my-edits; restore of a file or a folder; Redo; gc and fsck; and crashes: a settle and a rewind
killed at a file-system operation (`TURNBACK_CRASH_AT`), an owner started, stopped, SIGKILLed idle
and SIGKILLed under a rewind. After a crash the state must be the old one or the new one.

Commands run through `turnback.cli.main.main` in this process (the command line's own code, without
a start-up per step); crashes and the owner are real processes of the venv's `turnback`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from reference import (FOLDER, Loose, Session, changed, is_link, overlay_untracked, read_tree,
                       redo_expectation, redone, tracked, with_folders)

from turnback.cli.fast import main as command_line

TB = [sys.executable, "-m", "turnback"]
BIG = bytes(range(256)) * 1200  # 300 KiB: a pack's delta and a large read, under the size limit
CONTENTS = {"empty": b"", "text": b"1\n2\n3\n4\n5\n", "text-2": b"1\n2\nthree\n4\n5\n",
            "text-5": b"1\n2\n3\n4\nfive\n", "text-25": b"1\n2\nthree\n4\nfive\n",
            "binary": b"\x00\x01binary\xff\n", "big": BIG}
FILES = ["a.txt", "b.bin", "sp ace.txt", "new\nline.txt", "d/x.txt", "d/e/y.txt", "d/e/z sh",
         "p", "p/q.txt", "big.dat"]
FOLDERS = ["d/", "d/e/", "n/", "p/"]
MODES = [0o644, 0o755, 0o600, 0o000]  # 0o000: unreadable to its owner (root reads it all the same)

actions = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES), st.sampled_from(sorted(CONTENTS))),
    st.tuples(st.just("delete"), st.sampled_from(FILES)),
    st.tuples(st.just("chmod"), st.sampled_from(FILES), st.sampled_from(MODES[:3])),
    st.tuples(st.just("rename"), st.sampled_from(FILES), st.sampled_from(FILES)),
    st.tuples(st.just("mkdir"), st.sampled_from(FOLDERS)),
    st.tuples(st.just("rmtree"), st.sampled_from(FOLDERS)),
)
user_actions = st.one_of(actions, st.tuples(st.just("chmod"), st.sampled_from(FILES),
                                            st.sampled_from(MODES)))


def act(root: Path, action) -> None:
    """Do one action on the disk, as a person or an agent would (not through turnback)."""
    kind, *args = action
    path = root / args[0] if args else None
    if kind == "write":
        _clear_way(root, args[0])
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)  # the path becomes a file
        new = not path.exists()
        path.write_bytes(CONTENTS[args[1]])
        if new:
            os.chmod(path, 0o644)
    elif kind == "delete" and path.is_file():
        path.unlink()
    elif kind == "chmod" and path.is_file() and not path.is_symlink():
        os.chmod(path, args[1])
    elif kind == "rename" and path.is_file() and args[0] != args[1] \
            and not args[1].startswith(args[0] + "/"):  # (a file cannot move into itself)
        if args[0].startswith(args[1] + "/"):  # p/q.txt -> p: out of the folder it replaces
            os.rename(path, root / ".model-aside")
            path = root / ".model-aside"
        _clear_way(root, args[1])
        dst = root / args[1]
        if dst.is_dir():
            shutil.rmtree(dst)
        os.rename(path, dst)
    elif kind == "mkdir":
        _clear_way(root, args[0] + "x")
    elif kind == "rmtree" and path.is_dir():
        shutil.rmtree(path)
    elif kind == "link" and not os.path.lexists(path):
        os.symlink(args[1], path)
    elif kind == "unlink" and path.is_symlink():
        path.unlink()


def _clear_way(root: Path, rel: str) -> None:
    """Make the folders above rel, replacing a file that stands where a folder must go."""
    parts = rel.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        p = root.joinpath(*parts[:i])
        if p.is_symlink() or p.is_file():
            p.unlink()  # the file becomes a folder
        p.mkdir(exist_ok=True)


class Divergence(AssertionError):
    pass


class Machine(RuleBasedStateMachine):
    OWNER = False  # a machine with a live owner from the start (and owner steps)

    def __init__(self):
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="tb-model-"))
        self.root = self.tmp / "ws"
        self.root.mkdir()
        (self.root / "a.txt").write_bytes(CONTENTS["text"])
        os.chmod(self.root / "a.txt", 0o644)
        self.s = Session(tree=read_tree(self.root))
        self.s.E.append(dict(self.s.tree))
        self.heads: dict[int, Session] = {}
        self.owner = False
        self.prompts = 0

    # -- plumbing ------------------------------------------------------------------------------
    def cli(self, *args, want=0):
        """`turnback --workspace ROOT ARGS…` through the command's own entry point, in this
        process, from the workspace folder."""
        old = os.getcwd()
        os.chdir(self.root)
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = command_line(["--workspace", str(self.root), *args])
                except SystemExit as exc:  # argparse usage errors
                    rc = exc.code
        finally:
            os.chdir(old)
        out, err = out.getvalue(), err.getvalue()
        if want is not None and rc != want:
            raise Divergence(f"turnback {args!r} -> {rc}\n{out}\n{err}")
        return rc, out, err

    def js(self, *args):
        return json.loads(self.cli("--json", *args)[1])

    def sub(self, *args, env=None, timeout=120):
        full = dict(os.environ, **(env or {}))
        return subprocess.run([*TB, "--workspace", str(self.root), *args], capture_output=True,
                              text=True, timeout=timeout, env=full)

    def sub_argv(self):
        return [*TB, "--workspace", str(self.root)]

    def info(self) -> dict:
        return self.js("info")

    def compare(self, expected, what: str) -> None:
        actual = read_tree(self.root)
        exp = expected if isinstance(expected, Loose) else Loose(expected)
        diff = exp.differences(actual)
        if diff:
            raise Divergence(f"after {what}, the workspace is not what the documents promise:\n  "
                             + "\n  ".join(diff))
        self.s.tree = actual

    def check_turns(self, what: str) -> dict:
        info = self.info()
        if info["turnCount"] != self.s.turns:
            raise Divergence(f"after {what}: {info['turnCount']} turn(s), the model has "
                             f"{self.s.turns}")
        if info.get("pending"):
            raise Divergence(f"after {what}: a transaction is still pending: {info['pending']}")
        if info.get("headSeq") is not None:
            self.heads[info["headSeq"]] = self.s.copy()
        return info

    def head_before(self) -> int:
        return self.info()["headSeq"] or 0

    def left(self, h0: int, commit_seq: int | None, planned: set[str]) -> None:
        """The group a transaction leaves: its newest head is the state now with the disk images
        of what the plan overwrites (the *before* head over uncaptured edits), published after
        h0; head h0 itself stays the state it was (the model gave it the disk's images, and a Redo
        to it expected the user's uncaptured edit back: seed 2008)."""
        snap = self.s.copy()
        now = tracked(self.s.tree)
        for p in planned:
            snap.captured[p] = frozenset([now.get(p)])
        for seq in range(h0 + 1, (commit_seq or h0 + 1)):
            self.heads[seq] = snap

    def teardown(self):
        try:
            if self.owner:
                self.sub("daemon", "stop", timeout=60)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- steps: turns and the user ---------------------------------------------------------------
    @initialize()
    def start(self):
        if self.OWNER:
            self.start_owner()

    def begin_turn(self, steps) -> None:
        """A turn begun and its agent's steps done on the disk (the settle is the caller's)."""
        self.prompts += 1
        self.s.begin()
        self.cli("turn", "begin", "--prompt", f"p{self.prompts}")
        for a in steps:
            act(self.root, a)
        self.s.tree = read_tree(self.root)

    @rule(steps=st.lists(actions, max_size=4))
    def turn(self, steps):
        self.begin_turn(steps)
        h0 = self.head_before() if self.owner else 0
        self.cli("turn", "settle")
        if self.owner:
            self.published_after(h0)
        self.s.settle()
        self.check_turns("a turn")

    def published_after(self, h0: int, timeout: float = 30.0) -> None:
        """Wait for the head a settle through an owner publishes: the command line's settle answers
        once durable, and `info` may name the previous head until the owner has published
        (docs/protocol.md, `answer`). Filed under that previous head, the settled state would make
        a later Redo to it expect the turn's files (the suspected cause of seed 5013; not met since)."""
        deadline = time.monotonic() + timeout
        while (self.info()["headSeq"] or 0) <= h0:
            if time.monotonic() > deadline:
                raise Divergence(f"the owner published no head after head {h0} in {timeout:.0f} s")
            time.sleep(0.02)

    @rule(steps=st.lists(user_actions, min_size=1, max_size=3))
    def user_edit(self, steps):
        before = dict(self.s.tree)
        for a in steps:
            act(self.root, a)
        self.s.tree = read_tree(self.root)
        self.s.user_changed(before, self.owner)

    @rule(on=st.booleans())
    def user_symlink(self, on):
        act(self.root, ("link", "ln", "a.txt") if on else ("unlink", "ln"))
        self.s.tree = read_tree(self.root)

    @precondition(lambda self: self.heads)
    @rule()
    def gc_and_fsck(self):
        self.cli("gc")
        rc, out, err = self.cli("fsck", want=None)
        if rc != 0:
            raise Divergence(f"fsck -> {rc}\n{out}\n{err}")
        self.compare(self.s.tree, "gc and fsck")
        self.check_turns("gc and fsck")

    # -- rewind ----------------------------------------------------------------------------------
    def rewind_plan(self, n: int, after: bool, mode: str):
        keep = n if after else n - 1
        target = self.s.C[keep + 1] if keep < self.s.turns else self.s.tree
        flag = ["--after-response" if after else "--before-prompt", str(n)]
        flag += {"all": [], "files": ["--files-only"], "conversation": ["--conversation-only"]}[mode]
        return keep, target, flag

    @precondition(lambda self: self.s.turns > 0)
    @rule(n=st.integers(1, 8), after=st.booleans(),
          mode=st.sampled_from(["all", "all", "files", "conversation"]), keep_edits=st.booleans())
    def rewind(self, n, after, mode, keep_edits):
        n = 1 + (n - 1) % self.s.turns
        keep, target, flag = self.rewind_plan(n, after, mode)
        if keep == self.s.turns and mode != "files":
            return  # the boundary is the current state: nothing to rewind
        unseen = self.s.unseen(target)
        shadowed = self.s.shadowed(target, unseen)
        target = self.s.left_in_place(target, unseen)
        planned = changed(with_folders(overlay_untracked(target, self.s.tree)), self.s.tree)
        cand = self.js("rewind", *flag)["candidate"]
        what = f"rewind {' '.join(flag)}{' keeping edits' if keep_edits else ''}"
        listed = {f["path"] for f in cand["files"]
                  if f["action"] in (("kept",) if mode == "conversation" else ("restore", "delete"))}
        if listed != planned and not (self.OWNER and listed ^ planned <= unseen | set(shadowed)):
            raise Divergence(f"{what}: the plan lists {sorted(listed)}, the model "
                             f"{sorted(planned)}")
        flagged = {f["path"] for f in cand["files"] if f.get("userEdit")}
        if mode != "conversation":
            must, may = self.s.must_flag(keep, planned), self.s.may_flag(keep)
            if not must <= flagged <= may:
                raise Divergence(f"{what}: flagged {sorted(flagged)}; must flag {sorted(must)}, "
                                 f"may flag only {sorted(may)}")
        h0 = self.head_before()
        out = self.js("rewind", *flag, "--yes", *(["--keep-user-edits"] if keep_edits else []))
        if out["commit"]["status"] != ("nothing-to-do" if mode == "files" and not planned
                                       else "committed"):
            raise Divergence(f"{what}: {out['commit']}")
        # a *before* head holds what the commit overwrote; a kept file it never backed up
        overwritten = planned - (flagged if keep_edits else set())
        self.left(h0, out["commit"].get("headSeq"), overwritten if mode != "conversation" else set())
        self.apply_rewind(keep, target, planned, mode, flagged if keep_edits else set(), what,
                          unseen, shadowed)

    def apply_rewind(self, keep, target, planned, mode, kept, what, unseen=(), shadowed=None):
        s = self.s
        if mode == "conversation":
            self.compare(s.tree, what)
        else:
            expected = overlay_untracked(target, s.tree)
            # with a live owner, a path the user made may have been captured since, or not yet
            allowed = {p: {s.tree[p], None} for p in unseen} if self.OWNER else {}
            if self.OWNER:
                allowed.update({p: {v, None} for p, v in (shadowed or {}).items()})
            touched = s.touched_by_turns(keep)
            for p in kept:
                if p in touched:
                    allowed[p] = "any"  # merged with a discarded turn's change: the merge decides
                elif p in s.tree:
                    expected[p] = s.tree[p]
                else:
                    expected.pop(p, None)
            self.compare(Loose(with_folders(expected), allowed), what)
        now = tracked(s.tree)
        written = planned - kept if mode != "conversation" else set()
        s.seen |= written
        for p in written:
            s.captured[p] = frozenset([now.get(p)])
        # a kept file stays as turnback knew it (an uncaptured edit stays uncaptured: the look is
        # read only; seed 5024); one merged with a discarded turn's change may be written anew
        for p in (kept & planned & s.touched_by_turns(keep)):
            s.captured[p] = s.captured.get(p, frozenset([None])) | {now.get(p)}
        if mode == "files":
            s.loose[s.turns] |= planned
            s.restored[s.turns] |= planned - kept  # recorded as a restore (travel/filestate.py)
        else:
            # a conversation-only rewind's new state knows the boundary's image of what the disk
            # already holds, as a full rewind's does (what it keeps differs: skipped; seed 7125)
            s.rewound(with_folders(overlay_untracked(target, s.tree)),
                      (set(kept) if mode == "all" else planned) | set(unseen))
            s.truncate(keep)
            s.loose[keep] |= planned if mode == "conversation" else (kept & planned)
            s.restored[keep] -= planned if mode == "conversation" else (kept & planned)
        self.check_turns(what)

    # -- restore ---------------------------------------------------------------------------------
    @precondition(lambda self: self.s.turns > 0)
    @rule(k=st.integers(1, 8), at_end=st.booleans(), pick=st.integers(0, 40))
    def restore(self, k, at_end, pick):
        s = self.s
        k = 1 + (k - 1) % s.turns
        moment = s.E[k] if at_end else s.C[k]
        files = sorted(p for p, v in tracked(moment).items() if v != FOLDER)
        folders = sorted(p for p, v in moment.items() if v == FOLDER)
        specs = files + folders
        if not specs:
            return
        spec = specs[pick % len(specs)]
        if spec.endswith("/"):
            chosen = [p for p in files if p.startswith(spec)]
        else:
            chosen = [spec]
        what = f"restore {spec!r} {'--turn' if at_end else '--before-prompt'} {k}"
        # a file whose place holds a folder now (or a file where its folder goes) is a gap: what
        # stands there stays (docs/rewind.md, "Exact trees"); the others are restored
        blocked = {p for p in chosen if _blocked(s.tree, p)}
        expected = dict(s.tree)
        for p in chosen:
            if p not in blocked:
                expected[p] = moment[p]
        expected = with_folders(expected)
        planned = changed(expected, s.tree)
        conflict = bool(blocked)
        h0 = self.head_before()
        rc, out, err = self.cli("--json", "restore", str(self.root / spec.rstrip("/")),
                                "--turn" if at_end else "--before-prompt", str(k), "--yes",
                                want=None)
        if rc != 0:
            if not chosen and "[no-match]" in err or conflict:
                self.compare(s.tree, what + " (refused)")
                self.check_turns(what)
                return
            raise Divergence(f"{what} -> {rc}\n{out}\n{err}")
        commit = json.loads(out)["commit"]
        self.left(h0, commit.get("headSeq") if commit else None, planned)
        self.compare(expected, what)
        for p in planned:
            s.captured[p] = frozenset([tracked(s.tree).get(p)])
        s.seen |= planned
        s.loose[s.turns] |= planned
        s.restored[s.turns] |= planned
        self.check_turns(what)

    # -- Redo ------------------------------------------------------------------------------------
    @precondition(lambda self: self.heads)
    @rule(pick=st.integers(0, 20))
    def redo(self, pick):
        groups = self.js("redo")["groups"]
        if not groups:
            return
        self.redo_to(groups[pick % len(groups)]["headSeq"])

    def redo_to(self, seq: int):
        known = [q for q in self.heads if q <= seq]
        if not known:
            raise Divergence(f"Redo offers head {seq}, which the model never saw published")
        head = self.heads[max(known)]
        expected = redo_expectation(self.s, head)
        planned = changed(expected.tree, self.s.tree) | set(expected.allowed)
        h0 = self.head_before()
        out = self.js("redo", "--head", str(seq), "--yes")
        self.left(h0, (out.get("commit") or out).get("headSeq"), planned)
        what = f"redo --head {seq}"
        self.compare(expected, what)
        actual = self.s.tree
        self.s = redone(self.s, head, actual)
        self.check_turns(what)


def _blocked(tree: dict, rel: str) -> bool:
    """Restoring a file at rel meets a folder there, or a file where one of its folders goes."""
    if tree.get(rel + "/") == FOLDER:
        return True
    parts = rel.split("/")[:-1]
    return any(tree.get("/".join(parts[:i])) not in (None, FOLDER)
               for i in range(1, len(parts) + 1)) or any(is_link(tree.get("/".join(parts[:i])))
                                                        for i in range(1, len(parts) + 1))
