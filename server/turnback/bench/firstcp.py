"""first-checkpoint: the first checkpoint of a big tree through the command line, raced against git.

What a user sees first: `turnback turn begin` in a workspace turnback has never seen (no owner, so
the command opens the store, walks and reads every file, writes one pack, publishes) against `git init`
+ `git add -A` + `git commit` on the same tree, each in its own processes. The two sides race twice,
in both orders (the first to read a tree warms the page cache for the second), and both orders are
reported. Beside each: our peak resident memory (the process's own maximum, from `wait4`), and the
bytes each keeps (the store folder against the git directory after `git gc`, timed, and after git's
own commit, before any gc). Checks: the checkpoint knows every file, a sample of them reads back
byte for byte, and fsck of the store is sound.

Scales: 500 files (tiny), 5,000 (small), 20,000 and 50,000 (full); `first-checkpoint-250k` is the
same race at 250,000 files (1,000 at tiny, 20,000 at small): run it once, late, on a quiet machine.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import gen
from .peer import ShadowGit
from .runner import disk_usage

SEED = "firstcp"


def run(ctx) -> None:
    for n in ctx.pick([500], [5_000], [20_000, 50_000]):
        race(ctx, n)


def run_250k(ctx) -> None:
    race(ctx, ctx.pick(1_000, 20_000, 250_000), label="250k")


def _turnback() -> list[str]:
    script = Path(sys.executable).parent / "turnback"
    return [str(script)] if script.exists() else [sys.executable, "-m", "turnback"]


def _ours(root: Path) -> tuple[float, int, float]:
    """(seconds, peak RSS bytes, CPU seconds: user + system) of the first checkpoint through the
    command line."""
    store = root / ".turnback"
    if store.exists():
        shutil.rmtree(store)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    t0 = time.perf_counter()
    proc = subprocess.Popen([*_turnback(), "--workspace", str(root), "turn", "begin", "--prompt",
                             "first"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"turn begin failed: {proc.stderr.read().decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _theirs(root: Path, git_dir: Path, home: Path) -> tuple[float, ShadowGit, float]:
    """(seconds, the peer, CPU seconds of git's processes: user + system)."""
    if git_dir.exists():
        shutil.rmtree(git_dir)
    peer = ShadowGit(git_dir, root, home)
    cpu0 = _children_cpu()  # every git process is waited for, so its time lands in RUSAGE_CHILDREN
    t0 = time.perf_counter()
    peer.init()
    peer.checkpoint("initial")
    return time.perf_counter() - t0, peer, _children_cpu() - cpu0


def race(ctx, n: int, label: str | None = None) -> None:
    label = label or (f"{n // 1000}k" if n >= 1000 else str(n))
    root = ctx.dir(f"ws{n}")
    sizes = gen.write_tree(root, n, SEED)
    git_dir, home = ctx.work / ctx.scenario / f"git{n}", ctx.dir("home")
    load = lambda: round(os.getloadavg()[0], 2)  # noqa: E731
    rounds = []
    for order in ("git-first", "ours-first"):
        if order == "git-first":
            theirs, peer, git_cpu = _theirs(root, git_dir, home)
            ours, rss, cpu = _ours(root)
        else:
            ours, rss, cpu = _ours(root)
            theirs, peer, git_cpu = _theirs(root, git_dir, home)
        rounds.append((order, ours, theirs, rss, load(), cpu, git_cpu))
    git_loose, _ = disk_usage(git_dir)
    t_gc = peer.gc()
    git_packed, git_packed_apparent = disk_usage(git_dir)
    our_bytes, our_apparent = disk_usage(root / ".turnback")
    ctx.fig(f"files-{label}", n, "files", note=f"{sum(sizes.values()) / 2 ** 20:.1f} MiB of source")
    cores = os.cpu_count() or 1
    for order, ours, theirs, rss, at, cpu, git_cpu in rounds:
        ctx.fig(f"first-checkpoint-{label}-{order}", ours, "s", baseline=theirs,
                source="git init + add -A + commit, same run, same tree",
                note=f"load {at}; our CPU {cpu:.2f} s (user + system) on {cores} cores")
        # CPU against CPU: what the load changes least (a loaded machine stretches both walls).
        ctx.fig(f"first-checkpoint-{label}-{order}-cpu-vs-git", cpu, "s", baseline=git_cpu,
                source="git's processes' CPU (user + system), same race",
                note=f"load {at}")
    best = min(rounds, key=lambda r: r[1])  # (order, ours, theirs, rss, load, cpu, git cpu)
    ctx.fig(f"first-checkpoint-{label}-cpu", best[5], "s", baseline=best[1] * cores,
            source=f"wall time x {cores} cores (1.0: every core busy the whole time)",
            note="the CPU the checkpoint used: near 1 only if the work kept every core busy")
    ctx.fig(f"peak-rss-{label}", max(r[3] for r in rounds), "bytes", baseline=200 * 2 ** 20,
            source="goal: 200 MiB", note="the checkpointing process's own peak (wait4)")
    ctx.fig(f"store-bytes-{label}", our_bytes, "bytes", baseline=git_packed,
            source="git's objects after git gc, same tree", note=f"git gc took {t_gc:.1f} s")
    ctx.fig(f"store-apparent-bytes-{label}", our_apparent, "bytes", baseline=git_packed_apparent,
            source="git after gc, apparent")
    ctx.fig(f"store-bytes-vs-loose-{label}", our_bytes, "bytes", baseline=git_loose,
            source="git's loose objects after its commit")
    _check(ctx, root, sizes, label)


def _check(ctx, root: Path, sizes: dict[str, int], label: str) -> None:
    from ..model.images import FOLDER, folder_path, is_folder_key
    from ..store.fsck import fsck
    from ..store.layout import Store
    from ..timeline.codec import StateCodec

    store = Store.open(root / ".turnback", create=False)
    state = StateCodec(store.objects).read(store.heads.current().body)
    # The state keys folders too (`src/a/` -> folder, model/images.py): files and folders apart.
    known = {rel: image for rel, image in state.known.items() if not is_folder_key(rel)}
    folders = {folder_path(rel) for rel, image in state.known.items()
               if is_folder_key(rel) and image == FOLDER}
    ctx.check(f"the {label} checkpoint knows every file", known.keys() == sizes.keys(),
              f"{len(known)} file keys for {len(sizes)} files")
    parents = {os.path.dirname(rel) for rel in sizes} - {""}
    ctx.check(f"the {label} checkpoint knows every folder", parents <= folders,
              f"{len(parents - folders)} of {len(parents)} folders missing")
    sample = random.Random(label).sample(sorted(sizes), min(200, len(sizes)))
    wrong = [rel for rel in sample
             if rel not in known or store.objects.get(known[rel]) != (root / rel).read_bytes()]
    ctx.check(f"a sample of the {label} checkpoint reads back byte for byte", not wrong, str(wrong[:3]))
    report = fsck(store.path)
    ctx.check(f"fsck of the {label} store is sound", report.ok, str(report.errors[:3]))
