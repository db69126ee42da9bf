"""`turnback bench`: replay the decision record's workloads and race a shadow-git peer in one run.

`main(argv) -> int` is what the command line calls. Every scenario builds its store through the real
workbench and store APIs from a fixed seed, measures, and then checks its own result (restored bytes are
the expected bytes, retained objects verify): a fast wrong answer makes the command exit non-zero.
Output: one JSON line per figure with `--json` (`{scenario, figure, value, unit, baseline?, ratio?}`),
otherwise a readable table. See docs/performance.md.
"""

from __future__ import annotations

from .runner import SCENARIOS, main

__all__ = ["main", "SCENARIOS"]
