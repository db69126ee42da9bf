"""The owner's private socket: many clients on one sidecar, same turns, same notifications."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from turnback.remote import client as remote
from turnback.remote.paths import preferred_socket

from .sockclient import SocketClient, raw


async def _socket_of(tb) -> str:
    for _ in range(200):
        info = await tb.req("turnback/session/info", {})
        if info.get("socket"):
            return info["socket"]
        await asyncio.sleep(0.02)
    raise AssertionError("the owner never reported a socket")


async def test_an_editor_and_two_command_line_clients_share_one_sidecar(ws, servers, flavour):
    editor = await servers(ws, flavour)
    path = await _socket_of(editor)
    assert path == preferred_socket(str(ws / ".turnback"))
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(os.path.dirname(path)).st_mode) == 0o700
    assert remote.owner_socket(ws) == path

    one = await asyncio.to_thread(SocketClient, path)
    two = await asyncio.to_thread(SocketClient, path)
    try:
        # no initialize needed on the socket; the first client begins a turn
        begun = await asyncio.to_thread(one.result, "turnback/turn/begin", {"prompt": "from cli one"})
        (ws / "a.txt").write_text("changed by the agent\n")
        await asyncio.to_thread(two.result, "turnback/turn/capture", {"uris": [(ws / "a.txt").as_uri()]})
        info = await asyncio.to_thread(two.result, "turnback/session/info", {})
        assert info["running"] == begun["turn"] and info["ownership"] == "owner"
        assert info["clients"] == 2
        await editor.req("turnback/turn/settle", {"turn": begun["turn"]})
        # the thin client's one-shot call sees the same turns
        log = await asyncio.to_thread(remote.call, ws, "turnback/session/log", {})
        assert [t["prompt"] for t in log["turns"]] == ["from cli one"]
        assert log["turns"][0]["files"][0]["uri"].endswith("/a.txt")
        # a rewind from the editor: every client hears the epoch
        cand = await editor.req("turnback/rewind/prepare", {"boundary": {"kind": "beforePrompt", "turn": 1}})
        done = await editor.req("turnback/rewind/commit", {"boundary": {"kind": "beforePrompt", "turn": 1},
                                                           "planHash": cand["planHash"]})
        assert done["status"] == "committed"
        assert (ws / "a.txt").read_text() == "one\n"
        await editor.until(lambda: editor.epochs, what="the editor's epoch")
        for c in (one, two):
            notes = await asyncio.to_thread(c.drain, 0.5)
            epochs = [n["params"] for n in notes if n.get("method") == "turnback/epoch"]
            assert epochs == editor.epochs
            assert any(n.get("method") == "turnback/status" for n in notes)
        # the same log through the socket and through stdio
        assert await asyncio.to_thread(one.result, "turnback/session/log", {}) == \
            await editor.req("turnback/session/log", {})
    finally:
        one.close()
        two.close()


async def test_socket_errors_carry_codes_and_bad_clients_do_not_disturb_others(ws, servers):
    editor = await servers(ws)
    path = await _socket_of(editor)
    good = await asyncio.to_thread(SocketClient, path)
    try:
        reply = await asyncio.to_thread(good.request, "turnback/turn/step", {"turn": "x"})
        assert reply["error"]["data"]["code"] == "invalid-params"
        reply = await asyncio.to_thread(good.request, "turnback/nothing/here", {})
        assert reply["error"]["data"]["code"] == "method-not-found"
        with pytest.raises(remote.RemoteError) as info:
            await asyncio.to_thread(remote.call, ws, "turnback/rewind/prepare",
                                    {"boundary": {"kind": "beforePrompt", "turn": 9}})
        assert info.value.code == "unknown-turn"
        # garbage, a lying header, a flood: each costs only its own connection
        junk = raw(path, b"Content-Length: 5\r\n\r\n{oops")
        liar = raw(path, b"Content-Length: nope\r\n\r\n")
        flood = raw(path, b"".join(remote.frame({"jsonrpc": "2.0", "id": i, "method":
                                                  "turnback/session/info", "params": {}})
                                    for i in range(500)))
        executed = await asyncio.to_thread(good.result, "workspace/executeCommand",
                                           {"command": "turnback.session.info", "arguments": [{}]})
        assert executed["ownership"] == "owner"
        for s in (junk, liar, flood):
            s.close()
        assert (await editor.req("turnback/session/info", {}))["ownership"] == "owner"
        assert (await asyncio.to_thread(good.result, "initialize", {}))["serverInfo"]["name"] == "turnback"
    finally:
        good.close()


async def test_a_stale_socket_is_replaced_and_an_unsafe_one_refused(ws, servers):
    first = await servers(ws)
    stale = await _socket_of(first)
    first.process.kill()  # a killed owner leaves its socket file behind
    await first.process.wait()
    assert os.path.lexists(stale)
    assert remote.owner_socket(ws) is None
    with pytest.raises(remote.NoOwner):
        remote.call(ws, "turnback/session/info", {})
    editor = await servers(ws)
    path = await _socket_of(editor)
    assert path == stale
    assert remote.call(ws, "turnback/session/info", {})["owner"]["pid"] == editor.process.pid

    # a socket open to other users is never connected to
    os.chmod(path, 0o666)
    with pytest.raises(remote.RemoteError) as info:
        remote.owner_socket(ws)
    assert info.value.code == "unsafe-socket" and "open to other users" in info.value.message
    os.chmod(path, 0o600)
    os.chmod(os.path.dirname(path), 0o755)
    with pytest.raises(remote.RemoteError) as info:
        remote.call(ws, "turnback/session/info", {})
    assert info.value.code == "unsafe-socket"
    os.chmod(os.path.dirname(path), 0o700)


def test_the_owner_refuses_to_listen_on_an_unsafe_path(ws, tmp_path):
    """A socket path that is not a private socket is refused; the owner does not replace it."""
    from turnback.lsp.sockets import Listener, SocketRefused

    store = tmp_path / "store"
    (store / "run").mkdir(parents=True, mode=0o700)
    planted = store / "run" / "owner.sock"
    planted.write_text("not a socket")
    with pytest.raises(SocketRefused):
        asyncio.run(Listener(None, str(store)).start())
    assert planted.read_text() == "not a socket"


def test_a_long_store_path_puts_the_socket_in_the_runtime_folder(tmp_path, monkeypatch):
    from turnback.remote.paths import recorded_socket

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    (tmp_path / "xdg").mkdir(mode=0o700)
    store = tmp_path / ("d" * 60) / ("e" * 60) / ".turnback"
    path = preferred_socket(str(store))
    assert path.startswith(str(tmp_path / "xdg" / "turnback")) and len(path) < 108
    assert recorded_socket(str(store)) is None


def test_peer_credentials_of_the_same_user(tmp_path):
    import socket as so

    from turnback.lsp.sockets import peer_uid

    a, b = so.socketpair(so.AF_UNIX, so.SOCK_STREAM)
    try:
        assert peer_uid(a) == os.getuid()
    finally:
        a.close()
        b.close()
