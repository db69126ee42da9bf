"""Every error code of the contract on the wire, and a burst of garbage that must not hurt the server."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from turnback.store.layout import Store

from .conftest import Tb, _record
from .test_session import turn


async def test_error_codes(ws, servers, flavour):
    tb = await servers(ws, flavour)
    # invalid-params: garbage and ill-typed params
    for method, params in [("turnback/turn/begin", [1, 2]), ("turnback/turn/begin", {"prompt": 5}),
                           ("turnback/turn/capture", {"uris": "a.txt"}),
                           ("turnback/rewind/prepare", {"boundary": {"kind": "sideways", "turn": 1}}),
                           ("turnback/redo/prepare", {"headSeq": "x"})]:
        exc = await tb.error(method, params)
        assert exc.data["code"] == "invalid-params", (method, params, exc.data)
        assert exc.code == -32602
    n = (await tb.req("turnback/turn/begin", {"prompt": "p"}))["turn"]
    # turn-running
    exc = await tb.error("turnback/turn/begin", {"prompt": "again"})
    assert exc.data["code"] == "turn-running" and exc.code == -32803
    assert f"turn {n}" in exc.message
    # unknown-turn
    exc = await tb.error("turnback/turn/step", {"turn": 99, "kind": "shell", "scope": "host"})
    assert exc.data["code"] == "unknown-turn"
    # outside-workspace (a step that names a file elsewhere; an anchored directive elsewhere)
    exc = await tb.error("turnback/turn/step", {"turn": n, "kind": "file-write", "scope": "host",
                                                "uris": ["file:///etc/passwd"]})
    assert exc.data["code"] == "outside-workspace"
    exc = await tb.error("turnback/directive/upsert", {"uri": tb.uri("../elsewhere.txt"),
                                                       "anchor": {"line": 0}, "request": "x"})
    assert exc.data["code"] == "outside-workspace"
    # ...while a capture of such a path is a gap, not an error
    cap = await tb.req("turnback/turn/capture", {"uris": ["file:///etc/passwd"]})
    assert cap["gaps"][0]["reason"] == "outside-workspace"
    await tb.req("turnback/turn/settle", {"turn": n})
    # unknown method: still a JSON-RPC error with a stable data.code
    exc = await tb.error("turnback/no/such/method", {})
    assert exc.data["code"] == "method-not-found" and exc.code == -32601
    # still alive
    assert (await tb.req("turnback/session/info", {}))["turnCount"] == 1


async def test_stale_commit_changes_nothing(ws, servers, flavour):
    tb = await servers(ws, flavour)
    await turn(tb, "first", {"a.txt": "two\n"})
    await turn(tb, "second", {"a.txt": "three\n"})
    boundary = {"kind": "afterResponse", "turn": 1}
    cand = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    (ws / "a.txt").write_text("someone else's edit\n")  # the disk changed after the confirmation
    result = await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]})
    assert result["status"] == "stale"
    assert result["candidate"]["planHash"] != cand["planHash"]
    assert result["candidate"]["files"][0]["externalChange"] is True
    assert (ws / "a.txt").read_text() == "someone else's edit\n"
    assert (await tb.req("turnback/session/info", {}))["turnCount"] == 2
    await tb.req("turnback/session/info", {})  # a sentinel: notifications sent before it came first
    assert tb.epochs == []


async def test_no_heads_on_pid_store(ws, servers):
    tb = await servers(ws, "emacs", init_options={"store": {"kind": "pid"}})
    info = await tb.req("turnback/session/info", {})
    assert info["storeKind"] == "pid"
    await turn(tb, "first", {"a.txt": "two\n"})
    listed = await tb.req("turnback/redo/list", {})
    assert listed["available"] is False and listed["reason"]
    exc = await tb.error("turnback/redo/prepare", {"headSeq": 1})
    assert exc.data["code"] == "no-heads"


async def test_bad_initialization_options_and_no_workspace(ws, servers):
    tb = await servers(ws, "emacs", initialize=False)
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=None)
    with pytest.raises(JsonRpcException) as info:
        await tb.client.initialize_session(params)
    assert info.value.data["code"] == "invalid-params" and "workspace" in info.value.message
    # a request before a successful initialize
    exc = await tb.error("turnback/session/info", {})
    assert exc.data["code"] == "not-initialized"
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=ws.as_uri(),
                                    initialization_options={"store": {"kind": "git"}})
    with pytest.raises(JsonRpcException) as info:
        await tb.client.initialize_session(params)
    assert info.value.data["code"] == "invalid-params"
    await tb.initialize({"capture": {"maxFileBytes": 1000}})
    assert (await tb.req("turnback/session/info", {}))["ownership"] == "owner"


async def test_corrupt_store(ws, servers):
    tb = await servers(ws, "emacs")
    await turn(tb, "first", {"a.txt": "two\n"})
    await tb.stop()
    store = Store.open(ws / ".turnback")
    head = store.heads.current()
    body = ws / ".turnback" / "objects" / head.body[:2] / head.body[2:]
    os.chmod(body, 0o600)
    body.write_bytes(b"not the bytes of this digest")
    tb = await servers(ws, "emacs", initialize=False)
    from .conftest import init_params

    with pytest.raises(JsonRpcException) as info:
        await tb.client.initialize_session(init_params(tb))
    _record({"kind": "request", "method": "initialize", "params": {"rootUri": ws.as_uri(), "…": "…"},
             "error": {"code": info.value.code, "message": info.value.message, "data": info.value.data}})
    assert info.value.data["code"] == "corrupt-store"
    assert "damaged" in info.value.message
    exc = await tb.error("turnback/session/info", {})
    assert exc.data["code"] == "not-initialized"


_raw_ids = iter(range(10_000, 20_000))


async def raw_request(tb: Tb, method: str, params):
    """Send a request exactly as given (no client-side typing) and wait for its answer."""
    from concurrent.futures import Future

    msg_id = next(_raw_ids)
    fut: Future = Future()
    tb.client.protocol._request_futures[msg_id] = fut
    tb.process.stdin.write(_frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
    await tb.process.stdin.drain()
    return await asyncio.wait_for(asyncio.wrap_future(fut), 20)


def _frame(obj) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def test_garbage_burst_then_normal_session(ws, servers, flavour):
    tb = await servers(ws, flavour)
    methods = ["turnback/session/info", "turnback/turn/begin", "turnback/turn/capture",
               "turnback/turn/step", "turnback/turn/settle", "turnback/rewind/prepare",
               "turnback/rewind/commit", "turnback/redo/prepare", "turnback/redo/commit",
               "turnback/directive/upsert", "turnback/directive/record", "turnback/workflow/set",
               "turnback/recovery/resolve", "turnback/agent/transcript", "turnback/turn/respond"]
    bad_params = [[1, 2, 3], 42, "a string", True, {"turn": "1"}, {"uris": [1, 2]},
                  {"boundary": []}, {"boundary": {"kind": "beforePrompt", "turn": -1}},
                  {"headSeq": 1.5}, {"planHash": None}, {"prompt": "x" * 2_000_000, "kind": 7},
                  {"uri": "x" * 100_000, "anchor": {"line": "one"}, "request": 1},
                  {"id": {"nested": [1]}, "action": "explode"}]
    requests = [tb.req(m, p) for m in methods for p in bad_params]
    requests += [tb.req("no/such/method", {}), tb.req("turnback/", None)]
    # standard methods with params that do not fit their LSP types go raw (the client cannot type them)
    requests += [raw_request(tb, types.WORKSPACE_EXECUTE_COMMAND, p) for p in
                 (12, "x", [1], {"command": 5}, {"command": "turnback.nope"},
                  {"command": "turnback.session.info", "arguments": [1, 2]},
                  {"command": "turnback.turn.begin", "arguments": "prompt"})]
    requests += [raw_request(tb, types.INITIALIZE, {"capabilities": 3})]
    results = await asyncio.gather(*requests, return_exceptions=True)
    for r in results:
        if isinstance(r, JsonRpcException):
            assert isinstance(r.data, dict) and isinstance(r.data.get("code"), str), r.data
            assert r.data["code"] != "internal", r.message
        else:
            assert not isinstance(r, Exception), repr(r)
    # garbage notifications and broken frames straight onto the wire
    stdin = tb.process.stdin
    for raw in [_frame({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_DID_SAVE,
                        "params": {"textDocument": 5}}),
                _frame({"jsonrpc": "2.0", "method": types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        "params": {"changes": "all"}}),
                _frame({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_DID_OPEN}),
                _frame(b"{{{ not json"), _frame(b"[1, 2, 3]"), _frame(b"17"),
                _frame({"jsonrpc": "2.0", "id": [1], "method": "turnback/session/info"}),
                _frame({"jsonrpc": "1.0", "id": 99991, "method": "turnback/session/info"}),
                _frame({"jsonrpc": "2.0", "id": 99992, "method": "turnback/session/info",
                        "params": {}, "extra": 1}),
                b"Content-Length: 3\r\n\r\n{}}" + b"\r\n"]:
        stdin.write(raw)
    await stdin.drain()
    # and a normal session still works (a garbage-looking begin may have been valid: cancel it)
    assert (await tb.req("turnback/session/info"))["ownership"] == "owner"
    for t in (await tb.req("turnback/session/log"))["turns"]:
        if t["state"] == "running":
            await tb.req("turnback/turn/settle", {"turn": t["turn"], "status": "cancelled"})
    start = (await tb.req("turnback/session/info"))["turnCount"]
    await turn(tb, "after the storm", {"a.txt": "calm\n"})
    boundary = {"kind": "beforePrompt", "turn": start + 1}
    cand = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    done = await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]})
    assert done["status"] == "committed" and (ws / "a.txt").read_text() == "one\n"
    assert tb.process.returncode is None
