"""The rule of `trust.py`, alone: is an entry the user's own, writable by nobody else, of the right
kind and not a link? Decided by `lstat`. Kept this small because the hook's upward walk compiles
it on every event (hooks/fast.py); `trust.py` explains a refusal and raises it.
"""

from __future__ import annotations

import os
import stat


def fault(st, private: bool = True) -> str | None:
    """What makes an entry untrustworthy (`link`, `owner`, `others`, `group`), or None."""
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if st.st_uid != os.geteuid():
        return "owner"
    if st.st_mode & stat.S_IWOTH:
        return "others"
    if st.st_mode & stat.S_IWGRP and (private or st.st_gid != os.getegid()):
        return "group"
    return None


def entry_ok(path, private: bool = True, folder: bool = False) -> bool | None:
    """True when trusted, False when not (or not looked at), None when absent. The hot check."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    kind = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
    return kind and fault(st, private) is None
