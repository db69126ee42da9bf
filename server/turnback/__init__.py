"""turnback: trustworthy Rewind and Redo for AI coding-agent sessions."""

__version__ = "0.1.0"
