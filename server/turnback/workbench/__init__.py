"""The facade both faces (server and command line) call."""

from .core import Options, Workbench

__all__ = ["Options", "Workbench"]
