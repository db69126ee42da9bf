"""store-open: what opening the store costs a command, against the session's turns (issue 39).

Stores of a few turn counts (10, 200 and 1,000 at `full`), each built as `cli-turn` builds its
`few` and `many` stores (a 100-file tree, one file edited per turn, then `turnback gc`), and on
each, in the same run, interleaved:

* the store's open in this process (`Workbench.open` without the lease) as the command line opens
  it, each turn read when first used (`Options(lazy_turns=True)`, timeline/lazyturns.py), beside
  the open that reads every turn (what every open did before, and what an owner does at its start);
* the commands, each a process start to exit, no owner (`TURNBACK_START_OWNER=0`, bytecode cached):
  `turnback info`, and a turn (`turn begin` + `turn settle`), beside the same on the smallest store.

Checks: both opens give the same state, and every store records every turn.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from .cliturn import _cli_turn, _edit, _in_process_turns, _run, _tree, _turn_count
from .live import _turnback
from .pyenvs import bytecode_envs


def _build(ws: Path, turns: int, env: dict) -> bool:
    shutil.rmtree(ws)
    ws.mkdir()
    _tree(ws)
    ok = _cli_turn(ws, env, 0)[1] == 0
    _in_process_turns(ws, turns - 1)
    subprocess.run([*_turnback(), "--workspace", str(ws), "gc"], env=env, capture_output=True)
    return ok


def _open(ws: Path, lazy: bool) -> float:
    from ..workbench import Options, Workbench

    t0 = time.perf_counter()
    wb = Workbench.open(ws, Options(lazy_turns=lazy), take_ownership=False)
    took = time.perf_counter() - t0
    wb.close()
    return took


def _same_state(ws: Path) -> bool:
    from ..workbench import Options, Workbench

    eager = Workbench.open(ws, Options(), take_ownership=False)
    lazy = Workbench.open(ws, Options(lazy_turns=True), take_ownership=False)
    try:
        return lazy.state == eager.state
    finally:
        lazy.close()
        eager.close()


def run(ctx) -> None:
    sizes = ctx.pick((10, 40), (10, 200), (10, 200, 1000))
    rounds = ctx.pick(3, 9, 15)
    env = {**bytecode_envs(ctx.work / ctx.scenario)["cached"], "TURNBACK_START_OWNER": "0"}
    stores = {n: ctx.dir(f"turns-{n}") for n in sizes}
    for n, ws in stores.items():
        ctx.check(f"the {n}-turn store is built", _build(ws, n, env))
    subprocess.run([*_turnback(), "--version"], env=env, capture_output=True)  # warms the cache
    opens: dict[tuple[int, int], list[float]] = {(n, lazy): [] for n in sizes for lazy in (0, 1)}
    cmds: dict[tuple[int, str], list[float]] = {(n, c): [] for n in sizes for c in ("info", "turn")}
    kinds = [("open", n, lazy) for n in sizes for lazy in (0, 1)] \
        + [(c, n, 0) for n in sizes for c in ("info", "turn")]
    for i in range(rounds):
        for kind, n, lazy in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
            ws = stores[n]
            if kind == "open":
                opens[(n, lazy)].append(_open(ws, bool(lazy)))
            elif kind == "info":
                t, code = _run([*_turnback(), "--workspace", str(ws), "info"], env, ws)
                ctx.check(f"`info` on {n} turns exits 0", code == 0, f"exit {code}")
                cmds[(n, kind)].append(t)
            else:
                t, code = _cli_turn(ws, env, 10_000 + i, _edit)
                ctx.check(f"a turn on {n} turns exits 0", code == 0, f"exit {code}")
                cmds[(n, kind)].append(t)
    for n, ws in stores.items():
        ctx.check(f"the {n}-turn store: the lazy open's state is the eager one's", _same_state(ws))
        got = _turn_count(ws)
        ctx.check(f"the {n}-turn store recorded every turn", got == n + rounds, f"{got}")
    _figures(ctx, sizes, rounds, opens, cmds)


def _figures(ctx, sizes, rounds, opens, cmds) -> None:
    med = statistics.median
    first = sizes[0]
    note = f"{rounds} rounds, interleaved; load {round(os.getloadavg()[0], 1)}"
    for n in sizes:
        lazy, eager = med(opens[(n, 1)]), med(opens[(n, 0)])
        ctx.fig(f"store-open-{n}-turns", lazy, "s", baseline=eager,
                source="every turn read at the open (before; an owner's start)",
                note=f"the command line's open, turns read when used; {lazy / med(opens[(first, 1)]):.2f}x "
                     f"its open at {first} turns; {note}")
    for n in sizes[1:]:
        for c in ("info", "turn"):
            ctx.fig(f"{'info' if c == 'info' else 'turn-cli-direct'}-{n}-turns", med(cmds[(n, c)]), "s",
                    baseline=med(cmds[(first, c)]), source=f"the same at {first} turns",
                    note=("`turnback info`" if c == "info" else "turn begin + turn settle")
                    + f", each a process, no owner; {note}")
