"""Fixtures for the sweep tests; the helpers live in sweepkit.py (a unique module name)."""

from sweepkit import mem_objects, objects, ws  # noqa: F401 - fixtures re-exported for pytest
