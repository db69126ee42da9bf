"""Collection: retire obsolete heads, then delete the objects nothing retained references.

Importing this package also registers the fsck check that every head's body reads and every object it
references exists (`fsck_check`); fsck users (the command line's `turnback fsck`, the server) should
import `turnback.collect` before calling `store.fsck.fsck`.
"""

from . import fsck_check  # noqa: F401  (registers the fsck extra check)
from . import fsck_sessions  # noqa: F401  (and the one for session records)
from .cache import HeadCache
from .collector import Collector, collect_job

__all__ = ["Collector", "HeadCache", "collect_job"]
