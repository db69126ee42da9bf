"""The workbench as the command line sees it when a live owner answers: every call is a request.

`Context.open` hands the commands this stand-in instead of opening the store, so `commands.py` runs
unchanged through the owner: the same prompts, the same rendering, the same exit statuses, and
whatever a command learns next (a new option, a new message) needs no second copy here. It offers
exactly what the routed commands use; anything else raises, which a test would show at once.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import NotOwner, TurnbackError
from ..remote import client
from .remote import CODE_CLASSES

# Commands whose `ctx.open()` returns an OwnerWorkbench when an owner answers.
ROUTED = {"log", "info", "rewind", "redo", "gc", "recovery", "turn", "fork", "restore", "diff"}


class _Job:
    """A request standing in for a workbench job: `wb.run(job)` sends it."""

    def __init__(self, call):
        self.call = call


class _Turn:  # a plain class: `dataclasses` imports `inspect`, 5 to 7 ms of every routed command
    __slots__ = ("n", "directive_id")

    def __init__(self, n: int, directive_id: str | None = None):
        self.n = n
        self.directive_id = directive_id

    def __eq__(self, other) -> bool:
        return isinstance(other, _Turn) and (self.n, self.directive_id) == (other.n, other.directive_id)

    def __repr__(self) -> str:
        return f"_Turn(n={self.n!r}, directive_id={self.directive_id!r})"


class _Feature:
    def __init__(self, wb: "OwnerWorkbench", methods: dict[str, str]):
        self._wb = wb
        self._methods = methods

    def __getattr__(self, name: str):
        method = self._methods.get(name)
        if method is None:
            raise AttributeError(f"{name} is not available through the owner's socket")
        if name.endswith("_job"):
            return lambda params=None: _Job(lambda: self._wb.call(method, params))
        return lambda params=None: self._wb.call(method, params)


class _State:
    def __init__(self, wb: "OwnerWorkbench"):
        self._wb = wb

    @property
    def running(self) -> _Turn | None:
        n = self._wb.info().get("running")
        return _Turn(n) if n is not None else None

    @property
    def turns(self) -> list[_Turn]:
        return [_Turn(t["turn"], t.get("directiveId"))
                for t in self._wb.call("turnback/session/log", {})["turns"]]

    @property
    def directives(self) -> dict:
        return {d["id"]: d for d in self._wb.call("turnback/directive/list", {})["directives"]}


class _Store:
    def __init__(self, wb: "OwnerWorkbench", path: Path):
        self._wb = wb
        self.path = path

    @property
    def kind(self) -> str:
        return self._wb.info()["storeKind"]


class OwnerWorkbench:
    is_owner = True  # the owner decides; `require_owner` has nothing to refuse here

    def __init__(self, root: Path, store: Path, socket: str):
        self.root = root
        self.socket = socket
        self._ws = None
        self.store = _Store(self, store)
        self.state = _State(self)
        self._info: dict | None = None
        self.turns = _Feature(self, {
            "begin_job": "turnback/turn/begin", "capture": "turnback/turn/capture",
            "step": "turnback/turn/step", "respond": "turnback/turn/respond",
            "settle_job": "turnback/turn/settle", "log": "turnback/session/log",
            "agent_transcript": "turnback/agent/transcript", "workflow_set": "turnback/workflow/set",
            "workflow_get": "turnback/workflow/get"})
        self.rewind = _Feature(self, {"prepare": "turnback/rewind/prepare",
                                      "prepare_job": "turnback/rewind/prepare",
                                      "commit": "turnback/rewind/commit",
                                      "commit_job": "turnback/rewind/commit"})
        self.redo = _Feature(self, {"list": "turnback/redo/list", "prepare": "turnback/redo/prepare",
                                    "prepare_job": "turnback/redo/prepare",
                                    "commit": "turnback/redo/commit", "commit_job": "turnback/redo/commit"})
        self.restore = _Feature(self, {"prepare": "turnback/restore/prepare",
                                       "prepare_job": "turnback/restore/prepare",
                                       "commit": "turnback/restore/commit",
                                       "commit_job": "turnback/restore/commit"})
        self.recovery = _Feature(self, {"list": "turnback/recovery/list",
                                        "resolve": "turnback/recovery/resolve"})
        self.directives = _Feature(self, {"upsert": "turnback/directive/upsert",
                                          "record": "turnback/directive/record",
                                          "list": "turnback/directive/list"})
        self.sessions = _Feature(self, {"log": "turnback/session/log", "list": "turnback/session/list"})
        self.collection = _Feature(self, {"run": "turnback/collect/run"})
        self.diffs = _Feature(self, {"diff_job": "turnback/diff", "image": "turnback/image/read"})
        self.fork = _Feature(self, {"prepare": "turnback/fork/prepare",
                                    "prepare_job": "turnback/fork/prepare",
                                    "confirm": "turnback/fork/confirm",
                                    "confirm_job": "turnback/fork/confirm"})

    @property
    def ws(self):
        """The workspace's fence, made when a command first checks a path it was given (capture,
        restore, diff): it brings the file-system seam, which printing an answer does not need."""
        if self._ws is None:
            from ..workspace.fence import Workspace

            self._ws = Workspace(self.root, self.store.path)
        return self._ws

    def root_uri(self) -> str:
        """The workspace's URI, as `ws.to_uri` spells it (`confirm.renderer`), without the fence."""
        from urllib.parse import quote

        return "file://" + quote(os.path.realpath(self.root), safe="/")

    def call(self, method: str, params=None, timeout: float = 3600.0):
        if method != "turnback/session/info":
            self._info = None  # anything may change what info says
        if isinstance(params, dict) and isinstance(params.get("worktree"), str):
            # the owner runs elsewhere: a folder named on this command line is taken from here
            params = {**params, "worktree": os.path.abspath(params["worktree"])}
        try:
            return client.call(self.root, method, params or {}, store=self.store.path, timeout=timeout)
        except client.RemoteError as exc:
            # an owner that holds its socket but cannot answer is one that cannot be reached: 3
            cls = NotOwner if exc.code == "unresponsive" else CODE_CLASSES.get(exc.code, TurnbackError)
            raise cls(exc.message, code=exc.code, data=exc.data) from None
        except client.NoOwner as exc:
            raise TurnbackError(f"the owner went away during the command ({exc}); run it again",
                                code="owner-gone") from None

    def info(self) -> dict:
        if self._info is None:
            self._info = self.call("turnback/session/info", {})
        return self._info

    def live_gaps(self) -> list[dict]:
        return self.call("turnback/session/status", {}).get("gaps", [])

    def owner_info(self) -> dict:
        return self.info().get("owner") or {}

    def run(self, job):
        return job.call() if isinstance(job, _Job) else job

    def close(self) -> None:
        pass  # nothing was opened here


def open_through_owner(args, root: Path, store: Path) -> OwnerWorkbench | None:
    """The stand-in for this command when a live owner answers for `store`, else None."""
    if args.command not in ROUTED or os.environ.get("TURNBACK_DIRECT") == "1":
        return None
    try:
        socket = client.owner_socket(root, store)
    except client.RemoteError as exc:
        raise TurnbackError(exc.message, code=exc.code, data=exc.data) from None
    if socket is None:
        return None
    wb = OwnerWorkbench(root, store, socket)
    try:
        wb.info()  # the owner answers now, or is given up within a bounded time
    except NotOwner as exc:
        if exc.code != "unresponsive" or _leased(store):
            raise
        return None  # its lease ran out while it hangs: this command owns the store itself
    return wb


def _leased(store: Path) -> bool:
    """Whether anyone holds the store's lease (or lock) now, read without writing."""
    from ..store.layout import Store
    from ..store.ownership.owners import who_owns

    try:
        return who_owns(store, Store.open(store, kind=None, create=False).kind) is not None
    except TurnbackError:
        return True  # cannot tell: do not open the store beside a live owner
