"""The workbench's options (from `initializationOptions`): plain data, apart from the facade."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Options:
    store_kind: str = "heads"
    store_path: str | None = None
    max_file_bytes: int = 16 * 1024 * 1024
    sweep: bool = True
    grace_heads: int = 8
    grace_seconds: float = 600.0
    lease_ttl: float = 30.0
    publish_interval: float = 15.0  # debounced publication inside long turns (heads stores)
    default_ignore: tuple | None = None  # None: capture.ignore.DEFAULT_IGNORE; () turns it off
    lease_clock: Callable[[], float] | None = None  # wall clock for lease expiry; tests inject one
    # Each turn read when first used, not all at the open: a command-line process, which exits
    # after one command (timeline/lazyturns.py). An owner reads them all once, at its start.
    lazy_turns: bool = False

    @classmethod
    def from_init(cls, init: dict | None) -> "Options":
        """Options from the contract's `initializationOptions` shape."""
        from .params import field as f, obj, str_list

        init = obj(init, "initializationOptions")
        store = obj(init.get("store"), "store")
        capture = obj(init.get("capture"), "capture")
        collect = obj(init.get("collect"), "collect")
        return cls(
            store_kind=f(store, "kind", str, default="heads", choices=("heads", "pid")),
            store_path=f(store, "path", str, default=None, allow_none=True),
            max_file_bytes=f(capture, "maxFileBytes", int, default=16 * 1024 * 1024),
            sweep=f(capture, "sweep", bool, default=True),
            grace_heads=f(collect, "graceHeads", int, default=8),
            grace_seconds=float(f(collect, "graceSeconds", (int, float), default=600.0)),
            default_ignore=(tuple(str_list(capture, "defaultIgnore"))
                            if capture.get("defaultIgnore") is not None else None),
        )

    def ownership_kwargs(self, kind: str) -> dict:
        """How this workbench asks for a store's ownership (a lease's TTL and clock)."""
        if kind != "heads":
            return {}
        return {"ttl": self.lease_ttl, **({"clock": self.lease_clock} if self.lease_clock else {})}
