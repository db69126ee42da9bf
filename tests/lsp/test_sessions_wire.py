"""Many sessions over real stdio: `turnback/session/start`, `turnback/session/list`, the parked
session's log, and a mutation aimed at a session that is not the live one."""

from __future__ import annotations

from .conftest import Tb
from .test_session import turn


async def test_sessions_over_stdio(ws, servers):
    tb: Tb = await servers(ws, "emacs")
    await turn(tb, "first", {"a.txt": "two\n"})
    first = (await tb.req("turnback/session/info", {}))["sessionId"]
    made = await tb.req("turnback/session/start", {"meta": {"agentSession": "x1"}})
    assert made["current"] and made["sessionId"] != first
    listed = (await tb.req("turnback/session/list", {}))["sessions"]
    assert [(s["sessionId"], s["current"], s["turnCount"]) for s in listed] == \
        [(made["sessionId"], True, 0), (first, False, 1)]
    assert listed[0]["meta"] == {"agentSession": "x1"}
    old = await tb.req("turnback/session/log", {"sessionId": first})
    assert [t["prompt"] for t in old["turns"]] == ["first"]
    exc = await tb.error("turnback/turn/begin", {"prompt": "into the old one", "sessionId": first})
    assert exc.data["code"] == "not-current" and exc.data["current"] == made["sessionId"]
    exc = await tb.error("turnback/session/start", {"parentId": "nobody"})
    assert exc.data["code"] == "not-found"
    # the server is still fine, and the new session takes turns
    n = (await tb.req("turnback/turn/begin", {"prompt": "new", "sessionId": made["sessionId"]}))
    assert n["turn"] == 1
