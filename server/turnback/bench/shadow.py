"""checkpoint-vs-shadow-git: turnback's checkpoints against a shadow git repository on the same tree.

Two identical workspaces are generated from one seed (50 k files at `full`), one for each side, so
neither sees the other's files or caches. Each side takes:

1. the initial checkpoint: ours is opening the store and the first pre-turn sweep (hashes every file);
   the peer's is `git init` + `git add -A` + `git commit`;
2. a pre-turn checkpoint with nothing changed since (turn 2's begin: a stat-only sweep) against
   `git add -A` + `git commit --allow-empty`;
3. the turn: 10 files change and 2 are created; ours captures those 12 (as an agent hook does) and
   settles the turn (settle sweep + publication); the peer takes its post-turn checkpoint;
4. the restore of that turn: our rewind (prepare + commit) against `git restore` + `git clean`.

Bytes are the store folder against the git directory, as `du` counts them (blocks on disk). Both
restores are checked file by file against the generator's bytes.
"""

from __future__ import annotations

import os

from . import gen
from .common import begin, open_wb, settle, timed, uris, write
from .peer import ShadowGit
from .runner import disk_usage

SEED = "shadow"
NEW = ("src/feature/new_module.py", "src/feature/test_new_module.py")


def _changes(sizes: dict[str, int]) -> dict[str, bytes]:
    r = gen.rng(SEED, "turn", len(sizes))
    rels = r.sample(sorted(sizes), 10)
    out = {rel: gen.content(f"{SEED}:{rel}#turn2", sizes[rel] + r.randrange(-200, 400)) for rel in rels}
    for rel in NEW:
        out[rel] = gen.content(f"{SEED}:{rel}#new", 3000)
    return out


def _check_tree(root, sizes: dict[str, int]) -> tuple[bool, str]:
    """Every generated file holds its original bytes and the created ones are gone."""
    for rel, size in sizes.items():
        try:
            with open(root / rel, "rb") as f:
                got = f.read()
        except FileNotFoundError:
            return False, f"{rel} is missing"
        if got != gen.tree_content(SEED, rel, size):
            return False, f"{rel} holds other bytes"
    for rel in NEW:
        if os.path.lexists(root / rel):
            return False, f"{rel} should have been removed"
    return True, ""


def run(ctx) -> None:
    n = ctx.pick(500, 5_000, 50_000)
    ours, theirs = ctx.dir("ours"), ctx.dir("peer-ws")
    sizes = gen.write_tree(ours, n, SEED)
    gen.write_tree(theirs, n, SEED)
    changes = _changes(sizes)
    ctx.fig("workspace-files", n, "files")
    ctx.fig("workspace-bytes", sum(sizes.values()), "bytes")

    # ---- the peer
    peer = ShadowGit(ctx.work / ctx.scenario / "shadow.git", theirs, ctx.dir("home"))
    (_, t_init) = timed(peer.init)
    c0, t_first = peer.checkpoint("initial")
    git_initial = t_init + t_first
    c1, git_pre = peer.checkpoint("before turn 2")
    for rel, data in changes.items():
        write(theirs, rel, data)
    c2, git_turn = peer.checkpoint("after turn 2")
    git_bytes, _ = disk_usage(peer.git_dir)
    git_restore = peer.restore(c1)
    git_ok, git_why = _check_tree(theirs, sizes)

    # ---- ours
    wb, t_open = timed(open_wb, ours)
    try:
        t1, t_begin1 = timed(begin, wb, "look around")
        ours_initial = t_open + t_begin1
        settle(wb, t1)
        t2, ours_pre = timed(begin, wb, "implement the feature")
        for rel, data in changes.items():
            write(ours, rel, data)
        res, t_capture = timed(wb.turns.capture, {"uris": uris(wb, sorted(changes))})
        _, t_settle = timed(settle, wb, t2)
        ours_turn = t_capture + t_settle
        our_bytes, _ = disk_usage(ours / ".turnback")
        boundary = {"kind": "beforePrompt", "turn": t2}
        cand, t_prep = timed(wb.rewind.prepare, {"boundary": boundary})
        r, t_commit = timed(wb.rewind.commit, {"boundary": boundary, "planHash": cand["planHash"]})
        ours_restore = t_prep + t_commit
        ctx.require("rewind committed", r.get("status") == "committed", str(r))
        ctx.check("the capture saw all 12 changed paths",
                  all(c["digest"] for c in res["captured"]) and len(res["captured"]) == 12)
        ctx.check("the rewind plan names exactly the 12 paths of the turn",
                  len([f for f in cand["files"] if f["action"] != "unchanged"]) == 12,
                  str([f["path"] for f in cand["files"]][:20]))
    finally:
        wb.close()
    ours_ok, ours_why = _check_tree(ours, sizes)
    ctx.check("our restore left every file with its pre-turn bytes and removed the created ones",
              ours_ok, ours_why)
    ctx.check("the peer's restore did the same (the comparison is like for like)", git_ok, git_why)

    src = "shadow git, same run"
    ctx.fig("initial-checkpoint", ours_initial, "s", baseline=git_initial, source=src)
    ctx.fig("pre-turn-checkpoint", ours_pre, "s", baseline=git_pre, source=src)
    ctx.fig("turn-capture-and-settle", ours_turn, "s", baseline=git_turn, source=src,
            note=f"capture {t_capture:.3f} s + settle {t_settle:.3f} s")
    ctx.fig("restore", ours_restore, "s", baseline=git_restore, source=src)
    ctx.fig("store-disk-bytes", our_bytes, "bytes", baseline=git_bytes, source=src + ", loose objects")
    t_gc = peer.gc()
    packed, _ = disk_usage(peer.git_dir)
    ctx.fig("store-disk-bytes-vs-packed-git", our_bytes, "bytes", baseline=packed,
            source=src + f", after git gc ({t_gc:.1f} s)")
