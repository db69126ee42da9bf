"""Effect rules: the seven-bucket partition of discarded steps and the scope gate on inverses."""

from .partition import BUCKETS, assert_total, inverses_to_run, partition

__all__ = ["BUCKETS", "assert_total", "inverses_to_run", "partition"]
