"""The fence: workspace-relative paths, URIs, symlink refusal."""

from .fence import Workspace

__all__ = ["Workspace"]
