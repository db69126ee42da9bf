"""`turnback fork` while an editor's sidecar owns the store: the command goes through the owner's
socket (it never opens the store itself), the editor hears the epoch naming the branch, and the
offline `branch` reads the same lineage beside the running owner."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from tests.lsp.test_session import turn

from .test_socket import _socket_of


def _turnback(ws, *args):
    return subprocess.run([sys.executable, "-m", "turnback", "--workspace", str(ws), *args],
                          capture_output=True, text=True, timeout=120)


async def test_fork_from_the_command_line_through_the_owner(ws, servers):
    editor = await servers(ws, "emacs")
    await _socket_of(editor)
    await turn(editor, "first", {"a.txt": "two\n"})
    await turn(editor, "second", {"a.txt": "three\n"})
    parent = (await editor.req("turnback/session/info", {}))["sessionId"]
    proc = await asyncio.to_thread(_turnback, ws, "--json", "fork", "--turn", "1", "--yes")
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)["confirm"]
    assert done["status"] == "forked" and done["branch"]["parentId"] == parent
    assert (ws / "a.txt").read_text() == "two\n"
    await editor.until(lambda: editor.epochs, what="the fork's epoch")
    assert editor.epochs[-1]["sessionId"] == done["branch"]["sessionId"]
    info = await editor.req("turnback/session/info", {})
    assert info["sessionId"] == done["branch"]["sessionId"] and info["ownership"] == "owner"
    proc = await asyncio.to_thread(_turnback, ws, "--json", "branch")
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    frozen = {s["sessionId"]: s["frozen"] for s in view["sessions"]}
    assert frozen == {parent: True, done["branch"]["sessionId"]: False}
    exc = await editor.error("turnback/turn/begin", {"prompt": "parent", "sessionId": parent})
    assert exc.data["code"] == "frozen"
