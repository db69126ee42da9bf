"""Crash and owner steps of the model machine (tests/model/machine.py): a settle or a rewind killed
at a file-system operation, and an owner started, stopped and SIGKILLed (idle, or under a rewind).
After each, the workspace and the session are the old state or the new one, never a third."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from machine import Divergence, actions
from reference import Loose, changed, overlay_untracked, read_tree, tracked, with_folders


class OwnerSteps:
    def start_owner(self):
        proc = self.sub("serve", "--background")
        if proc.returncode != 0:
            raise Divergence(f"serve --background -> {proc.returncode}\n{proc.stderr}")
        self.owner = True

    def owner_pid(self):
        return self.info()["owner"].get("pid")

    def wait_gone(self, pid, seconds=10.0):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            try:  # our own child? (it is not: the owner is detached) reap it if it is
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.02)
        raise Divergence(f"owner {pid} still alive after SIGKILL")

    @precondition(lambda self: self.OWNER and not self.owner)
    @rule()
    def owner_start(self):
        self.start_owner()
        self.check_turns("serve --background")

    @precondition(lambda self: self.OWNER and self.owner)
    @rule(kill=st.booleans())
    def owner_stop(self, kill):
        if kill:
            pid = self.owner_pid()
            if pid:
                os.kill(pid, signal.SIGKILL)
                self.wait_gone(pid)
        else:
            proc = self.sub("daemon", "stop")
            if proc.returncode != 0:
                raise Divergence(f"daemon stop -> {proc.returncode}\n{proc.stderr}")
        self.owner = False
        self.compare(self.s.tree, "the owner " + ("killed" if kill else "stopped"))
        self.check_turns("the owner " + ("killed" if kill else "stopped"))

    # -- crashes ------------------------------------------------------------------------------------
    @precondition(lambda self: not self.owner)
    @rule(steps=st.lists(actions, max_size=3), at=st.integers(1, 60))
    def settle_killed(self, steps, at):
        """A turn whose settle is killed at its at-th file-system operation; the next open
        recovers, and the turn is settled again if it was still running."""
        self.begin_turn(steps)
        self.sub("turn", "settle", env={"TURNBACK_CRASH_AT": str(at)})
        info = self.info()
        if info["turnCount"] != self.s.turns:
            raise Divergence(f"a settle killed at {at}: {info['turnCount']} turns, "
                             f"the model has {self.s.turns}")
        self.cli("turn", "settle", want=None)  # settled already, or settled now
        self.s.settle()
        self.compare(self.s.tree, f"a settle killed at operation {at}")
        self.check_turns(f"a settle killed at operation {at}")

    @precondition(lambda self: self.s.turns > 0 and (not self.owner or self.OWNER))
    @rule(n=st.integers(1, 8), at=st.integers(1, 90), delay=st.integers(0, 30))
    def rewind_killed(self, n, at, delay):
        """A full rewind to before prompt n killed: without an owner at its at-th file-system
        operation, with one by SIGKILL of the owner `delay` ms into the request."""
        s = self.s
        n = 1 + (n - 1) % s.turns
        keep, target = n - 1, s.C[n]
        unseen = s.unseen(target)
        shadowed = s.shadowed(target, unseen)
        target = s.left_in_place(target, unseen)
        # a folder the boundary lacks that holds a file the user made stays, with it (as rewind)
        planned = changed(with_folders(overlay_untracked(target, s.tree)), s.tree)
        old = s.copy()
        h0 = self.head_before()
        what = (f"rewind --before-prompt {n} killed at operation {at}" if not self.owner
                else f"rewind --before-prompt {n} with its owner killed after {delay} ms")
        args = ["rewind", "--before-prompt", str(n), "--yes"]
        if not self.owner:
            self.sub(*args, env={"TURNBACK_CRASH_AT": str(at)})
        else:
            pid = self.owner_pid()
            proc = subprocess.Popen([*self.sub_argv(), *args], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(delay / 1000)
            if pid:
                os.kill(pid, signal.SIGKILL)
                self.wait_gone(pid)
            proc.wait(timeout=120)
            self.owner = False
        self.cli("gc")  # the next process that takes the store recovers (info only looks)
        info = self.info()
        new_tree = with_folders(overlay_untracked(target, s.tree))
        actual = read_tree(self.root)
        if info["turnCount"] == keep and keep != s.turns:
            self.left(h0, info["headSeq"], planned)
            maybe = {p: {s.tree[p], None} for p in unseen} if self.OWNER else {}
            if self.OWNER:
                maybe.update({p: {v, None} for p, v in shadowed.items()})
            diff = Loose(new_tree, maybe).differences(actual)
            if diff:
                raise Divergence(f"{what}: committed, but the workspace is not the new state:\n  "
                                 + "\n  ".join(diff))
            self.s.tree = actual
            for p in planned:
                s.captured[p] = frozenset([tracked(actual).get(p)])
            s.seen |= planned
            s.rewound(new_tree, unseen)
            s.truncate(keep)
        else:
            diff = Loose(old.tree).differences(actual)
            if diff or info["turnCount"] != old.turns:
                raise Divergence(f"{what}: {info['turnCount']} turn(s) and a workspace that is "
                                 "neither the old state nor the new one:\n  " + "\n  ".join(diff))
            s.maybe_captured(planned)
        self.check_turns(what)
