"""real-history: the releases of real projects replayed as agent turns, beside a shadow git.

Each project's consecutive releases come from their source distributions on PyPI (`sdists.py`: fetched
once into a cache, sha256 checked against the registry). Each release is one agent turn: the turn
begins, the workspace's tree is replaced by the release's (files removed, written, or only their mode
changed), the turn settles. The same trees are replayed three times in the same run:

* `owner`: a live background owner (`serve --background`) driven by a warm client (the owner's own
  cost plus a round trip, what an editor or an agent's hook bridge pays); its collections are waited
  out between turns, untimed;
* `cli`: no owner, every `turnback turn begin` / `turn settle` a process of its own (start to exit),
  beside `python -c pass` run between them in the same environment;
* `cli-owner`: the same commands with `TURNBACK_START_OWNER=1`: the first starts a background owner,
  every one goes through it (docs/live.md);
* `git`: a shadow git with a work tree of its own, `git add -A` + `git commit` per release.

Then, on both of our workspaces (each through the command line, which goes through the owner when
one runs): rewinds to earlier releases, one Redo back to the last, one restore of every path of a
middle release, each timed beside `git reset --hard` (+ `git clean`) to the same commit, and each
followed by a byte-for-byte comparison of the whole tree, modes and links included. Then bytes: our
store after `turnback gc` beside git's objects after `git gc`, and `turnback fsck`.

Scales: tiny is five releases of requests (about 0.7 MiB of downloads, for CI); small adds mypy (its
sdist holds typeshed: thousands of files) and Pillow (test images: binary-heavy, about 47 MB a
release); full replays longer runs of the three.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import sdists
from .live import _turnback, start_owner, stop_owner
from .replay import GitPeer, apply_tree, differences, empty_folders, read_tree
from .runner import Unavailable, disk_usage

# Consecutive releases, the yanked ones (requests 2.32.0 and 2.32.1) left out.
REQUESTS_TINY = ["2.32.2", "2.32.3", "2.32.4", "2.32.5", "2.33.0"]
REQUESTS = ["2.28.1", "2.28.2", "2.29.0", "2.30.0", "2.31.0", "2.32.2", "2.32.3", "2.32.4", "2.32.5", "2.33.0",
            "2.33.1", "2.34.0", "2.34.1", "2.34.2"]
MYPY = ["1.19.0", "1.19.1", "1.20.0", "1.20.1", "1.20.2", "2.0.0", "2.1.0", "2.2.0"]
PILLOW = ["11.2.1", "11.3.0", "12.0.0", "12.1.0", "12.1.1", "12.2.0"]


def plan(scale: str) -> list[tuple[str, list[str]]]:
    return {"tiny": [("requests", REQUESTS_TINY)],
            "small": [("requests", REQUESTS), ("mypy", MYPY[-4:]), ("pillow", PILLOW[-3:])],
            "full": [("requests", REQUESTS), ("mypy", MYPY), ("pillow", PILLOW)]}[scale]


class Cli:
    """`turnback` as a process: what a user or a hook runs. Through the owner when one runs."""

    def __init__(self, root: Path, env: dict):
        self.root, self.env = root, env
        self.argv = [*_turnback(), "--workspace", str(root), "--json"]

    def run(self, *args: str, timeout: float = 3600) -> tuple[dict, float]:
        t0 = time.perf_counter()
        proc = subprocess.run([*self.argv, *args], env=self.env, cwd=self.root, capture_output=True,
                              text=True, timeout=timeout)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"turnback {' '.join(args)} exited {proc.returncode}: "
                               f"{proc.stderr.strip()[-800:]}")
        try:
            doc = json.loads(proc.stdout) if proc.stdout.strip() else {}
        except ValueError:
            doc = {"text": proc.stdout}
        return doc, seconds


def _pass(env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t0


def _env(work: Path) -> tuple[dict, str]:
    """The command line's environment: a private bytecode cache (warmed by the first commands), as
    an installed turnback has (pip compiles on install); this machine sets PYTHONDONTWRITEBYTECODE."""
    cache = work / "pyc"
    cache.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    subprocess.run([*_turnback(), "--help"], env=env, capture_output=True)  # warm the cache
    return env, "bytecode cached (a private PYTHONPYCACHEPREFIX, warmed)"


def _wait_quiet(client, root: Path) -> None:
    end = time.monotonic() + 600
    while time.monotonic() < end:
        if not client.call(root, "turnback/session/status", {}, timeout=600, stall=None).get("collecting"):
            return
        time.sleep(0.05)


def replay_owner(root: Path, releases, client) -> dict:
    out = {"begin": [], "settle": []}
    tree: dict = {}
    for version, new in releases:
        _wait_quiet(client, root)
        t0 = time.perf_counter()
        begun = client.call(root, "turnback/turn/begin", {"prompt": f"release {version}"},
                            timeout=3600, stall=None)
        out["begin"].append(time.perf_counter() - t0)
        apply_tree(root, tree, new)
        tree = new
        t0 = time.perf_counter()
        client.call(root, "turnback/turn/settle", {"turn": begun["turn"]}, timeout=3600, stall=None)
        out["settle"].append(time.perf_counter() - t0)
    _wait_quiet(client, root)
    return out


def replay_cli(cli: Cli, releases) -> dict:
    out = {"begin": [], "settle": [], "pass": []}
    tree: dict = {}
    for version, new in releases:
        out["pass"].append(_pass(cli.env))
        out["begin"].append(cli.run("turn", "begin", "--prompt", f"release {version}")[1])
        apply_tree(cli.root, tree, new)
        tree = new
        out["settle"].append(cli.run("turn", "settle")[1])
        out["pass"].append(_pass(cli.env))
    return out


def _compare(ctx, label: str, root: Path, want: dict, skip=frozenset()) -> None:
    got = read_tree(root)
    diff = differences(want, got, set(skip))
    ctx.check(f"{label}: the tree is back byte for byte, modes and links included", not diff,
              f"{len(diff)} differ: {diff[:5]}")
    empty = empty_folders(root)
    ctx.check(f"{label}: no folder left empty", not empty, str(empty[:5]))


def travel(ctx, name: str, side: str, cli: Cli, trees: list[dict], git: GitPeer, skip=frozenset()):
    """Rewinds to earlier releases (each beside git reset --hard to the same commit), a Redo back to
    the last, a restore of a middle release's paths. Returns {op: [(ours, git)]}."""
    n = len(trees)
    rows: dict[str, list[tuple[float, float]]] = {"rewind": [], "redo": [], "restore": []}
    info, _ = cli.run("info")
    top = info["headSeq"]
    targets = list(range(n - 1, 0, -1)) if n <= 6 else sorted({n - 2, (2 * n) // 3, n // 2, 1},
                                                                  reverse=True)
    for k in targets:  # turn k+1 and later discarded: the tree of release k (index k-1)
        _, ours = cli.run("rewind", "--before-prompt", str(k + 1), "--yes")
        rows["rewind"].append((ours, git.reset(k - 1)))
        _compare(ctx, f"{name} {side}: rewind before turn {k + 1}", cli.root, trees[k - 1], skip)
    _, ours = cli.run("redo", "--head", str(top), "--yes")
    rows["redo"].append((ours, git.reset(n - 1)))
    _compare(ctx, f"{name} {side}: redo to the last release", cli.root, trees[-1], skip)
    k = max(1, n // 2)
    _, ours = cli.run("restore", "--turn", str(k), "--yes", ".")
    rows["restore"].append((ours, git.reset(k - 1)))
    want = {**trees[-1], **trees[k - 1]}  # restore brings turn k's paths back, leaves the others
    _compare(ctx, f"{name} {side}: restore of turn {k}'s paths", cli.root, want, skip)
    git.reset(n - 1)  # the peer back at the top, as the bytes are compared there
    return rows


def _store_bytes(root: Path) -> tuple[int, int]:
    return disk_usage(root / ".turnback")


def _objects_bytes(root: Path) -> int:
    """What holds the history, as git's `objects/` does: our objects and heads (apparent bytes),
    without the caches, the journal and the store's other folders (git's index, its stat cache,
    is outside `objects/` too)."""
    return sum(disk_usage(root / ".turnback" / part)[1] for part in ("objects", "heads"))


def _floor(trees: list[dict]) -> tuple[int, int]:
    """(raw, xz -9e) of every distinct file version of the history, newest release first and in
    path order, as one stream: about what the strongest general compressor makes of the file
    contents alone, with no random access, no metadata, no index. No store can go far below it."""
    import lzma

    seen: set[bytes] = set()
    parts = []
    for tree in reversed(trees):
        for _rel, entry in sorted(tree.items()):
            if entry.link or entry.data in seen:
                continue
            seen.add(entry.data)
            parts.append(entry.data)
    data = b"".join(parts)
    return len(data), len(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))


def run_project(ctx, client, name: str, versions: list[str], env: dict, env_note: str) -> None:
    try:
        releases = sdists.release_trees(name, versions)
    except sdists.Unreachable as exc:
        raise Unavailable(f"PyPI is unreachable: {exc}") from None
    trees = [t for _v, t in releases]
    files = [len(t) for t in trees]
    ctx.fig(f"{name}-releases", len(trees), "turns", note=f"{versions[0]}..{versions[-1]}")
    ctx.fig(f"{name}-files", max(files), "files",
            note=f"{min(files)}-{max(files)} per release, {sum(len(e.data) for e in trees[-1].values())} "
                 "bytes in the last")

    base = ctx.work / ctx.scenario / name
    shutil.rmtree(base, ignore_errors=True)
    git = GitPeer(base / "git")
    git_commit = [git.commit_tree(t, f"release {v}") for v, t in releases]

    owner_root = base / "owner"
    owner_root.mkdir(parents=True)
    start_owner(owner_root, env=env)
    try:
        o = replay_owner(owner_root, releases, client)
        o_travel = travel(ctx, name, "owner", Cli(owner_root, env), trees, git)
        _, o_gc = Cli(owner_root, env).run("gc")
        _wait_quiet(client, owner_root)
    finally:
        stop_owner(owner_root)
    o_bytes = _store_bytes(owner_root)

    started_root = base / "cli-owner"
    started_root.mkdir(parents=True)
    started = Cli(started_root, {**env, "TURNBACK_START_OWNER": "1"})
    try:
        s = replay_cli(started, releases)
        s_info, _ = started.run("info")
        try:  # exits 1 when no owner answers
            s_owner, _ = started.run("daemon", "status")
        except RuntimeError as exc:
            s_owner = {"running": False, "why": str(exc)}
        ctx.check(f"{name} cli-owner: the owner the command line started recorded every release",
                  s_info.get("turnCount") == len(trees) and s_owner.get("running") is True,
                  f"{s_info.get('turnCount')} turns; owner {s_owner}")
        _compare(ctx, f"{name} cli-owner: the last release", started_root, trees[-1])
    finally:
        stop_owner(started_root)

    cli_root = base / "cli"
    cli_root.mkdir(parents=True)
    cli = Cli(cli_root, env)
    c = replay_cli(cli, releases)
    c_travel = travel(ctx, name, "cli", cli, trees, git)
    before_gc = _store_bytes(cli_root)
    _, c_gc = cli.run("gc")
    c_bytes = _store_bytes(cli_root)
    t_git_gc = git.gc()
    g_bytes = git.objects_bytes()
    for side, root in (("owner", owner_root), ("cli", cli_root)):
        try:
            Cli(root, env).run("fsck")
            ok, why = True, ""
        except RuntimeError as exc:
            ok, why = False, str(exc)
        ctx.check(f"{name} {side}: turnback fsck finds the store sound", ok, why)

    med = statistics.median
    src = "git add -A + commit, same trees, same run"
    g_turn = med(git_commit)
    owner_turn = [b + s for b, s in zip(o["begin"], o["settle"])]
    cli_turn = [b + s for b, s in zip(c["begin"], c["settle"])]
    note = f"median of {len(trees)} turns (the first creates the whole tree)"
    ctx.fig(f"{name}-turn-owner", med(owner_turn), "s", baseline=g_turn, source=src,
            note=f"{note}; begin {med(o['begin']) * 1e3:.1f} ms + settle {med(o['settle']) * 1e3:.1f} ms;"
                 " goal 2x")
    ctx.fig(f"{name}-turn-cli", med(cli_turn), "s", baseline=g_turn, source=src,
            note=f"{note}; begin {med(c['begin']) * 1e3:.1f} ms + settle {med(c['settle']) * 1e3:.1f} ms, "
                 f"no owner; {env_note}")
    ctx.fig(f"{name}-turn-cli-vs-python", med(cli_turn), "s", baseline=med(c["pass"]),
            source="python -c pass, same environment, interleaved",
            note=f"a turn is two processes (begin, settle); goal 3x at 100 files; {env_note}")
    started_turn = [b + t for b, t in zip(s["begin"][1:], s["settle"][1:])]
    ctx.fig(f"{name}-turn-cli-owner", med(started_turn), "s", baseline=g_turn, source=src,
            note=f"TURNBACK_START_OWNER=1: the first command started an owner, every command went "
                 f"through it; median of turns 2-{len(trees)}; {env_note}")
    ctx.fig(f"{name}-turn-cli-owner-vs-python", med(started_turn), "s", baseline=med(s["pass"]),
            source="python -c pass, same environment, interleaved",
            note=f"begin {med(s['begin'][1:]) * 1e3:.1f} ms + settle {med(s['settle'][1:]) * 1e3:.1f} ms;"
                 " goal 3x at 100 files")
    ctx.fig(f"{name}-turn-first-owner", owner_turn[0], "s", baseline=git_commit[0], source=src,
            note="turn 1: the whole tree created")
    for side, rows in (("owner", o_travel), ("cli", c_travel)):
        for op, pairs in rows.items():
            ours, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
            ctx.fig(f"{name}-{op}-{side}", med(ours), "s", baseline=med(theirs),
                    source="git reset --hard + clean to the same commit, same run",
                    note=f"median of {len(pairs)}; `turnback {op}` as a process"
                         + (" through the owner" if side == "owner" else ", no owner")
                         + ("; restore leaves later paths, git's reset removes them" if op == "restore"
                            else ""))
    ctx.fig(f"{name}-bytes-cli", c_bytes[1], "bytes", baseline=g_bytes[1],
            source="git's objects after git gc, apparent",
            note=f"our store after `turnback gc` ({c_gc:.2f} s; {before_gc[1]} bytes before; "
                 f"on disk {c_bytes[0]} against git's {g_bytes[0]}); git gc took {t_git_gc:.2f} s")
    ctx.fig(f"{name}-bytes-owner", o_bytes[1], "bytes", baseline=g_bytes[1],
            source="git's objects after git gc, apparent",
            note=f"the owner's store after its own collections and `turnback gc` ({o_gc:.2f} s); "
                 f"on disk {o_bytes[0]} against git's {g_bytes[0]}")
    for side, root in (("cli", cli_root), ("owner", owner_root)):
        ctx.fig(f"{name}-bytes-objects-{side}", _objects_bytes(root), "bytes", baseline=g_bytes[1],
                source="git's objects after git gc, apparent",
                note="our objects/ and heads/ only (no caches, journal or empty folders)")
    raw, xz = _floor(trees)
    ctx.fig(f"{name}-bytes-floor", xz, "bytes", baseline=g_bytes[1],
            source="git's objects after git gc, apparent",
            note=f"every distinct file version ({raw} bytes raw) as one xz -9e stream: the file "
                 "contents' floor for any store, random access and metadata aside")


def run(ctx) -> None:
    from ..remote import client

    why = sdists.reachable()
    if why is not None:
        raise Unavailable(f"PyPI is unreachable: {why}")
    env, env_note = _env(ctx.work / ctx.scenario)
    for name, versions in plan(ctx.scale):
        run_project(ctx, client, name, versions, env, env_note)
