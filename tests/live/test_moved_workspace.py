"""A workspace renamed under its running owner (issue 21, item 6, the owner's half): the owner notices
its root changed identity, publishes into the store it really holds (where the rename took it),
releases the lease there and exits, and never touches the new store made at the old path.

The owner is stopped while the folder is renamed and a new store is made at the old path, so the
worst order is the one tested: it wakes with a request queued and the new store already there."""

from __future__ import annotations

import asyncio
import json
import os
import signal

from turnback.store.ownership.owners import who_owns

from .conftest import servers, ws  # noqa: F401 - fixtures
from .sockclient import SocketClient
from .test_daemon import root, tb, wait_gone  # noqa: F401 - root is a fixture
from .test_lease_loss import GATE, stopped, until


def _tree(folder) -> dict:
    """Every entry under `folder` with what a write would change: size, mtime, mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns, st.st_mode, st.st_ino)
    return out


def test_a_renamed_workspace_ends_its_owner_which_publishes_where_the_store_went(root):  # noqa: F811
    started = json.loads(tb(root, "--json", "serve", "--background", "--idle-exit", "120").stdout)
    pid = started["pid"]
    tb(root, "turn", "begin", "--prompt", "before the move")
    (root / "a.txt").write_text("edited before the move\n")
    tb(root, "turn", "capture", "a.txt")
    assert not list((root / ".turnback" / "heads").iterdir())  # nothing published yet: the journal
    attached = SocketClient(started["socket"], timeout=GATE)
    assert attached.result("turnback/session/info", {})["turnCount"] == 1
    os.kill(pid, signal.SIGSTOP)
    try:
        until(lambda: stopped(pid), "the owner to stop")
        moved = root.parent / "moved"
        os.rename(root, moved)
        root.mkdir()
        (root / "a.txt").write_text("another project at the old path\n")
        assert tb(root, "turn", "begin", "--prompt", "in the new folder").stdout.strip() == "1"
        before = _tree(root)
        attached.send({"jsonrpc": "2.0", "id": 99, "method": "turnback/turn/step",
                       "params": {"turn": 1, "kind": "shell", "scope": "host"}})
    finally:
        os.kill(pid, signal.SIGCONT)
    reply = attached.reply(99)
    assert reply["error"]["data"]["code"] == "workspace-moved", reply
    attached.close()  # its last client has heard why: nothing keeps it
    assert wait_gone(pid, GATE)
    # the new store at the old path: not one byte, name or mode changed by the old owner
    assert _tree(root) == before
    # the store it really held: its work published there, its lease released there
    store = moved / ".turnback"
    assert list((store / "heads").iterdir()), "the moved store got no publication"
    assert who_owns(store, "heads") is None
    log = json.loads(tb(moved, "--json", "log").stdout)
    assert [t["prompt"] for t in log["turns"]] == ["before the move"]
    assert [f["uri"].rsplit("/", 1)[-1] for f in log["turns"][0]["files"]] == ["a.txt"]
    assert tb(moved, "fsck").returncode == 0 and tb(root, "fsck").returncode == 0
    # and the new folder's store is its own: one turn, its own
    again = json.loads(tb(root, "--json", "log").stdout)
    assert [t["prompt"] for t in again["turns"]] == ["in the new folder"]


async def test_an_editors_sidecar_whose_workspace_is_renamed_says_so_and_stops(ws, servers):
    editor = await servers(ws, "vscode")
    n = (await editor.req("turnback/turn/begin", {"prompt": "before the move"}))["turn"]
    (ws / "a.txt").write_text("edited\n")
    await editor.req("turnback/turn/capture", {"uris": [editor.uri("a.txt")]})
    moved = ws.parent / "moved"
    os.rename(ws, moved)
    ws.mkdir()
    await asyncio.wait_for(editor.process.wait(), GATE)  # it stops by itself
    shown = [m.message for m in editor.client.messages]
    assert any("renamed or replaced" in m and str(moved / ".turnback") in m for m in shown), shown
    assert not os.listdir(ws)  # nothing made at the old path
    log = json.loads(tb(moved, "--json", "log").stdout)
    assert [t["prompt"] for t in log["turns"]] == ["before the move"] and n == 1
    assert who_owns(moved / ".turnback", "heads") is None
