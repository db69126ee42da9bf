"""Putting one file of an interrupted or failed transaction in its place, without harming newer work.

A transaction knows exactly two images for each file it touches: its backup (the disk before) and its
target (what it writes). Whoever settles a file later (the rollback, the recovery at open,
`recovery/resolve retry`) may overwrite only those two: a file whose disk image is now a third one was
changed by someone after the transaction (a user, a later turn) and is left as it is and reported, so
that it goes into a recovery record instead of being lost. Each image goes with its permission bits:
bytes right and bits wrong is not settled (a chmod alone is a change), and is put right by a chmod.
"""

from __future__ import annotations

import os
import stat as statmod

from ..errors import TurnbackError
from ..model.images import ABSENT
from ..store import fs
from .disk import Put, current_mode, disk_image, drain, put_many_job


def settle(ws, objects, rel: str, want, allowed=(), *, max_bytes: int, mode: int | None = None,
           allowed_modes=()) -> str | None:
    """Make rel hold `want` with the permission bits `mode` if the disk holds that already or one of
    `allowed` (with `allowed_modes[i]`, by position); return None when it does now, else a sentence
    saying why it was left alone or could not be written. A mode of None (unknown: a record of
    before modes) matches any bits and leaves them as they are."""
    verdict = judge(ws, objects, rel, want, allowed, max_bytes=max_bytes, mode=mode,
                    allowed_modes=allowed_modes)
    if verdict is None or isinstance(verdict, str):
        return verdict
    try:
        drain(put_many_job(ws, objects, [verdict], stop_on_error=True))
    except Exception as exc:  # noqa: BLE001 - any failure is reported; the caller keeps going
        return f"{type(exc).__name__}: {exc}"
    return None


def _holds(now, now_mode, image, mode) -> bool:
    return now == image and (mode is None or image == ABSENT or now_mode == mode)


def settle_all(ws, objects, files: list[dict], toward: str, *, max_bytes: int) -> list[dict]:
    """Settle every file toward its `toward` image ("backup" or "to") and that image's mode
    (`backupMode`, `toMode`), newest first; return the files left unsettled as recovery entries:
    {rel, backup: the image to put back, backupMode, left, leftMode, error}.

    Each file is judged on its own (`judge`: right already, ours to write, or someone else's now),
    and the writes are made in batches whose durability is paid once per batch and once per folder
    (`put_many_job`), not twice per file: rolling back 3,000 files costs a few syncs, not 6,000."""
    other = "to" if toward == "backup" else "backup"
    failed, waiting = [], list(reversed(files))
    # A file and a folder that swapped places stand in each other's way until the batch has
    # removed one: what was left alone is judged again once, after the first batch (issue 43's
    # long run, seed 2014: a rollback left the folder out, and the tree was neither old nor new).
    for last in (False, True):
        puts, entries, again = [], {}, []
        for f in waiting:
            want_mode, other_mode = f.get(toward + "Mode"), f.get(other + "Mode")
            entry = {"rel": f["rel"], "backup": f[toward], "backupMode": want_mode,
                     "left": f[other], "leftMode": other_mode}
            verdict = judge(ws, objects, f["rel"], f[toward], (f[other],), max_bytes=max_bytes,
                            mode=want_mode, allowed_modes=(other_mode,))
            if isinstance(verdict, str):
                (failed.append(dict(entry, error=verdict)) if last else again.append(f))
            elif verdict is not None:
                puts.append(verdict)
                entries[f["rel"]] = entry
        try:
            errors = drain(put_many_job(ws, objects, puts, stop_on_error=False))
        except Exception as exc:  # noqa: BLE001 - an unforeseen failure: none of the batch is sure
            errors = {p.rel: f"{type(exc).__name__}: {exc}" for p in puts}
        failed += [dict(entries[rel], error=error) for rel, error in errors.items()]
        if not again:
            break
        waiting = again
    return failed


def judge(ws, objects, rel: str, want, allowed=(), *, max_bytes: int, mode: int | None = None,
          allowed_modes=()):
    """What settling rel needs: None (it holds `want` already), a `Put` (it holds one of `allowed`:
    ours to overwrite), or a sentence saying why it is left alone."""
    now, problem = disk_image(ws, rel, objects.hasher, max_bytes=max_bytes)
    if problem is not None:
        return f"left alone: it cannot be read safely now ({problem})"
    now_mode = current_mode(ws, rel)
    if _holds(now, now_mode, want, mode):
        return None
    modes = list(allowed_modes) + [None] * (len(allowed) - len(allowed_modes))
    if not any(_holds(now, now_mode, image, m) for image, m in zip(allowed, modes)):
        return ("left alone: it changed after the transaction (its image is neither the one the "
                "transaction left nor its backup)")
    return Put(rel, want, mode, bits_only=now == want)


def missing_folders(ws, rel: str) -> list[str]:
    """The parent folders of rel that do not exist yet (shallowest first): a restore would create them."""
    parts = rel.rstrip("/").split("/")[:-1]  # a folder key's own folder is its change, not a parent
    out = []
    for i in range(len(parts)):
        sub = "/".join(parts[: i + 1])
        if out or not os.path.lexists(ws.root / sub):
            out.append(sub)
    return out


def remove_created_folders(ws, files: list[dict]) -> None:
    """After a rollback: remove the folders the transaction created, deepest first, when empty.
    Best effort: a folder left behind holds nothing of the user's."""
    folders = sorted({d for f in files for d in f.get("dirs", ())}, key=lambda d: -d.count("/"))
    for rel in folders:
        try:
            ws.check_components(rel)
            path = ws.abs_path(rel)
            st = os.lstat(path)
            if not statmod.S_ISDIR(st.st_mode) or os.listdir(path):
                continue
            fs.rmdir(path)
            fs.fsync_dir(path.parent)
        except (OSError, TurnbackError):
            continue
