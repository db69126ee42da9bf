"""Directive rules: state, rewind pruning, anchor reattachment and the wire shape (pure functions)."""

from .rules import (consumed_subdirectives, prune_for_rewind, reattach_anchor, recompute_state,
                    to_wire)

__all__ = ["consumed_subdirectives", "prune_for_rewind", "reattach_anchor", "recompute_state",
           "to_wire"]
