"""Over stdio, `$/cancelRequest` for `turnback/fork/confirm` at every yield of its job (issue 25,
item 2), each reached through a gate (the server pauses at that yield until the test has sent the
cancel), never a timed guess. Before the fork's first file: the answer is "cancelled", nothing
changed, nothing is left busy (the next confirm forks). From the first file on: the fork runs to its
end and the client gets exactly what an uncancelled fork gives: the answer `forked`, the epoch
naming the branch, a status."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys

from sessionkit import Agent

from turnback.bench.lspclient import LspClient
from turnback.store import lineage
from turnback.store.fsck import fsck
from turnback.store.layout import Store

METHOD = "turnback/fork/confirm"


def _build(root):
    a = Agent(root)
    a.turn("one", {f"f/{i}.txt": f"one {i}" for i in range(4)})
    a.turn("two", {**{f"f/{i}.txt": f"two {i}" for i in range(4)}, "new.txt": "two"})
    a.close()


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*.txt")
            if ".turnback" not in p.parts}


def _yields(root) -> tuple[int, int]:
    """(how many values the confirm job yields, the 1-based number of its first binding one)."""
    a = Agent(root)
    try:
        report = a.wb.fork.prepare({"turn": 1})
        job = a.wb.fork.confirm_job({"turn": 1, "hash": report["hash"]})
        n, first = 0, None
        for value in job:
            n += 1
            if first is None and getattr(value, "binding", False):
                first = n
        return n, first
    finally:
        a.close()


async def _server(root, gate):
    env = dict(os.environ, TURNBACK_JOB_GATE=f"{METHOD}:{gate}")
    client = await LspClient.start([sys.executable, "-m", "turnback.lsp"], cwd=str(root), env=env)
    await client.initialize(root.as_uri())
    return client


async def _cancel_at(client, gate, n: int):
    """Confirm a fork, cancel it at yield n (gated), and return (answer or error text, notes after)."""
    report = await client.request("turnback/fork/prepare", {"turn": 1})
    assert "refusal" not in report, report["refusal"]  # nothing is left busy by an earlier cancel
    (gate / "step").write_text(str(n))
    rid, answer = client.send(METHOD, {"turn": 1, "hash": report["hash"]})
    await client.proc.stdin.drain()
    while not (gate / "paused").exists():  # the gate: the server is held at yield n
        assert not answer.done(), f"the job ended before yield {n}"
        await asyncio.sleep(0.01)
    seen = len(client.notifications)
    client.notify("$/cancelRequest", {"id": rid})
    await client.proc.stdin.drain()
    await client.request("turnback/session/info", {})  # the cancel has been read by now
    (gate / "go").write_text("")
    try:
        result, _ = await asyncio.wait_for(answer, 60)
    except RuntimeError as exc:  # the error answer of a cancelled request
        result = str(exc)
    await client.request("turnback/session/info", {})  # notifications sent with the answer are in
    return result, [(m, p) for _t, m, p in client.notifications[seen:]]


async def test_cancelling_a_fork_confirm_at_every_yield(tmp_path):
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    _build(pristine)
    old = _files(pristine)
    total, binding = _yields(shutil.copytree(pristine, tmp_path / "count"))
    assert binding is not None and 1 < binding <= total

    # Every yield before the first file: one server, since nothing changes.
    root = shutil.copytree(pristine, tmp_path / "before")
    gate = tmp_path / "gate-before"
    gate.mkdir()
    client = await _server(root, gate)
    try:
        for n in range(1, binding):
            result, notes = await _cancel_at(client, gate, n)
            assert isinstance(result, str) and "cancel" in result.lower(), (n, result)
            assert _files(root) == old, n
            assert not [m for m, _p in notes if m == "turnback/epoch"], n
            assert not [r for r in lineage.forks(Store.open(root / ".turnback", kind=None,
                                                            create=False))], n
    finally:
        await client.shutdown()
    assert fsck(root / ".turnback").ok

    # From the first file on (the first binding yield, one in the middle, the last): told.
    tried = sorted({binding, (binding + total) // 2, total})
    for n in tried:
        root = shutil.copytree(pristine, tmp_path / f"after{n}")
        gate = tmp_path / f"gate{n}"
        gate.mkdir()
        client = await _server(root, gate)
        try:
            result, notes = await _cancel_at(client, gate, n)
            info = await client.request("turnback/session/info", {})
        finally:
            await client.shutdown()
        assert isinstance(result, dict) and result["status"] == "forked", (n, result)
        epochs = [p for m, p in notes if m == "turnback/epoch"]
        assert [e["sessionId"] for e in epochs] == [result["branch"]["sessionId"]], (n, notes)
        assert any(m == "turnback/status" for m, _p in notes), n
        assert info["sessionId"] == result["branch"]["sessionId"] and info["turnCount"] == 1
        assert _files(root) == {f"f/{i}.txt": f"one {i}" for i in range(4)}
        phases = [r["phase"] for r in lineage.forks(Store.open(root / ".turnback", kind=None,
                                                               create=False))]
        assert phases == ["complete"], (n, phases)
        assert fsck(root / ".turnback").ok
    print(f"fork/confirm: cancelled at {binding - 1} yield(s) before its first file and at "
          f"{len(tried)} of {total - binding + 1} from it on")
