"""Text or not, lines, and unified diffs: the rules every diff and merge of images follows.

An image is text when it is valid UTF-8 with no NUL byte; anything else is binary and is never
diffed line by line or merged (a merge keeps a binary file whole). Lines keep their endings, so a
diff or a merge never rewrites `\\r\\n` as `\\n`.
"""

from __future__ import annotations

import difflib

# Above this many bytes on either side no line diff is computed on the server (difflib's matching is
# quadratic at worst); the change is still listed, and the clients show both images in their own diff.
MAX_DIFF_BYTES = 512 * 1024


def is_text(data: bytes | None) -> bool:
    if data is None:
        return True  # an absent file diffs as empty text
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def lines(data: bytes | None) -> list[str]:
    """The lines of a text image, each with its ending; an absent file has none."""
    return [] if not data else data.decode("utf-8").splitlines(keepends=True)


def unified(before: bytes | None, after: bytes | None, name: str, label_before: str,
            label_after: str, *, context: int = 3) -> str:
    """A unified diff of two text images (absent is None) of the file `name`, each side's label in
    the header's date field (`--- app.py<TAB>before turn 3`, which diff-mode and patch read as the
    file name plus a note). A last line without an ending gets git's `\\ No newline` marker."""
    out = []
    for line in difflib.unified_diff(lines(before), lines(after), name, name, label_before,
                                     label_after, n=context):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def line_counts(before: bytes | None, after: bytes | None) -> tuple[int, int]:
    """(lines added, lines removed) between two text images."""
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, lines(before), lines(after), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed
