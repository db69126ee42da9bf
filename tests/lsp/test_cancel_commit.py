"""Over stdio: `$/cancelRequest` for a rewind commit. Before the first file write nothing changes;
after it the commit runs to its end. Either way the files and the session agree (old or new, never
a mix) and no intent is left (issue 11, defect 2).

Two moments, each fixed by a gate rather than a delay (issue 21, item 7): the cancel written in the
same write as the commit (the server reads both before the commit's first step: it must be old),
and the cancel sent once the first restored file is seen on disk (past the point of no return: it
must be new). So the loop sees both outcomes, and each where it must."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time

from sessionkit import Agent

from turnback.bench.lspclient import LspClient
from turnback.store import fs
from turnback.store.fsck import fsck

N = 120
BOUNDARY = {"kind": "beforePrompt", "turn": 2}
GATE = 60.0


def _build(root):
    a = Agent(root)
    a.turn("one", {f"f/{i:03}.txt": f"one {i}" for i in range(N)})
    a.turn("two", {f"f/{i:03}.txt": f"two {i}" for i in range(N)})
    a.close()


def _files(root):
    return {(root / "f" / f"{i:03}.txt").read_text() for i in range(N)}


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _first_file_restored(root) -> None:
    """The gate: some file already holds its restored bytes (the commit is past its first write)."""
    deadline = time.monotonic() + GATE
    while time.monotonic() < deadline:
        for i in range(N):
            try:
                if (root / "f" / f"{i:03}.txt").read_text() == f"one {i}":
                    return
            except OSError:
                continue  # between the unlink and the rename of a replace: look again
        await asyncio.sleep(0.001)
    raise AssertionError("the commit never wrote a file")


async def _cancel(client: LspClient, root, when: str):
    cand = await client.request("turnback/rewind/prepare", {"boundary": BOUNDARY})
    params = {"boundary": BOUNDARY, "planHash": cand["planHash"]}
    if when == "with-the-commit":
        client._next += 1
        rid = client._next
        answer = asyncio.get_running_loop().create_future()
        client._waiting[rid] = answer
        client.proc.stdin.write(  # one write: the server reads the cancel before the commit runs
            _frame({"jsonrpc": "2.0", "id": rid, "method": "turnback/rewind/commit", "params": params})
            + _frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}}))
    else:
        rid, answer = client.send("turnback/rewind/commit", params)
        await client.proc.stdin.drain()
        await _first_file_restored(root)
        client.notify("$/cancelRequest", {"id": rid})
    await client.proc.stdin.drain()
    try:
        result, _ = await asyncio.wait_for(answer, GATE)
    except RuntimeError as exc:  # a cancelled request answers an error
        result = {"status": f"error: {exc}"}
    return result


async def test_cancelling_a_commit_gives_old_before_the_first_write_and_new_after(tmp_path):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _build(pristine)
    old = {f"two {i}" for i in range(N)}
    new = {f"one {i}" for i in range(N)}
    outcomes = {}
    for when in ("with-the-commit", "after-the-first-write"):
        root = tmp_path / when
        shutil.copytree(pristine, root, symlinks=True)
        client = await LspClient.start([sys.executable, "-m", "turnback.lsp"], cwd=str(root))
        try:
            await client.initialize(root.as_uri())
            result = await _cancel(client, root, when)
            info = await client.request("turnback/session/info", {})
            epochs = [n for n in client.notifications if n[1] == "turnback/epoch"]
        finally:
            await client.shutdown()
        files = _files(root)
        assert (files, info["turnCount"]) in ((old, 2), (new, 1)), (when, result, info)
        assert not [p for p in (root / ".turnback" / "txn").iterdir()
                    if not fs.is_temp_name(p.name)]
        assert fsck(root / ".turnback").ok
        outcomes[when] = "new" if files == new else "old"
        # the answer to a cancelled request is "cancelled" either way (docs/protocol.md); the
        # one sign of a commit that ran to its end is its epoch, sent exactly once
        assert len(epochs) == (1 if outcomes[when] == "new" else 0), (when, result, epochs)
    assert outcomes == {"with-the-commit": "old", "after-the-first-write": "new"}
