"""cli-turn: a turn from the command line at the cost of a process start (issue 39, item 4).

A 100-file tree of 3 KiB text files, one file edited per turn, a turn being `turnback turn begin` +
`turnback turn settle` (each a process, start to exit, bytecode cached in a private cache). Four
ways, interleaved in a rotating order in the same run, beside `python -c pass` and a shadow git's
`git add -A` + `git commit` of the same edit:

* `direct`: no owner (`TURNBACK_START_OWNER=0`): each command opens the store itself;
* `started`: `TURNBACK_START_OWNER=1`: the first command started a background owner (before the
  timed turns), every command goes through it;
* `warm`: a warm client of a live owner (no process start: the owner's work and a round trip, what
  an editor or a hook bridge pays);
* the store's open, alone, in this process (`Workbench.open` without the lease): at 10 turns and
  at many (20 tiny, 200 otherwise), and a direct turn on each, to show whether a command's cost
  grows with the session's turns;
* `real`: as `started`, on a real tree: the source distribution of attrs 23.1.0 from the package
  registry (115 files; `bench/sdists.py` caches it under ~/.cache, never in a worktree), each turn
  appending a line to one of its Python files. Without the registry the column is skipped, said.

The owners' collections after each settle are waited out between turns, untimed. Checks: every
command exits 0 and every store records every turn.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .live import _turnback, start_owner, stop_owner
from .pyenvs import bytecode_envs
from .replay import GitPeer

FILES = 100
LINE = "value_%03d = compute(%d)  # a line of an ordinary source file\n"


def _tree(root: Path) -> None:
    for i in range(FILES):
        path = root / f"pkg{i % 5}" / f"mod{i:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(LINE % (j, i * j) for j in range(52)))  # about 3 KiB


def _edit(root: Path, i: int) -> None:
    path = root / f"pkg{i % 5}" / f"mod{i % FILES:03d}.py"
    with open(path, "a") as fh:
        fh.write(f"edited_{i} = {i}\n")


def _run(argv, env, cwd) -> tuple[float, int]:
    t0 = time.perf_counter()
    code = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - t0, code


REAL = ("attrs", "23.1.0")  # about 100 files: what the goal names


def _real_tree(root: Path) -> bool:
    """The real release's files under `root`; False when the registry cannot be reached."""
    from .sdists import Unreachable, release_trees

    try:
        tree = dict(release_trees(*REAL[:1], [REAL[1]]))[REAL[1]]
    except (Unreachable, LookupError):
        return False
    for rel, entry in tree.items():
        if entry.link:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(entry.data)
    return True


def _real_edit(root: Path, i: int) -> None:
    sources = sorted(p for p in root.rglob("*.py") if ".turnback" not in p.parts)
    with open(sources[i % len(sources)], "a") as fh:
        fh.write(f"edited_{i} = {i}\n")


def _cli_turn(ws: Path, env: dict, i: int, edit=_edit) -> tuple[float, int]:
    tb = [*_turnback(), "--workspace", str(ws), "turn"]
    t1, c1 = _run([*tb, "begin", "--prompt", f"turn {i}"], env, ws)
    edit(ws, i)
    t2, c2 = _run([*tb, "settle"], env, ws)
    return t1 + t2, c1 or c2


def _wait_quiet(client, root: Path, timeout: float = 300.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not client.call(root, "turnback/session/status", {}, timeout=300, stall=None).get("collecting"):
            return
        time.sleep(0.02)


def _in_process_turns(ws: Path, n: int) -> None:
    """Setup, untimed: `n` turns through the workbench in this process, then one collection (so
    that no timed command pays the command line's `gc.auto`)."""
    from ..workbench import Options, Workbench

    wb = Workbench.open(ws, Options())
    try:
        for i in range(n):
            wb.renew()  # a process that serves no loop renews its own lease (30 s)
            turn = wb.run(wb.turns.begin_job({"prompt": f"setup {i}"}))["turn"]
            _edit(ws, 1000 + i)
            wb.run(wb.turns.settle_job({"turn": turn}))
    finally:
        wb.close()


def _open_seconds(stores: list[Path], rounds: int) -> list[float]:
    """The median open of each store, the stores taking turns (one load for all)."""
    from ..workbench import Options, Workbench

    times: list[list[float]] = [[] for _ in stores]
    for _ in range(rounds):
        for i, ws in enumerate(stores):
            t0 = time.perf_counter()
            wb = Workbench.open(ws, Options(), take_ownership=False)
            times[i].append(time.perf_counter() - t0)
            wb.close()
    return [statistics.median(t) for t in times]


def _turn_count(ws: Path) -> int:
    from ..workbench import Options, Workbench

    wb = Workbench.open(ws, Options(), take_ownership=False)
    try:
        return len(wb.state.turns)
    finally:
        wb.close()


def run(ctx) -> None:
    from ..remote import client

    rounds = ctx.pick(2, 12, 30)
    many = ctx.pick(20, 200, 200)
    env = bytecode_envs(ctx.work / ctx.scenario)["cached"]
    direct_env = {**env, "TURNBACK_START_OWNER": "0"}
    started_env = {**env, "TURNBACK_START_OWNER": "1"}
    python = [sys.executable, "-c", "pass"]
    ws = {name: ctx.dir(name) for name in ("direct", "started", "warm", "few", "many", "real")}
    for name, root in ws.items():
        shutil.rmtree(root)
        root.mkdir()
        if name != "real":
            _tree(root)
    real = _real_tree(ws["real"])
    ctx.check(f"the real tree ({REAL[0]} {REAL[1]}'s sdist) is at hand", real,
              "the package registry could not be reached: no `real` column")
    peer = GitPeer(ctx.work / ctx.scenario / "git")
    _tree(peer.tree_dir)
    peer.checkpoint("first")
    subprocess.run(python, env=env)  # warms the private bytecode cache
    for name in ("direct", "few", "many"):  # the first checkpoints, untimed
        ctx.check(f"the first turn of `{name}` exits 0", _cli_turn(ws[name], direct_env, 0)[1] == 0)
    _in_process_turns(ws["few"], 9)
    _in_process_turns(ws["many"], many - 1)
    for name in ("few", "many"):
        subprocess.run([*_turnback(), "--workspace", str(ws[name]), "gc"], env=direct_env,
                       capture_output=True)
    out: dict[str, list[float]] = {k: [] for k in ("pass", "git", "direct", "started", "warm",
                                                   "few", "many", *(("real",) if real else ()))}
    try:
        ctx.check("the first `started` turn (it starts the owner) exits 0",
                  _cli_turn(ws["started"], started_env, 0)[1] == 0)
        if real:
            ctx.check("the first `real` turn (it starts the owner) exits 0",
                      _cli_turn(ws["real"], started_env, 0, _real_edit)[1] == 0)
        start_owner(ws["warm"], env=env)
        first = client.call(ws["warm"], "turnback/turn/begin", {"prompt": "first"}, timeout=600, stall=None)
        client.call(ws["warm"], "turnback/turn/settle", {"turn": first["turn"]}, timeout=600, stall=None)
        kinds = list(out)
        for i in range(1, rounds + 1):
            for kind in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
                _round(ctx, client, kind, i, ws, peer, out, python, env, direct_env, started_env)
        info = client.call(ws["started"], "turnback/session/info", {})
        ctx.check("the owner the first `started` command started still answers", isinstance(info, dict))
    finally:
        stop_owner(ws["started"])
        stop_owner(ws["warm"])
        if real:
            stop_owner(ws["real"])
    for name, expected in (("direct", rounds + 1), ("started", rounds + 1), ("warm", rounds + 1),
                           ("few", 10 + rounds), ("many", many + rounds),
                           *((("real", rounds + 1),) if real else ())):
        got = _turn_count(ws[name])
        ctx.check(f"`{name}` recorded every turn", got == expected, f"{got} of {expected}")
    _figures(ctx, out, rounds, many, ws)


def _round(ctx, client, kind, i, ws, peer, out, python, env, direct_env, started_env) -> None:
    if kind == "pass":
        t, code = _run(python, env, ws["direct"])
    elif kind == "git":
        _edit(peer.tree_dir, i)
        t, code = peer.checkpoint(f"turn {i}")[1], 0
    elif kind == "warm":
        root = ws["warm"]
        t0 = time.perf_counter()
        turn = client.call(root, "turnback/turn/begin", {"prompt": f"turn {i}"}, timeout=600)["turn"]
        _edit(root, i)
        client.call(root, "turnback/turn/settle", {"turn": turn}, timeout=600)
        t, code = time.perf_counter() - t0, 0
        _wait_quiet(client, root)
    elif kind == "real":
        t, code = _cli_turn(ws[kind], started_env, i, _real_edit)
        _wait_quiet(client, ws[kind])
    else:
        t, code = _cli_turn(ws[kind], started_env if kind == "started" else direct_env, i)
        if kind == "started":
            _wait_quiet(client, ws[kind])
    ctx.check(f"a `{kind}` turn exits 0", code == 0, f"exit {code}")
    out[kind].append(t)


def _figures(ctx, out, rounds, many, ws) -> None:
    med = {k: statistics.median(v) for k, v in out.items()}
    load = round(os.getloadavg()[0], 1)
    note = f"{rounds} turns each, interleaved; load {load}"
    ctx.fig("python-c-pass", med["pass"], "s", note=note)
    ctx.fig("git-add-commit", med["git"], "s", note="git add -A + git commit, the same edit")
    ctx.fig("turn-cli-direct", med["direct"], "s", baseline=med["pass"], source="python -c pass",
            note=f"no owner; goal 3x python -c pass; {med['direct'] / med['git']:.2f}x git; {note}")
    ctx.fig("turn-cli-started-owner", med["started"], "s", baseline=med["pass"],
            source="python -c pass",
            note=f"TURNBACK_START_OWNER=1; goal 3x; {med['started'] / med['git']:.2f}x git; {note}")
    if "real" in med:
        ctx.fig("turn-cli-started-owner-real-tree", med["real"], "s", baseline=med["pass"],
                source="python -c pass",
                note=f"{REAL[0]} {REAL[1]}'s sdist (115 files), TURNBACK_START_OWNER=1; goal 3x; "
                     f"{med['real'] / med['git']:.2f}x git; {note}")
    ctx.fig("turn-owner-warm", med["warm"], "s", baseline=med["git"], source="git add + commit",
            note=f"a warm client, no process start; goal 2x git; {note}")
    ctx.fig(f"turn-cli-direct-{many}-turns", med["many"], "s", baseline=med["few"],
            source="the same at 10 turns", note=f"a direct turn on a session of {many} turns")
    few, lots = _open_seconds([ws["few"], ws["many"]], ctx.pick(5, 15, 30))
    ctx.fig(f"store-open-{many}-turns", lots, "s", baseline=few, source="the same at 10 turns",
            note="Workbench.open in this process, without the lease: the head and its state")
