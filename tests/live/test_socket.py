"""The owner's private socket: many clients on one sidecar, same turns, same notifications."""

from __future__ import annotations

import asyncio
import json
import os
import stat

import pytest

from turnback.remote import client as remote
from turnback.remote.paths import preferred_socket

from .sockclient import SocketClient, raw, socket_of


def _mended(path: str) -> bool:
    return (stat.S_IMODE(os.lstat(path).st_mode), stat.S_IMODE(os.lstat(os.path.dirname(path)).st_mode)) \
        == (0o600, 0o700)


_socket_of = socket_of


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
        assert info["watcher"]["state"] in ("healthy", "starting")  # the owner watches the workspace
        await editor.req("turnback/turn/settle", {"turn": begun["turn"]})
        # a real command-line process through the owner, and the thin client's one-shot call
        import subprocess
        import sys

        cli = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "turnback", "--workspace",
                                                       str(ws), "--json", "info"],
                                      capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0, cli.stderr
        shown = json.loads(cli.stdout)
        assert shown["turnCount"] == 1 and shown["running"] is None and shown["socket"] == path
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

    # a socket open to other users is never connected to (the owner, stopped, cannot mend it)
    import signal

    os.kill(editor.process.pid, signal.SIGSTOP)
    try:
        os.chmod(path, 0o666)
        with pytest.raises(remote.RemoteError) as info:
            remote.owner_socket(ws)
        assert info.value.code == "unsafe-socket" and "open to other users" in info.value.message
        os.chmod(path, 0o600)
        os.chmod(os.path.dirname(path), 0o755)
        with pytest.raises(remote.RemoteError) as info:
            remote.call(ws, "turnback/session/info", {})
        assert info.value.code == "unsafe-socket"
        os.chmod(path, 0o666)
    finally:
        os.kill(editor.process.pid, signal.SIGCONT)
    # continued, the owner puts both modes back itself (and logs it): clients believe it again
    info = await editor.until(lambda: _mended(path), timeout=30, what="the modes to be put back")
    assert remote.call(ws, "turnback/session/info", {})["owner"]["pid"] == editor.process.pid


async def test_a_long_store_path_puts_the_socket_in_a_private_runtime_folder(tmp_path, monkeypatch,
                                                                               short_tmp):
    from turnback.lsp.sockets import Listener
    from turnback.remote.paths import recorded_socket

    class Server:
        def on_clients_changed(self):
            pass

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_tmp / "xdg"))
    (short_tmp / "xdg").mkdir(mode=0o700)
    store = tmp_path / ("d" * 60) / ("e" * 60) / ".turnback"
    store.mkdir(parents=True, mode=0o700)
    assert preferred_socket(str(store)) is None  # <store>/run/owner.sock does not fit sun_path
    assert recorded_socket(str(store)) is None
    listener = Listener(Server(), str(store))
    path = await listener.start()
    try:
        folder = os.path.dirname(path)
        assert os.path.dirname(folder) == str(short_tmp / "xdg") and len(path) < 108
        assert os.path.basename(folder).startswith("turnback-")  # a random name of its own
        assert recorded_socket(str(store)) == path  # the store records where its owner listens
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    finally:
        listener.close()
    assert not os.path.lexists(folder) and recorded_socket(str(store)) is None


def test_peer_credentials_of_the_same_user(tmp_path):
    import socket as so

    from turnback.lsp.sockets import peer_uid

    a, b = so.socketpair(so.AF_UNIX, so.SOCK_STREAM)
    try:
        assert peer_uid(a) == os.getuid()
    finally:
        a.close()
        b.close()


async def test_a_client_of_another_user_is_refused(ws, tmp_path, monkeypatch):
    """SO_PEERCRED names the connecting user; anyone but the owner's user is closed at once."""
    from turnback.lsp import sockets

    class Server:
        def on_clients_changed(self):
            pass

    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    listener = sockets.Listener(Server(), str(store))
    path = await listener.start()
    monkeypatch.setattr(sockets, "peer_uid", lambda sock: os.getuid() + 1)
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        try:  # the owner may close it before the request is even written
            writer.write(remote.frame({"jsonrpc": "2.0", "id": 1, "method": "turnback/session/info"}))
            answer = await asyncio.wait_for(reader.read(), 5)
        except (ConnectionResetError, BrokenPipeError):
            answer = b""
        assert answer == b""  # closed without an answer
        writer.close()
        assert not listener.connections
    finally:
        listener.close()
    assert not os.path.lexists(path)


async def test_the_hook_path_imports_the_standard_library_only(ws, servers):
    import subprocess
    import sys

    editor = await servers(ws)
    await _socket_of(editor)
    await editor.req("turnback/turn/begin", {"prompt": "hooked"})
    probe = ("import sys; from turnback.cli.fast import main; rc = main(['--workspace', sys.argv[1], "
             "'--json', 'turn', 'capture', 'a.txt']); "
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', "
             "'cbor2', 'xxhash', 'psutil', 'pathspec', 'argparse', 'asyncio') or m.startswith("
             "('turnback.store', 'turnback.workbench', 'turnback.lsp', 'turnback.cli.main'))); "
             "print('HEAVY', heavy, rc)")
    proc = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", probe, str(ws)],
                                   capture_output=True, text=True, cwd=ws, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY [] 0" in proc.stdout, proc.stdout
    log = await editor.req("turnback/session/log", {})
    assert log["turns"][0]["prompt"] == "hooked"


async def test_a_second_editor_attaches_to_the_owner(ws, servers):
    """A second editor's sidecar finds the store owned and becomes one more client of the owner:
    its requests are answered there and it hears the owner's notifications; when the owner goes
    away it takes over as before."""
    first = await servers(ws, "vscode")
    path = await _socket_of(first)
    second = await servers(ws, "emacs")
    begun = await second.req("turnback/turn/begin", {"prompt": "from the second editor"})
    (ws / "a.txt").write_text("second\n")
    from lsprotocol import types

    second.notify(types.TEXT_DOCUMENT_DID_SAVE, types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=second.uri("a.txt"))))
    info = await second.req("turnback/session/info", {})
    assert info["owner"]["pid"] == first.process.pid and info["socket"] == path
    await second.req("turnback/turn/settle", {"turn": begun["turn"]})
    log = await first.req("turnback/session/log", {})
    assert log["turns"][0]["prompt"] == "from the second editor"
    assert [f["uri"] for f in log["turns"][0]["files"]] == [second.uri("a.txt")]
    cand = await second.req("turnback/rewind/prepare", {"boundary": {"kind": "beforePrompt", "turn": 1}})
    done = await second.req("turnback/rewind/commit", {"boundary": {"kind": "beforePrompt", "turn": 1},
                                                       "planHash": cand["planHash"]})
    assert done["status"] == "committed" and (ws / "a.txt").read_text() == "one\n"
    await second.until(lambda: second.epochs, what="the owner's epoch, relayed")
    assert second.epochs == first.epochs
    # the owner leaves: the second editor owns and listens
    await first.stop()
    for _ in range(300):  # the take-over poll runs every second
        info = await second.req("turnback/session/info", {})
        if info["owner"]["pid"] == second.process.pid:
            break
        await asyncio.sleep(0.05)
    assert info["ownership"] == "owner" and info["owner"]["pid"] == second.process.pid
    await second.until(lambda: second.status[-1]["ownership"] == "owner", what="its own status")


async def test_an_agent_hook_is_mapped_by_an_editors_sidecar(ws, servers, flavour):
    """A hook reaches the editor's own sidecar (not a background owner): the event is mapped there,
    and the editor hears the turn it began."""
    import subprocess
    import sys

    editor = await servers(ws, flavour)
    await _socket_of(editor)
    payload = {"session_id": "agent-1", "transcript_path": None, "cwd": str(ws),
               "hook_event_name": "UserPromptSubmit", "prompt": "from the agent"}
    proc = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "turnback", "hook",
                                                    "claude-code"],
                                   input=json.dumps(payload).encode(), capture_output=True,
                                   cwd=ws, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr
    info = await editor.req("turnback/session/info", {})
    assert info["running"] == 1 and info["ownership"] == "owner"
    log = await editor.req("turnback/session/log", {})
    assert [t["prompt"] for t in log["turns"]] == ["from the agent"]
    assert not (ws / ".turnback" / "run" / "daemon.log").exists()  # no background owner was started


async def test_the_socket_is_never_published_open_to_others(tmp_path, monkeypatch):
    """A racing starter or a client that looks while the owner binds must never see the socket
    with another mode than 0600 (it would refuse it as unsafe): it is bound and made private under
    another name, then renamed into place."""
    from turnback.lsp import sockets, sockplace
    from turnback.store import fs

    store = tmp_path / "store"
    store.mkdir()
    public = preferred_socket(str(store))
    seen = []
    real_chmod = fs.chmod

    def watching(path, mode, **kw):
        seen.append((os.path.basename(os.fspath(path)), os.path.lexists(public)))
        return real_chmod(path, mode, **kw)

    monkeypatch.setattr(sockplace.fs, "chmod", watching)
    listener = sockets.Listener(server=None, store_path=str(store))
    path = await listener.start()
    try:
        assert path == public
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        socket_chmods = [exists for name, exists in seen if name.startswith(".o")]
        assert socket_chmods == [False]  # made private before the public name existed
        assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".o")]
    finally:
        listener.close()
