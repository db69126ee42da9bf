"""The `turnback` command as a whole: the command line, handed the benchmarks' runner from above.

`turnback bench` is a command of the command line, but the benchmarks drive the command line and a
live owner as processes: they sit a floor above the faces (docs/architecture.md), so `cli/` may not
import them. This module, on the top floor with `__main__.py`, is what `server/bin/turnback` and
`python -m turnback` run: it gives `cli/fast.py` a runner that imports `bench` only when
`turnback bench` is asked for, so every other command (a hook's above all) starts as cheaply as
before.
"""

from __future__ import annotations

from .cli.fast import main as command_line


def run_bench(argv: list[str]) -> int:
    """`turnback bench ARGS…`: the benchmarks' own command line, imported now."""
    from .cli.exits import Unavailable  # here: a hook's start imports nothing it does not use

    try:
        from . import bench
    except ImportError as exc:
        raise Unavailable(f"the benchmarks cannot load: {exc}")
    entry = getattr(bench, "main", None)
    if entry is None:
        raise Unavailable("the benchmarks (turnback.bench.main) are not part of this build yet")
    return int(entry(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    return command_line(argv, bench=run_bench)
