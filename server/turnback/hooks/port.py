"""How a mapper in the hook's own process reaches the session: an owner's socket, or the store itself.

A hook hands its whole event to a live owner when it can (`fast.py`, `turnback/hook/event`), and the
owner maps it with its own port (`lsp/hookhost.py`). The ports here are for the rest: `RemotePort`
sends each contract call over the socket of an older owner that has no `turnback/hook/event`;
`DirectPort` opens the workbench in-process, the way `turnback turn capture` does (the direct path:
no owner could be started, or `start_owner = false`). Both speak the contract's method names and
params, so the mapper does not know which one it has.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import NotOwner, TurnbackError


class PortError(Exception):
    """A call that failed; `code` is the contract's stable `data.code` when there is one."""

    def __init__(self, message: str, code: str = "internal", data: dict | None = None):
        super().__init__(message)
        self.code = code
        self.data = data or {}


class RemotePort:
    name = "socket"

    def __init__(self, client, root: Path, store: Path):
        self.client = client
        self.root = root
        self.store = store

    def call(self, method: str, params: dict) -> dict:
        try:
            return self.client.call(str(self.root), method, params, store=str(self.store))
        except self.client.RemoteError as exc:
            data = getattr(exc, "data", None) or {}
            raise PortError(str(getattr(exc, "message", exc)),
                            getattr(exc, "code", None) or data.get("code", "internal"), data)

    def close(self) -> None:
        pass


class DirectPort:
    """The workbench opened in this process, owning the store for the length of one hook."""

    name = "direct"

    def __init__(self, root: Path, store: Path):
        self.root = root
        self.store = store
        self.wb = None

    def _open(self):
        if self.wb is None:
            from ..workbench import Options, Workbench

            kind = "heads"
            if (self.store / "FORMAT").exists():
                from ..store.layout import Store

                kind = Store.open(self.store, kind=None, create=False).kind
            wb = Workbench.open(self.root, Options(store_kind=kind, store_path=str(self.store)))
            if not wb.is_owner:
                owner = wb.owner_info() or {}
                wb.close()
                raise NotOwner(f"another turnback (pid {owner.get('pid')}) owns the store and no "
                               "live socket answered", data={"owner": owner})
            self.wb = wb
        return self.wb

    def call(self, method: str, params: dict) -> dict:
        try:
            wb = self._open()
            fn = DIRECT_METHODS.get(method)
            if fn is None:
                raise PortError(f"the direct path does not know {method}", "invalid-params")
            return fn(wb, params)
        except TurnbackError as exc:
            raise PortError(exc.message, exc.code, exc.data) from exc

    def close(self) -> None:
        if self.wb is not None:
            wb, self.wb = self.wb, None
            wb.close()


DIRECT_METHODS = {
    "turnback/session/info": lambda wb, p: wb.info(),
    "turnback/session/log": lambda wb, p: wb.turns.log(p),
    "turnback/turn/begin": lambda wb, p: wb.run(wb.turns.begin_job(p)),
    "turnback/turn/capture": lambda wb, p: wb.turns.capture(p),
    "turnback/turn/step": lambda wb, p: wb.turns.step(p),
    "turnback/turn/respond": lambda wb, p: wb.turns.respond(p),
    "turnback/turn/settle": lambda wb, p: wb.run(wb.turns.settle_job(p)),
    "turnback/agent/transcript": lambda wb, p: wb.turns.agent_transcript(p),
    "turnback/session/start": lambda wb, p: wb.sessions.start_params(p),
}
