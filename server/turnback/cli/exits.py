"""The command line's exit statuses, and the error that asks for status 2.

Every command module returns these; they live below `main.py` and the commands alike, so no command
imports the module that dispatches to it (docs/architecture.md, "Imports point down only").
"""

from __future__ import annotations

from ..errors import TurnbackError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_OWNER = 0, 1, 2, 3


class Unavailable(TurnbackError):
    """A part of turnback this build does not have yet (exit status 2)."""

    code = "unavailable"
