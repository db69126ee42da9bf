"""An editor's `turnback serve` refuses a store that is not the user's own (issue 21, item 1):
`initialize` answers `untrusted`, naming the file and why, and the server keeps running."""

from __future__ import annotations

import os

import pytest
from pygls.exceptions import JsonRpcException

from .conftest import _record, init_params
from .test_session import turn


async def test_a_store_others_can_write_is_refused_at_initialize(ws, servers):
    tb = await servers(ws, "emacs")
    await turn(tb, "first", {"a.txt": "two\n"})
    await tb.stop()
    os.chmod(ws / ".turnback", 0o777)
    tb = await servers(ws, "emacs", initialize=False)
    with pytest.raises(JsonRpcException) as info:
        await tb.client.initialize_session(init_params(tb))
    _record({"kind": "request", "method": "initialize", "params": {"rootUri": ws.as_uri(), "…": "…"},
             "error": {"code": info.value.code, "message": info.value.message,
                       "data": info.value.data}})
    assert info.value.data["code"] == "untrusted"
    assert str(ws / ".turnback") in info.value.message and "every user" in info.value.message
    exc = await tb.error("turnback/session/info", {})  # still running, still not initialized
    assert exc.data["code"] == "not-initialized"
    assert (ws / "a.txt").read_text() == "two\n"
