"""The turn picker of `turnback rewind` and `turnback restore` when no boundary is given on a terminal.

It lists the turns (number, time, prompt, files changed, gaps), newest first; the arrow keys (or j/k,
Page Up/Down, Home/End) move, Enter chooses, `m` changes what a rewind puts back (code and
conversation, code only, conversation only), q or Esc cancels. Then the command shows the plan and
asks, as with a flag.

It draws with `curses` from the standard library: it reads the terminal's own key sequences and
capabilities from terminfo (arrows, paging, resizing, colours where there are some), which escape
codes written by hand would have to guess, and it is maintained with Python itself, so a list this
small needs no package from PyPI. It is imported only here, when a person runs the command on a
terminal: the hook fast path never loads it. A terminal curses cannot drive (TERM unset or `dumb`)
gets the same list numbered, and a typed number.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MODE_WORDS = {"all": "code and conversation", "files": "code only (every turn stays)",
              "conversation": "conversation only (every file stays)"}
MODE_ORDER = ("all", "files", "conversation")


@dataclass
class Row:
    value: object  # what choosing it returns (a boundary)
    label: str  # one line: number, time, prompt, files, gaps


class Cancelled(Exception):
    """The person left the picker without choosing."""


def choose(rows: list[Row], title: str, *, mode: str | None = None, stdin=None, stdout=None):
    """(the chosen row's value, the mode) — or Cancelled. `mode` None: no mode to change."""
    if not rows:
        raise Cancelled()
    term = os.environ.get("TERM", "")
    if term and term != "dumb":
        try:
            import curses
            import locale

            locale.setlocale(locale.LC_ALL, "")
            os.environ.setdefault("ESCDELAY", "50")  # Esc alone cancels at once, not after 1 s
            return curses.wrapper(_run, rows, title, mode)
        except Cancelled:
            raise
        except Exception:  # noqa: BLE001 - curses cannot drive this terminal: the numbered list
            pass
    return _numbered(rows, title, mode, stdin, stdout)


def _put(screen, y: int, text: str, attr) -> None:
    import curses

    try:
        screen.addstr(y, 0, text, attr)
    except (curses.error, UnicodeEncodeError):  # a locale without these characters
        screen.addstr(y, 0, text.encode("ascii", "replace").decode(), attr)


def _run(screen, rows: list[Row], title: str, mode: str | None):
    import curses

    try:
        curses.curs_set(0)
    except curses.error:
        pass
    screen.keypad(True)
    current, top = 0, 0
    while True:
        height, width = screen.getmaxyx()
        screen.erase()
        head = [title[: width - 1]]
        if mode is not None:
            head.append(f"puts back: {MODE_WORDS[mode]}   (m: change)"[: width - 1])
        head.append("up/down move - Enter choose - q cancel"[: width - 1])
        for i, line in enumerate(head):
            _put(screen, i, line, curses.A_BOLD if i == 0 else curses.A_NORMAL)
        room = max(1, height - len(head) - 1)
        if current < top:
            top = current
        elif current >= top + room:
            top = current - room + 1
        for i, row in enumerate(rows[top:top + room]):
            attr = curses.A_REVERSE if top + i == current else curses.A_NORMAL
            _put(screen, len(head) + 1 + i, row.label[: width - 1].ljust(width - 1), attr)
        screen.refresh()
        key = screen.getch()
        if key == 27:
            key = _escape(screen)
        if key in (curses.KEY_UP, ord("k")):
            current = max(0, current - 1)
        elif key in (curses.KEY_DOWN, ord("j")):
            current = min(len(rows) - 1, current + 1)
        elif key == curses.KEY_PPAGE:
            current = max(0, current - room)
        elif key == curses.KEY_NPAGE:
            current = min(len(rows) - 1, current + room)
        elif key in (curses.KEY_HOME, ord("g")):
            current = 0
        elif key in (curses.KEY_END, ord("G")):
            current = len(rows) - 1
        elif key == ord("m") and mode is not None:
            mode = MODE_ORDER[(MODE_ORDER.index(mode) + 1) % len(MODE_ORDER)]
        elif key in (curses.KEY_ENTER, 10, 13):
            return rows[current].value, mode
        elif key in (ord("q"), 27, 3):  # q, Esc, ^C
            raise Cancelled()


# Arrow keys some terminals send in their normal mode, when terminfo names the application-mode ones.
_CSI_KEYS = {ord("A"): "KEY_UP", ord("B"): "KEY_DOWN", ord("H"): "KEY_HOME", ord("F"): "KEY_END"}


def _escape(screen) -> int:
    """An Esc curses did not read as a key of terminfo's: the rest of an arrow key (`ESC [ B`), or
    Esc alone (cancel, 27)."""
    import curses

    screen.nodelay(True)
    try:
        second = screen.getch()
        if second in (ord("["), ord("O")):
            name = _CSI_KEYS.get(screen.getch())
            if name is not None:
                return getattr(curses, name)
        return 27
    finally:
        screen.nodelay(False)


def _numbered(rows: list[Row], title: str, mode: str | None, stdin, stdout):
    import sys

    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    print(title, file=stdout)
    if mode is not None:
        print(f"puts back: {MODE_WORDS[mode]} (the flags --files-only and --conversation-only "
              "change it)", file=stdout)
    for i, row in enumerate(rows, 1):
        print(f"  [{i}] {row.label}", file=stdout)
    print("Choose a number (empty to cancel): ", end="", file=stdout, flush=True)
    answer = stdin.readline().strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(rows):
        raise Cancelled()
    return rows[int(answer) - 1].value, mode
