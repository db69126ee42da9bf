"""Issue 39, item 1: the Redo listing never holds the owner's loop. A store of 100 turns (a history
of edits to a tree of source files, replayed through the workbench as an agent's turns, with
rewinds and Redos that leave groups behind, then collected so its objects sit in packed blocks) is
served with the loop tracer on (`TURNBACK_LOOP_TRACE`, lsp/stalls.py). `turnback/redo/list` runs
as a job: paused at one of its yields (a gate, never a timed guess), the server answers a status
request; the listing then gives the same groups as the workbench; every hold the tracer saw meanwhile
used under 10 ms of the loop thread's CPU (what the loop did, not how busy the machine was). A
listing can be cancelled, and the next one answers in full."""

from __future__ import annotations

import asyncio
import os
import random
import re
import sys

from sessionkit import Agent

from turnback.bench.common import keepalive
from turnback.bench.lspclient import LspClient

METHOD = "turnback/redo/list"
TURNS = 100
LOOP_BUDGET_MS = 10.0
HOLD = re.compile(r"held about (\d+) ms in all \(CPU: its thread's (\d+) ms")


def _source(rng: random.Random, lines: int) -> str:
    words = ("value", "count", "items", "result", "node", "path", "state", "name", "index")
    return "".join(f"def f{i}({rng.choice(words)}):\n    return {rng.choice(words)} + {i}\n"
                   for i in range(lines))


def _history(root) -> None:
    """100 turns, each like a commit: a few files edited, now and then one added or removed."""
    rng = random.Random(39)
    tree = {f"pkg{d}/mod{i}.py": _source(rng, 30) for d in range(6) for i in range(25)}
    for rel, text in tree.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    a = Agent(root)
    for n in range(1, TURNS + 1):
        keepalive(a.wb)  # renewed as a server's timer would: building takes longer than a lease
        a.begin(f"commit {n}")
        for rel in rng.sample(sorted(tree), rng.randint(1, 6)):
            lines = tree[rel].splitlines(keepends=True)
            lines[rng.randrange(len(lines))] = f"    return changed_{n}\n"
            tree[rel] = "".join(lines)
            (root / rel).write_text(tree[rel])
        if n % 7 == 0:
            rel = f"pkg{n % 6}/new{n}.py"
            tree[rel] = _source(rng, 10)
            (root / rel).write_text(tree[rel])
        if n % 11 == 0:
            gone = rng.choice(sorted(tree))
            del tree[gone]
            (root / gone).unlink()
        a.settle()  # the settle's sweep finds every change by itself
    for k in (90, 40, 70, 20, 50):  # each round trip leaves groups behind; the last stays rewound
        boundary = {"kind": "beforePrompt", "turn": k}
        keepalive(a.wb)
        plan = a.wb.rewind.prepare({"boundary": boundary})
        assert a.wb.rewind.commit({"boundary": boundary, "planHash": plan["planHash"]})["status"] \
            == "committed"
        if k == 50:
            break
        top = max(a.wb.redo.list({})["groups"], key=lambda g: g["turnCount"])
        plan = a.wb.redo.prepare({"headSeq": top["headSeq"]})
        assert a.wb.redo.commit({"headSeq": top["headSeq"], "planHash": plan["planHash"]})[
            "status"] == "committed"
    keepalive(a.wb)
    a.wb.run(a.wb.collection.job(grace_seconds=0))  # packed, as an owner's collection leaves it
    a.close()


def _expected(root) -> list[int]:
    a = Agent(root)
    try:
        return [g["headSeq"] for g in a.wb.redo.list({"all": True})["groups"]]
    finally:
        a.close()


def _holds(trace) -> list[tuple[int, int]]:
    text = trace.read_text() if trace.exists() else ""
    return [(int(ms), int(cpu)) for ms, cpu in HOLD.findall(text)]


async def _serve(root, gate, trace) -> LspClient:
    env = dict(os.environ, TURNBACK_JOB_GATE=f"{METHOD}:{gate}", TURNBACK_LOOP_TRACE="10",
               TURNBACK_LOOP_TRACE_FILE=str(trace))
    client = await LspClient.start([sys.executable, "-m", "turnback.lsp"], cwd=str(root), env=env)
    await client.initialize(root.as_uri())
    return client


async def test_a_redo_listing_of_100_turns_never_holds_the_loop(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    _history(root)
    expected = _expected(root)
    assert len(expected) >= 100
    gate, trace = tmp_path / "gate", tmp_path / "loop-trace.log"
    gate.mkdir()
    client = await _serve(root, gate, trace)
    try:
        await client.request("turnback/session/status", {})
        before = len(_holds(trace))

        # Paused at its third yield, the listing lets a status request through.
        (gate / "step").write_text("3")
        _rid, answer = client.send(METHOD, {"all": True})
        await client.proc.stdin.drain()
        while not (gate / "paused").exists():
            assert not answer.done(), "the listing ran to its end without yielding to the loop"
            await asyncio.sleep(0.01)
        status = await asyncio.wait_for(client.request("turnback/session/status", {}), 30)
        assert status and not answer.done()
        (gate / "go").write_text("")
        listing, _notes = await asyncio.wait_for(answer, 120)
        assert [g["headSeq"] for g in listing["groups"]] == expected
        # a hold is logged once the loop runs again: one more round trip, and the tracer's next look
        await client.request("turnback/session/status", {})
        await asyncio.sleep(0.05)
        assert trace.exists(), "the loop tracer never started: the budget below would prove nothing"
        holds = _holds(trace)[before:]
        # The law: no hold of more than the budget (the log rounds to whole milliseconds).
        assert all(cpu <= LOOP_BUDGET_MS for _ms, cpu in holds), (holds, trace.read_text()[-6000:])

        # Cancelled at a yield, it ends; the next listing answers in full.
        (gate / "step").write_text("2")
        rid, answer = client.send(METHOD, {"all": True})
        await client.proc.stdin.drain()
        while not (gate / "paused").exists():
            assert not answer.done()
            await asyncio.sleep(0.01)
        client.notify("$/cancelRequest", {"id": rid})
        await client.proc.stdin.drain()
        await client.request("turnback/session/status", {})
        (gate / "go").write_text("")
        try:
            result, _notes = await asyncio.wait_for(answer, 60)
        except RuntimeError as exc:  # the error answer of a cancelled request
            result = str(exc)
        assert isinstance(result, str) and "cancel" in result.lower(), result
        again = await client.request(METHOD, {"all": True})
        assert [g["headSeq"] for g in again["groups"]] == expected
    finally:
        await client.shutdown()
