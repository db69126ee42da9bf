"""The facade both faces (server and command line) call."""

from .core import Workbench
from .options import Options

__all__ = ["Options", "Workbench"]
