"""The owner watches the workspace (inotify, on its own thread), so its sweeps read only what may
have changed. `TURNBACK_WATCHER=off` leaves every sweep a full walk."""

from __future__ import annotations

import os

from ...capture.ignore import IgnoreRules
from ...capture.watcher import Watcher  # imported with the server: compiling it on the loop held requests
from . import Service


class WatcherService(Service):
    def became_owner(self) -> None:
        wb = self.server.wb
        if (wb is None or wb.rules is None or getattr(wb, "watcher", None) is not None
                or os.environ.get("TURNBACK_WATCHER", "on") == "off"):
            return
        watcher = Watcher(wb.ws, IgnoreRules(wb.ws))  # its own rules: it runs on its own thread
        watcher.start()
        wb.watcher = watcher

    def stop(self) -> None:
        wb = self.server.wb
        watcher = getattr(wb, "watcher", None)
        if wb is not None and watcher is not None:
            wb.watcher = None
            watcher.close()
