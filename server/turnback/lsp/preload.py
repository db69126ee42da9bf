"""What a serving owner's jobs import on first use, imported before its loop runs.

The command line keeps these lazy, for its start; compiling one inside a job held the owner's loop
(without cached bytecode, the collector's first run compiled `collect` and `store.fsck` there:
docs/performance.md). tests/lsp/test_preload.py checks that a session's jobs import nothing more.
"""

from __future__ import annotations

import importlib

JOB_MODULES = (
    "turnback.capture.sweep",  # every sweep
    "turnback.collect",  # the collector, its fsck checks and its repack
    "turnback.hooks.agents", "turnback.hooks.drain", "turnback.hooks.fast",
    "turnback.hooks.port", "turnback.hooks.runtime",  # the hook events an owner is sent
    "turnback.agents.agentrecord",  # a turn's agent record
    "turnback.travel.disk", "turnback.travel.recovered",  # an opened file; a recovery's notice
)


def preload_job_modules() -> None:
    for name in JOB_MODULES:
        importlib.import_module(name)
