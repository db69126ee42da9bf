"""Over stdio: the owner is killed in the middle of a rewind's file writes; a second `turnback serve`
takes the store over and recovers the interrupted transaction before it accepts work (issue 11).
(A second editor started while the owner lives now attaches to it, so it starts after the kill.)"""

from __future__ import annotations

import asyncio
import shutil

from sessionkit import assert_faulted
from turnback.lsp.sockets import Listener
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.workbench import Workbench

from .test_session import turn


def _state(root):
    return tuple((root / rel).read_text() if (root / rel).exists() else None
                 for rel in ("a.txt", "b.txt", "gen/00.txt", "gen/19.txt"))


async def test_a_second_serve_takes_over_from_an_owner_killed_mid_commit(ws, servers, tmp_path):
    tb = await servers(ws, "emacs")
    await turn(tb, "first", {"a.txt": "two\n"})
    edits = {f"gen/{i:02}.txt": f"generated {i}\n" for i in range(20)}
    await turn(tb, "second", {"a.txt": "three\n", "b.txt": "new\n", **edits})
    await tb.stop()
    boundary = {"kind": "beforePrompt", "turn": 2}
    old = _state(ws)

    probe = tmp_path / "probe"  # count the operations to open and to commit, as the server does
    shutil.copytree(ws, probe, symlinks=True)
    with faultplan.faults() as plan:
        wb = Workbench.open(probe)
        if wb.collection.pending:
            wb.run(wb.collection.job())
        listener = Listener(None, str(wb.store.path))
        await listener.start()
        opened = plan.count
        cand = wb.rewind.prepare({"boundary": boundary})
        assert wb.rewind.commit({"boundary": boundary, "planHash": cand["planHash"]})["status"] \
            == "committed"
        committed = plan.count
        listener.close()
        wb.close()
    new = _state(probe)
    assert new != old

    tried = 0
    for crash_at in ((opened + committed) // 2, (opened + committed) // 2 + 7):
        root = tmp_path / f"crash{crash_at}" / "ws"
        shutil.copytree(ws, root, symlinks=True)
        victim = await servers(root, "emacs", env={"TURNBACK_CRASH_AT": str(crash_at)})
        await victim.until(lambda: not victim.status[-1]["collecting"], what="start-up collection")
        cand = await victim.req("turnback/rewind/prepare", {"boundary": boundary})
        commit = asyncio.ensure_future(victim.req(
            "turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]}))
        # The point lies inside the commit, so the owner must die there (a gate on its exit, not
        # a pause and a look): a run that never crashed proves nothing and fails.
        await asyncio.wait_for(victim.process.wait(), timeout=60)
        assert victim.process.returncode == faultplan.CRASH_EXIT, (crash_at, victim.process.returncode)
        if commit.done():
            commit.exception()
        else:
            commit.cancel()
        tried += 1
        watcher = await servers(root, "vscode")  # a second serve, after the owner died
        await watcher.until(lambda: watcher.status[-1]["ownership"] == "owner", timeout=15,
                            what="the observer to take over")
        info = await watcher.req("turnback/session/info", {})
        txn = root / ".turnback" / "txn"
        assert not [p for p in txn.iterdir() if not fs.is_temp_name(p.name)]
        assert (_state(root), info["turnCount"]) in {(old, 2), (new, 1)}, (crash_at, info)
        assert info["recovery"] == 0
        await turn(watcher, "after the takeover", {"c.txt": "c\n"})  # and it accepts work
        await watcher.stop()
        assert fsck(root / ".turnback").ok
    assert_faulted(tried, 2, "an owner killed inside its commit")
