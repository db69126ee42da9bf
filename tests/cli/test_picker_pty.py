"""The turn picker for real (issue 23, item 3): `turnback rewind` and `turnback restore` with no
boundary, run on a pseudo terminal; the keys go in as a person types them, and each step waits for
what the program printed (a gate), never for a time."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time

import pyte
import pytest
from cli_helpers import run_turnback, turnback_exe
from sessionkit import Agent

pytestmark = pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a pseudo terminal")
DOWN = b"\x1bOB"  # what xterm sends for the down arrow once a program asks for keypad mode
DOWN_CSI = b"\x1b[B"  # what some terminals send all the same


def _readable(fd: int, timeout: float) -> bool:
    """poll, not select: a worker that has opened many files has descriptors past select's 1024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, timeout) * 1000))


class Terminal:
    """A program on a pseudo terminal of 100x30: send keys, wait for text on its screen (the pty's
    output drawn by a VT100 emulator, so what is checked is what a person would see)."""

    def __init__(self, args, cwd, term="xterm"):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = {**os.environ, "TERM": term, "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen(args, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     close_fds=True, start_new_session=True)
        os.close(slave)
        self.screen = pyte.Screen(100, 30)
        self.stream = pyte.ByteStream(self.screen)
        self.seen = b""

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def row(self, text: str) -> int:
        return next(i for i, line in enumerate(self.screen.display) if text in line)

    def until(self, done, what: str, timeout: float = 60) -> None:
        """Read the program's output until `done()` holds (its own output is the gate)."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {what}; the screen:\n{self.text}"
            ready = _readable(self.master, left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the program ended and the terminal closed
                    chunk = b""
                assert chunk or done(), f"ended before {what}; the screen:\n{self.text}"
                self.seen += chunk
                self.stream.feed(chunk)

    def expect(self, text: str) -> None:
        self.until(lambda: text in self.text, repr(text))

    def highlighted(self) -> str:
        """The line drawn in reverse video: the picker's current choice."""
        for y in range(self.screen.lines):
            line = self.screen.buffer[y]
            if any(line[x].reverse for x in range(self.screen.columns)):
                return "".join(line[x].data for x in range(self.screen.columns)).rstrip()
        return ""

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> None:
        """Stop the program if a failed test left it running (its own process group)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(60)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def finish(self) -> int:
        try:
            while True:
                ready = _readable(self.master, 60)
                if not ready:
                    break
                chunk = os.read(self.master, 65536)
                if not chunk:
                    break
                self.seen += chunk
        except OSError:
            pass
        code = self.proc.wait(60)
        os.close(self.master)
        self.master = -1
        return code


@pytest.fixture
def terminal():
    """Terminal(args, cwd) for the test; every program still running at the end is stopped."""
    made: list[Terminal] = []

    def start(*args, **kw) -> Terminal:
        made.append(Terminal(*args, **kw))
        return made[-1]

    yield start
    for t in made:
        t.close()


@pytest.fixture
def session(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a0")
    a = Agent(root)
    for n in (1, 2, 3):
        a.turn(f"prompt number {n}", {"a.txt": f"a{n}"})
    a.close()
    return root


def turns(root) -> int:
    return len(json.loads(run_turnback("log", "--json", cwd=root).stdout)["turns"])


def test_pick_a_prompt_to_rewind_to_with_the_arrow_keys(session, terminal):
    t = terminal([*turnback_exe(), "rewind"], session)
    t.expect("Rewind to before which prompt?")
    t.expect("before prompt 1")  # the whole list is drawn: 3, 2, 1 (newest first)
    assert t.row("before prompt 3") < t.row("before prompt 2") < t.row("before prompt 1")
    assert "\u201cprompt number 3\u201d  1 file(s): a.txt" in t.highlighted()
    t.send(DOWN)  # from prompt 3 to prompt 2: the highlight moves with the key
    choose_and_confirm(t, "before prompt 2", "from turn 2", "rewind committed")
    assert turns(session) == 1 and (session / "a.txt").read_text() == "a1"


def choose_and_confirm(t, row: str, plan_says: str, done: str) -> None:
    """Wait for the highlight on `row`, choose it, check the plan shown, say yes, wait for `done`."""
    t.until(lambda: row in t.highlighted(), f"the highlight on {row}")
    t.send(b"\r")
    t.expect("Type yes to confirm")
    assert plan_says in t.text, t.text
    t.send(b"yes\r")
    t.expect(done)
    assert t.finish() == 0


def test_change_the_mode_in_the_picker(session, terminal):
    t = terminal([*turnback_exe(), "rewind"], session)
    t.expect("puts back: code and conversation")
    t.send(b"m")
    t.expect("puts back: code only")
    t.send(b"j")  # j moves down too
    choose_and_confirm(t, "before prompt 2", "Files only: every turn of the conversation stays.",
                       "rewind committed")
    assert turns(session) == 3 and (session / "a.txt").read_text() == "a1"


def test_pick_the_turn_to_restore_a_file_to(session, terminal):
    t = terminal([*turnback_exe(), "restore", "a.txt"], session)
    t.expect("Restore to how they were at which point?")
    t.expect("the start of the session")
    assert "end of turn 3" in t.highlighted()
    t.send(DOWN + DOWN_CSI)  # end of turn 3, 2, then 1
    choose_and_confirm(t, "end of turn 1", "at the end of turn 1", "restore committed")
    assert turns(session) == 3 and (session / "a.txt").read_text() == "a1"


def test_leaving_the_picker_changes_nothing(session, terminal):
    t = terminal([*turnback_exe(), "rewind"], session)
    t.expect("Rewind to before which prompt?")
    t.send(b"q")
    t.expect("Cancelled: nothing changed.")
    assert t.finish() == 0
    assert turns(session) == 3


def test_a_terminal_curses_cannot_drive_gets_a_numbered_list(session, terminal):
    t = terminal([*turnback_exe(), "rewind"], session, term="dumb")
    t.expect("Choose a number")
    assert "[3] before prompt 1" in t.text
    t.send(b"3\r")
    t.expect("Type yes to confirm")
    t.send(b"no\r")
    t.expect("Cancelled: nothing changed.")
    assert t.finish() == 0
    assert turns(session) == 3


def test_a_terminal_that_goes_away_ends_the_picker(session, terminal):
    """A hang-up (the terminal closed under it): the picker stops, it does not spin on a dead tty."""
    t = terminal([*turnback_exe(), "rewind"], session)
    t.expect("Rewind to before which prompt?")
    os.close(t.master)
    t.master = -1
    t.proc.wait(60)  # (a guard against a hang, not a measure of time)
    assert turns(session) == 3
