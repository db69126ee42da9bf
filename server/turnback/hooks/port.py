"""How a hook reaches the session: through the live sidecar's socket, or by opening the store itself.

The fast path is the socket (`turnback.remote.client`, standard library only): no store is opened, no
lease taken. When no owner answers, a hook starts a background one (unless the configuration says
`start_owner = false`), and only when that is impossible does it open the workbench in-process, the
way `turnback turn capture` does (the direct path). Both speak the contract's method names and params,
so the mapper does not know which one it has.
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


class LazyPort:
    """Chooses the path at the first call, so an event that needs no session never connects."""

    def __init__(self, root: Path, store: Path, *, start_owner: bool, log):
        self.root = root
        self.store = store
        self.start_owner = start_owner
        self.log = log
        self.port = None

    @property
    def name(self) -> str:
        return self.port.name if self.port is not None else "none"

    def call(self, method: str, params: dict) -> dict:
        if self.port is not None:
            return self.port.call(method, params)
        try:
            from ..remote import client
        except ImportError:
            self.port = DirectPort(self.root, self.store)
            return self.port.call(method, params)
        remote = RemotePort(client, self.root, self.store)
        try:
            result = remote.call(method, params)  # the first real call doubles as the probe
            self.port = remote
            return result
        except client.NoOwner:
            pass
        if self.start_owner:
            try:
                client.ensure_owner(str(self.root), str(self.store))
            except Exception as exc:  # cannot start one: say so and take the direct path
                self.log(f"could not start a background sidecar ({exc}); using the direct path")
            else:
                self.port = remote
                return remote.call(method, params)
        self.port = DirectPort(self.root, self.store)
        return self.port.call(method, params)

    def close(self) -> None:
        if self.port is not None:
            self.port.close()
