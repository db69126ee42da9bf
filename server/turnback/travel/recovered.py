"""What the recovery at open did, said so: the `turnback/recovered` notice and its sentences.

`Workbench.open` (and an observer that takes the store over) settles every interrupted transaction
before it accepts work (`transaction.recover`) and then finishes or forgets interrupted forks
(`ForkFeature.recover_interrupted`). This turns those report lines into one notice the clients hear
and the command line prints: for each transaction whether it was finished (its commit point had been
reached, so its files were put at their new images) or rolled back (every file put back), how many
files, and what could not be settled; for each fork what became of its branch.
"""

from __future__ import annotations

ACTION_WORDS = {
    "finished": "finished: it had reached its commit point, so its {files} file(s) were put at "
                "their new images",
    "rolled-back": "rolled back: it had not reached its commit point, so its {files} file(s) were "
                   "put back as they were before it and the session did not change",
    "superseded": "its outcome was settled already; only its leftover intent record was removed "
                  "(no file touched)",
    "deferred": "could not be decided yet ({reason}); its intent record stays and nothing else is "
                "changed until it is",
    "unreadable": "its intent record cannot be read; it is kept as evidence (see `turnback fsck`)",
}

FORK_WORDS = {
    "finished": "the fork of session {parent} at turn {turn} was finished: the branch {branch} is "
                "live and {parent} is frozen",
    "rolled-back": "the fork of session {parent} at turn {turn} never reached its commit point: "
                   "{parent} stays live, as it was",
    "complete": "the worktree fork into {worktree} had finished; its record is complete now",
    "abandoned": "the worktree fork into {worktree} was interrupted; the folder is left as it is "
                 "(outside the workspace, never deleted)",
}


def notice(open_report: dict, to_uri=None) -> dict | None:
    """The `turnback/recovered` params for what an open recovered, or None when it recovered nothing."""
    txns = [dict(line) for line in open_report.get("recovered") or ()]
    forks = [dict(line) for line in open_report.get("forks") or ()]
    if not txns and not forks:
        return None
    for line in txns:
        line["message"] = transaction_sentence(line)
        if to_uri is not None:
            line["failed"] = [to_uri(rel) for rel in line.get("failed", ())]
    for line in forks:
        line["message"] = fork_sentence(line)
    return {"transactions": txns, "forks": forks,
            "message": " ".join([line["message"] for line in txns + forks])}


def transaction_sentence(line: dict) -> str:
    what = line.get("operation") or "transaction"
    words = ACTION_WORDS.get(line.get("action"), "{action}").format(
        files=line.get("files", "?"), reason=line.get("reason", ""), action=line.get("action"))
    text = f"An interrupted {what} ({str(line.get('id'))[:12]}) was {words}."
    failed = line.get("failed") or ()
    if failed:
        text += (f" {len(failed)} file(s) had changed since and were left as they are, listed in a "
                 "recovery record (`turnback recovery`).")
    if line.get("tempFilesLeft"):
        text += " A temp file of it could not be removed yet; the next open tries again."
    return text


def fork_sentence(line: dict) -> str:
    fields = {"parent": str(line.get("parentId") or "?")[:12], "turn": line.get("turn", "?"),
              "branch": str(line.get("branchId") or "?")[:12],
              "worktree": line.get("worktree") or "?"}
    text = FORK_WORDS.get(line.get("action"), "fork {branch}: {action}").format(
        action=line.get("action"), **fields)
    return text[:1].upper() + text[1:] + "."
