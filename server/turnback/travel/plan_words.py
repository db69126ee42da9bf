"""A rewind's plan in a person's words: the candidate's summary, what it does to files, the boundary.

Pure functions over the candidate dict (no state, no disk); restore's summary shares them, and the
command line names a boundary with `boundary_words`.
"""

from __future__ import annotations


def summary(c: dict) -> str:
    mode = c.get("mode", "all")
    if c.get("noop"):
        if mode == "files":
            return ("Nothing to rewind: every file already is as it was at this boundary. No file "
                    "changes and every turn stays.")
        return ("Nothing to rewind: this is the current state of the session. No file changes and "
                "no turn is discarded.")
    keep, discard = c["keep"], c["discard"]
    parts = []
    if mode == "files":
        parts.append(f"Files only: every turn stays (the conversation is not changed); the files go "
                     f"back to how they were {boundary_words(c['boundary'])}.")
    elif keep["turnCount"]:
        span = "turn 1" if keep["turnCount"] == 1 else f"turns 1–{keep['turnCount']}"
        parts.append(f"Keeps {span}, ending with turn {keep['last']['turn']} "
                     f"(\u201c{_short(keep['last']['prompt'])}\u201d).")
    else:
        parts.append("Keeps no turns: the session becomes empty.")
    if discard["turnCount"]:
        parts.append(f"Discards {discard['turnCount']} turn(s) from turn {discard['first']['turn']} "
                     f"(\u201c{_short(discard['first']['prompt'])}\u201d) on, with their answers.")
    parts.extend(file_sentences(c))
    crossed = c["effects"]["crossedUncompensated"] + c["effects"]["wouldCrossOnRewind"]
    if crossed:
        what = {s["id"]: s["what"] for s in c.get("steps") or []}  # the steps in words
        parts.append(f"{len(crossed)} step(s) already left this machine and stay done: "
                     + ", ".join(what.get(sid, sid) for sid in crossed) + ".")
    cleared = {k: v for k, v in c["workflowCleared"].items() if v}
    if cleared:
        parts.append("Clears live " + ", ".join(f"{v} {k}" for k, v in cleared.items()) + ".")
    return " ".join(parts)


def file_sentences(c: dict, who: str = "no discarded turn") -> list[str]:
    """What a plan does to files, in sentences: shared by every rewind mode and by restore."""
    if c.get("mode") == "conversation":
        kept = [f["path"] for f in c["files"]]
        return [f"Conversation only: every file stays as it is now ({len(kept)} file(s) the "
                "discarded turns changed are kept" + (": " + ", ".join(kept[:8]) + ("…" if len(kept) > 8
                                                                                   else "")
                                                       if kept else "") + ")."]
    parts = []
    restore = [f for f in c["files"] if f["action"] == "restore"]
    delete = [f for f in c["files"] if f["action"] == "delete"]
    edits = [f for f in c["files"] if f.get("userEdit") and f["action"] != "unchanged"]
    parts.append(f"Restores {len(restore)} file(s) and deletes {len(delete)}.")
    if edits:
        # here, not at the top: `user_edits` brings the model and the object store, which the
        # command line's `boundary_words` (a plan printed through the owner) never needs
        from .user_edits import USER_EDIT_WORDS, keep_words

        parts.append(f"Overwrites edits {who} made (yours, or another program's): "
                     + ", ".join(f["path"] + (f" ({USER_EDIT_WORDS[f['userEditBy']]})"
                                              if f.get("userEditBy") in USER_EDIT_WORDS else "")
                                 for f in edits)
                     + "; keeping your edits: " + "; ".join(
                         f"{f['path']} {keep_words(f)}" for f in edits) + ".")
    if c["gaps"]:
        parts.append("Cannot undo: " + "; ".join(
            f"{g['reason']}" + (f" ({_tail(g['uri'])})" if g.get("uri") else "") for g in c["gaps"]) + ".")
    return parts


def boundary_words(boundary: dict) -> str:
    """A boundary as a person says it."""
    n = boundary.get("turn")
    if boundary.get("kind") == "afterResponse":
        return f"at the end of turn {n}"
    if boundary.get("kind") == "beforeDirectiveAttempt":
        return f"before the attempt at directive {boundary.get('directiveId')} (turn {n})"
    return f"before prompt {n}"


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _tail(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]
