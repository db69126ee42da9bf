"""End-to-end harness: real `python -m turnback.lsp` processes over stdio, driven by pytest-lsp's client.

Set TURNBACK_RECORD=/some/file.jsonl to append every request, response, error and notification the
tests exchange (the examples in docs/protocol.md are taken from such a recording).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities
from pytest_lsp.client import LanguageClient, register_lsp_features

from turnback.lsp.protocol import converter_factory

SERVER = [sys.executable, "-m", "turnback.lsp"]
RECORD = os.environ.get("TURNBACK_RECORD")

CLIENTS = {
    # VS Code 1.65 capabilities; it names the workspace with workspaceFolders
    "vscode": "visual-studio-code",
    # Emacs 29.1 (eglot) capabilities; it names the workspace with rootUri
    "emacs": "emacs",
}


def _record(entry: dict) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, default=str) + "\n")


class Tb:
    """One running server and the client that drives it."""

    def __init__(self, client, root: Path, flavour: str):
        self.client = client
        self.root = root
        self.flavour = flavour
        self.status: list[dict] = []
        self.epochs: list[dict] = []
        self.directives: list[dict] = []
        self.rewound: list[dict] = []
        self.registrations: list = []
        self.init_result = None

    @property
    def process(self):
        return self.client._server

    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    async def req(self, method: str, params=None, *, timeout: float = 20.0):
        try:
            result = await asyncio.wait_for(
                self.client.protocol.send_request_async(method, params), timeout)
        except JsonRpcException as exc:
            _record({"kind": "request", "method": method, "params": _plain(params),
                     "error": {"code": exc.code, "message": exc.message, "data": exc.data}})
            raise
        _record({"kind": "request", "method": method, "params": _plain(params), "result": _plain(result)})
        return result

    async def error(self, method: str, params=None) -> JsonRpcException:
        """Send a request that must fail; return the JSON-RPC error."""
        with pytest.raises(JsonRpcException) as info:
            await self.req(method, params)
        exc = info.value
        assert isinstance(exc.data, dict) and isinstance(exc.data.get("code"), str), exc.data
        assert exc.message and isinstance(exc.message, str)
        return exc

    async def turn(self, prompt: str, files: dict[str, str]) -> None:
        """A settled chat turn that writes `files`, each captured before and after, as an editor does."""
        await self.req("turnback/turn/begin", {"kind": "chat", "prompt": prompt})
        for rel, text in files.items():
            await self.req("turnback/turn/capture", {"uris": [self.uri(rel)], "phase": "before"})
            (self.root / rel).write_text(text)
            await self.req("turnback/turn/capture", {"uris": [self.uri(rel)]})
        await self.req("turnback/turn/settle", {})

    def notify(self, method: str, params) -> None:
        _record({"kind": "client-notification", "method": method, "params": _plain(params)})
        self.client.protocol.notify(method, params)

    async def until(self, predicate, timeout: float = 10.0, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}")

    async def initialize(self, init_options: dict | None = None):
        params = init_params(self, init_options)
        self.init_result = await asyncio.wait_for(self.client.initialize_session(params), 30)
        _record({"kind": "request", "method": "initialize", "params": _plain(params),
                 "result": _plain(self.init_result)})
        await self.until(lambda: self.status, what="the first turnback/status")
        return self.init_result

    async def stop(self) -> None:
        proc = self.process
        if proc is not None and proc.returncode is None:
            try:
                await asyncio.wait_for(self.client.shutdown_session(), 15)
            except Exception:
                _kill(proc)
        try:
            await asyncio.wait_for(self.client.stop(), 15)
        except Exception:
            _kill(proc)


def _kill(proc) -> None:
    if proc is not None and proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _plain(value):
    if hasattr(value, "__attrs_attrs__"):
        from lsprotocol import converters

        return converters.get_converter().unstructure(value)
    return value


async def start_server(root: Path, flavour: str = "emacs", *, init_options: dict | None = None,
                       env: dict | None = None, initialize: bool = True) -> Tb:
    # results stay plain JSON (pygls' default converter would turn them into namedtuples)
    client = LanguageClient(converter_factory=converter_factory)
    register_lsp_features(client)
    tb = Tb(client, root, flavour)

    for method, sink in (("turnback/status", tb.status), ("turnback/epoch", tb.epochs),
                         ("turnback/directives", tb.directives), ("turnback/rewound", tb.rewound)):
        def handler(params, sink=sink, method=method):
            params = _plain(params)
            _record({"kind": "notification", "method": method, "params": params})
            sink.append(params)
        client.feature(method)(handler)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams):
        _record({"kind": "server-request", "method": types.CLIENT_REGISTER_CAPABILITY,
                 "params": _plain(params)})
        tb.registrations.extend(params.registrations)
        return None

    full_env = {**os.environ, "TURNBACK_LOG": "INFO", **(env or {})}
    await client.start_io(*SERVER, env=full_env, cwd=str(root))
    if initialize:
        await tb.initialize(init_options)
    return tb


def init_params(tb: "Tb", init_options: dict | None = None) -> types.InitializeParams:
    root, flavour = tb.root, tb.flavour
    return types.InitializeParams(
        capabilities=client_capabilities(CLIENTS[flavour]), initialization_options=init_options,
        root_uri=root.as_uri() if flavour == "emacs" else None,
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)]
        if flavour == "vscode" else None,
        client_info=types.ClientInfo(name=flavour))


@pytest.fixture(params=sorted(CLIENTS))
def flavour(request):
    return request.param


@pytest.fixture
async def servers():
    """A factory for servers; every server started through it is stopped at the end of the test."""
    started: list[Tb] = []

    async def start(root: Path, flavour: str = "emacs", **kw) -> Tb:
        tb = await start_server(root, flavour, **kw)
        started.append(tb)
        return tb

    yield start
    for tb in reversed(started):
        await tb.stop()


@pytest.fixture
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hello')\n")
    return root.resolve()
