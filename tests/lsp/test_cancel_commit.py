"""Over stdio: `$/cancelRequest` for a rewind commit, sent at several moments. Before the first file
write nothing changes; after it the commit runs to its end. Either way the files and the session
agree (old or new, never a mix) and no intent is left (issue 11, defect 2)."""

from __future__ import annotations

import asyncio
import shutil
import sys

from sessionkit import Agent

from turnback.bench.lspclient import LspClient
from turnback.store import fsio
from turnback.store.fsck import fsck

N = 120
BOUNDARY = {"kind": "beforePrompt", "turn": 2}


def _build(root):
    a = Agent(root)
    a.turn("one", {f"f/{i:03}.txt": f"one {i}" for i in range(N)})
    a.turn("two", {f"f/{i:03}.txt": f"two {i}" for i in range(N)})
    a.close()


def _files(root):
    return {(root / "f" / f"{i:03}.txt").read_text() for i in range(N)}


async def test_cancelling_a_commit_at_any_moment_leaves_old_or_new(tmp_path):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _build(pristine)
    old = {f"two {i}" for i in range(N)}
    new = {f"one {i}" for i in range(N)}
    outcomes = []
    for k, delay in enumerate((0.0, 0.01, 0.03, 0.08, 0.2)):
        root = tmp_path / f"w{k}"
        shutil.copytree(pristine, root, symlinks=True)
        client = await LspClient.start([sys.executable, "-m", "turnback.lsp"], cwd=str(root))
        try:
            await client.initialize(root.as_uri())
            cand = await client.request("turnback/rewind/prepare", {"boundary": BOUNDARY})
            rid, answer = client.send("turnback/rewind/commit",
                                      {"boundary": BOUNDARY, "planHash": cand["planHash"]})
            await client.proc.stdin.drain()
            await asyncio.sleep(delay)
            client.notify("$/cancelRequest", {"id": rid})
            await client.proc.stdin.drain()
            try:
                result, _ = await asyncio.wait_for(answer, 60)
            except Exception as exc:  # noqa: BLE001 - a cancelled request answers an error
                result = {"status": f"error: {exc}"}
            info = await client.request("turnback/session/info", {})
        finally:
            await client.shutdown()
        files = _files(root)
        assert (files, info["turnCount"]) in ((old, 2), (new, 1)), (delay, result, info)
        assert not [p for p in (root / ".turnback" / "txn").iterdir()
                    if not fsio.is_temp_name(p.name)]
        assert fsck(root / ".turnback").ok
        outcomes.append("new" if files == new else "old")
    assert outcomes  # five cancellations tried, each at a different moment
