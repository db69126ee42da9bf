"""Run one parsed command, mapping its errors to the exit statuses of `exits.py`.

What `main.py` does once argparse has parsed the command line, and what `fast.py` does when its own
hand parser took a hot command (`turn …`) and no owner answered it: such a command then skips
argparse, gettext and the build of the whole parser (every subcommand's options), which a hook or
script paid on every direct `turn begin` and `turn settle`.
"""

from __future__ import annotations

import sys

from ..errors import NotOwner, TurnbackError
from .exits import EXIT_ERROR, EXIT_NOT_OWNER, EXIT_USAGE, Unavailable


def run(args) -> int:
    from . import commands
    from .context import Context

    ctx = Context(args)
    try:
        status = int(commands.dispatch(ctx) or 0)
        if status == 0:  # git's gc --auto: collect/auto.py
            from .upkeep_cmd import auto_collect

            auto_collect(ctx)
        return status
    except NotOwner as exc:
        ctx.fail(exc)
        return EXIT_NOT_OWNER
    except Unavailable as exc:
        ctx.fail(exc)
        return EXIT_USAGE
    except TurnbackError as exc:
        ctx.fail(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
