"""Two servers on one store; status notifications as gaps appear and clear; a crash mid-commit."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from sessionkit import assert_faulted
from turnback.lsp.sockets import Listener
from turnback.store import fs
from turnback.store.testing import faultplan
from turnback.store.fsck import fsck
from turnback.workbench import Workbench

from .test_session import turn


async def test_two_servers_observer_then_take_over(ws, servers, flavour):
    owner = await servers(ws, flavour)
    await turn(owner, "first", {"a.txt": "two\n"})
    # a plain observer (tests/live covers the one that attaches to the owner's socket)
    observer = await servers(ws, "emacs" if flavour == "vscode" else "vscode",
                             env={"TURNBACK_ATTACH": "off"})
    info = await observer.req("turnback/session/info", {})
    assert info["ownership"] == "observer"
    assert info["owner"]["pid"] == owner.process.pid
    assert observer.status[-1]["ownership"] == "observer"
    # reads work
    log = await observer.req("turnback/session/log", {})
    assert log["turns"][0]["prompt"] == "first"
    cand = await observer.req("turnback/rewind/prepare", {"boundary": {"kind": "beforePrompt", "turn": 1}})
    assert cand["discard"]["turnCount"] == 1
    # mutations answer not-owner, naming the owner
    for method, params in [("turnback/turn/begin", {"prompt": "mine"}),
                           ("turnback/rewind/commit", {"boundary": {"kind": "beforePrompt", "turn": 1},
                                                       "planHash": cand["planHash"]}),
                           ("turnback/collect/run", {})]:
        exc = await observer.error(method, params)
        assert exc.data["code"] == "not-owner", (method, exc.data)
        assert str(owner.process.pid) in exc.message
    assert (ws / "a.txt").read_text() == "two\n"
    # the owner exits; the observer takes over within a few seconds and says so
    await owner.stop()
    await observer.until(lambda: observer.status[-1]["ownership"] == "owner", timeout=8,
                         what="the observer to take over")
    info = await observer.req("turnback/session/info", {})
    assert info["ownership"] == "owner" and info["owner"]["pid"] == observer.process.pid
    await turn(observer, "second", {"a.txt": "three\n"})
    assert (await observer.req("turnback/session/info", {}))["turnCount"] == 2


async def test_an_observer_hears_the_owners_gaps_and_heads(ws, servers):
    owner = await servers(ws, "vscode", init_options={"capture": {"maxFileBytes": 1000}})
    observer = await servers(ws, "emacs", init_options={"capture": {"maxFileBytes": 1000}},
                             env={"TURNBACK_ATTACH": "off"})
    assert observer.status[-1]["ownership"] == "observer"
    n = (await owner.req("turnback/turn/begin", {"prompt": "make trouble"}))["turn"]
    (ws / "big.bin").write_bytes(b"x" * 5000)
    await owner.req("turnback/turn/capture", {"uris": [owner.uri("big.bin")]})
    await owner.req("turnback/turn/settle", {"turn": n})
    head = (await owner.req("turnback/session/info", {}))["headSeq"]
    await observer.until(lambda: observer.status[-1]["liveGaps"] == 1
                         and observer.status[-1]["headSeq"] == head, timeout=8,
                         what="the observer's status to follow the owner")


async def test_status_notifications_as_gaps_appear_and_clear(ws, servers, flavour):
    tb = await servers(ws, flavour, init_options={"capture": {"maxFileBytes": 1000}})
    assert tb.status[-1]["liveGaps"] == 0
    n = (await tb.req("turnback/turn/begin", {"prompt": "make trouble"}))["turn"]
    (ws / "big.bin").write_bytes(b"x" * 5000)
    os.symlink("/etc/hostname", ws / "link")
    seen = len(tb.status)
    cap = await tb.req("turnback/turn/capture", {"uris": [tb.uri("big.bin"), tb.uri("link")]})
    assert {g["reason"] for g in cap["gaps"]} == {"too-large", "symlink"}
    await tb.until(lambda: any(s["liveGaps"] == 2 for s in tb.status[seen:]), what="a status with 2 gaps")
    status = next(s for s in tb.status[seen:] if s["liveGaps"] == 2)
    assert {(g["uri"], g["reason"]) for g in status["gaps"]} == {(tb.uri("big.bin"), "too-large"),
                                                                 (tb.uri("link"), "symlink")}
    info = await tb.req("turnback/session/info", {})
    assert info["liveGaps"] == 2
    # the gaps clear when the paths become capturable again
    (ws / "big.bin").write_bytes(b"small now")
    (ws / "link").unlink()
    (ws / "link").write_text("a plain file now\n")
    seen = len(tb.status)
    await tb.req("turnback/turn/capture", {"uris": [tb.uri("big.bin"), tb.uri("link")]})
    await tb.until(lambda: any(s["liveGaps"] == 0 for s in tb.status[seen:]), what="the gaps to clear")
    await tb.req("turnback/turn/settle", {"turn": n})
    assert (await tb.req("turnback/session/info", {}))["liveGaps"] == 0


async def test_sweep_progress_with_work_done_token(ws, servers):
    tb = await servers(ws, "vscode")
    for i in range(3000):
        (ws / f"f{i:04}.txt").write_text(f"{i}\n" * 50)
    tb.client.progress_reports.setdefault("tok-1", [])  # the client made this token
    order = []

    async def timed(name, method, params):
        result = await tb.req(method, params)
        order.append(name)
        return result

    begin = asyncio.ensure_future(timed("begin", "turnback/turn/begin",
                                        {"prompt": "with progress", "workDoneToken": "tok-1"}))
    # the gate: the sweep has begun (its first progress report), with 3000 files still to read
    await tb.until(lambda: tb.client.progress_reports["tok-1"], what="the sweep to begin")
    info = await timed("info", "turnback/session/info", {})
    assert (await begin)["turn"] == 1
    # the sweep runs in slices: a read sent while it runs is answered before it finishes
    assert order == ["info", "begin"], order
    assert info["turnCount"] == 0
    reports = tb.client.progress_reports["tok-1"]
    assert reports[0].kind == "begin" and reports[-1].kind == "end"
    assert any(r.kind == "report" for r in reports)


def _objects(store_path) -> set[str]:
    root = store_path / "objects"
    return {fan.name + f.name for fan in root.iterdir() if fan.is_dir() for f in fan.iterdir()
            if not fs.is_temp_name(f.name)}


def _age_objects(store_path, seconds: float = 3600.0) -> None:
    """Objects written just before a collection count as new (and are kept): make them old."""
    t = os.path.getmtime(store_path) - seconds
    for fan in (store_path / "objects").iterdir():
        for f in fan.iterdir() if fan.is_dir() else ():
            os.utime(f, (t, t), follow_symlinks=False)


async def test_collect_run(ws, servers):
    """What a collection deletes is exactly the garbage (an intermediate image no head references
    and the heads superseded within their group), and every head it keeps reads back whole."""
    import turnback.collect  # noqa: F401  (fsck's deep checks: every kept body and its objects)
    from turnback.store.layout import Store
    from turnback.timeline.codec import StateCodec

    tb = await servers(ws, "vscode", init_options={"collect": {"graceHeads": 0, "graceSeconds": 0}})
    await turn(tb, "first", {"a.txt": "two\n"})
    n = (await tb.req("turnback/turn/begin", {"prompt": "second"}))["turn"]
    (ws / "a.txt").write_text("a draft nobody keeps\n")
    await tb.req("turnback/turn/capture", {"uris": [tb.uri("a.txt")]})
    (ws / "a.txt").write_text("three\n")
    await tb.req("turnback/turn/capture", {"uris": [tb.uri("a.txt")]})
    await tb.req("turnback/turn/settle", {"turn": n})
    (ws / "c.txt").write_text("a change between turns\n")
    await tb.req("turnback/turn/capture", {"uris": [tb.uri("c.txt")]})
    await tb.stop()  # publishes the loose change: a second head of the same group as turn 2's
    store_path = ws / ".turnback"
    store = Store.open(store_path, kind=None, create=False)
    draft = store.hasher.digest(b"a draft nobody keeps\n")
    # The garbage exists before the next server starts (its start-up collection may run at once).
    assert draft in _objects(store_path) and 2 in store.heads.list_seqs()
    _age_objects(store_path)
    tb = await servers(ws, "vscode", init_options={"collect": {"graceHeads": 0, "graceSeconds": 0}})
    tb.client.progress_reports.setdefault("gc-1", [])
    seen = len(tb.status)
    stats = await tb.req("turnback/collect/run", {"workDoneToken": "gc-1"})
    # A background collection may have run as well: judge the store, not only this run's counts.
    heads_after = set(store.heads.list_seqs())
    assert draft not in _objects(store_path)  # the garbage went
    assert 2 not in heads_after and heads_after  # turn 2's head was superseded by the next one
    again = await tb.req("turnback/collect/run", {})
    assert again["objectsDeleted"] == 0 and again["headsRetired"] == 0  # nothing garbage is left
    assert stats["bytesKept"] > 0
    current = store.heads.current()
    assert current.seq in heads_after
    codec = StateCodec(store.objects)
    for seq in heads_after:  # every kept head reads back whole
        state = codec.read(store.heads.read(seq).body)
        assert state.turns and state.turns[0].prompt == "first"
    assert [t.prompt for t in codec.read(current.body).turns] == ["first", "second"]
    report = fsck(store_path)
    assert report.ok, report.errors
    assert any(s["collecting"] for s in tb.status[seen:])
    assert tb.status[-1]["collecting"] is False
    kinds = [r.kind for r in tb.client.progress_reports["gc-1"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"


def _state(root):
    a = (root / "a.txt").read_text() if (root / "a.txt").exists() else None
    b = (root / "b.txt").read_text() if (root / "b.txt").exists() else None
    return a, b


async def test_killed_mid_commit_then_restart_is_old_or_new(ws, servers, tmp_path):
    tb = await servers(ws, "emacs")
    await turn(tb, "first", {"a.txt": "two\n"})
    edits = {f"gen/{i:02}.txt": f"generated {i}\n" for i in range(20)}
    await turn(tb, "second", {"a.txt": "three\n", "b.txt": "new\n", **edits})
    await tb.stop()
    boundary = {"kind": "beforePrompt", "turn": 2}
    old, new = ("three\n", "new\n"), ("two\n", None)

    # Count the mutating file-system operations a server makes to open the store and to commit.
    probe = tmp_path / "probe"
    shutil.copytree(ws, probe, symlinks=True)
    with faultplan.faults() as plan:
        wb = Workbench.open(probe)
        if wb.collection.pending:  # the server collects at start ("resume") before anything else
            wb.run(wb.collection.job())
        listener = Listener(None, str(wb.store.path))  # an owner also sets up its private socket
        await listener.start()
        opened = plan.count
        cand = wb.rewind.prepare({"boundary": boundary})
        assert wb.rewind.commit({"boundary": boundary, "planHash": cand["planHash"]})["status"] == "committed"
        committed = plan.count
        listener.close()
        wb.close()
    assert committed - opened > 10
    # early (before the intent is durable), in the middle of the file writes, near the very end
    points = sorted({opened + 2, (opened + committed) // 2, committed - 1})

    outcomes, crashed = set(), 0
    for k, crash_at in enumerate(points):
        root = tmp_path / f"crash{k}" / "ws"
        shutil.copytree(ws, root, symlinks=True)
        victim = await servers(root, "emacs", env={"TURNBACK_CRASH_AT": str(crash_at)})
        # (60 s: under a loaded CI the collection and its status can take longer than 10 s)
        await victim.until(lambda: any(s["collecting"] for s in victim.status)
                           and not victim.status[-1]["collecting"], timeout=60,
                           what="the start-up collection")
        cand = await victim.req("turnback/rewind/prepare", {"boundary": boundary})
        commit = asyncio.ensure_future(victim.req(
            "turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]}))
        died = asyncio.ensure_future(victim.process.wait())
        await asyncio.wait({commit, died}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        # The point lies inside the commit, so the server must die there: a run that never
        # crashed proves nothing and fails (it used to be accepted).
        await asyncio.wait_for(died, timeout=20)
        assert victim.process.returncode == faultplan.CRASH_EXIT, (crash_at, victim.process.returncode)
        if not commit.done():
            commit.cancel()
        else:
            commit.exception()  # retrieved: a crashed server fails the request
        # restart: the server recovers the interrupted transaction before accepting work
        again = await servers(root, "emacs")
        info = await again.req("turnback/session/info", {})
        await again.stop()
        report = fsck(root / ".turnback")
        assert report.ok, report
        state = _state(root)
        assert (state, info["turnCount"]) in {(old, 2), (new, 1)}, (crash_at, state, info)
        outcomes.add(info["turnCount"])
        crashed += 1
    assert_faulted(crashed, len(points), "a server killed in its commit")
    assert outcomes == {1, 2}
