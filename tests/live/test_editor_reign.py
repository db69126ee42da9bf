"""Two editors on one store when ownership changes hands under them (issue 21, items 2 and 7): an
editor that loses its lease attaches to the new owner, never to itself; an owner killed in the
middle of a relayed request leaves the request answered and the second editor owning the store.
Gates, not sleeps: each step waits for the state it needs."""

from __future__ import annotations

import asyncio
import fcntl
import os

from turnback.remote import client as remote
from turnback.store.fsck import fsck

GATE = 30.0


async def _eventually(fetch, accept, what: str, limit: float = GATE):
    """Ask `fetch()` again until `accept(answer)` holds (a gate on the server's own state)."""
    deadline = asyncio.get_running_loop().time() + limit
    last = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            last = await fetch()
        except Exception as exc:  # noqa: BLE001 - an error answer is one more state to wait past
            last = exc
        else:
            if accept(last):
                return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last answer: {last!r}")


async def _attached(editor, owner) -> dict:
    """An observer's session/info answered by the owner itself: its requests are relayed there."""
    return await _eventually(lambda: editor.req("turnback/session/info", {}),
                             lambda i: i["ownership"] == "owner"
                             and i["owner"]["pid"] == owner.process.pid,
                             f"{editor.flavour} to attach to pid {owner.process.pid}")


async def test_an_editor_that_loses_its_lease_attaches_to_the_new_owner(ws, servers):
    first = await servers(ws, "vscode")
    info = await _eventually(lambda: first.req("turnback/session/info", {}),
                             lambda i: i.get("socket"), "the first editor's socket")
    path = info["socket"]
    second = await servers(ws, "emacs")
    await _attached(second, first)
    # The takeover is the second editor's own business: never relayed to the owner it takes from.
    taken = await second.req("turnback/ownership/takeover", {"confirm": True})
    assert taken["status"] == "taken" and taken["previous"]["pid"] == first.process.pid
    # It serves as the owner at once: the socket's name is its own now.
    mine = await _eventually(lambda: second.req("turnback/session/info", {}),
                             lambda i: i.get("socket") == path, "the new owner's socket")
    assert mine["ownership"] == "owner" and mine["owner"]["pid"] == second.process.pid
    assert remote.call(ws, "turnback/session/info", {})["owner"]["pid"] == second.process.pid
    # The first editor hears it is an observer, and its requests reach the new owner, not itself.
    # (once attached, it hears the new owner's own status, which says "owner": it is relayed)
    await first.until(lambda: any(st["ownership"] == "observer" for st in first.status),
                      timeout=GATE, what="the first editor's observer status")
    relayed = await _attached(first, second)
    assert relayed["socket"] == path
    begun = await first.req("turnback/turn/begin", {"prompt": "from the first editor"})
    log = await second.req("turnback/session/log", {})
    assert [t["prompt"] for t in log["turns"]] == ["from the first editor"] and begun["turn"] == 1
    await first.req("turnback/turn/settle", {"turn": 1})


def _waits_at_the_commit_point(pid: int, store) -> bool:
    """Whether process `pid` is in the middle of a rewind (its intent is written) and waits for
    the lease's lock (it has the lock file open: it opens it only to take the lock, and polls a
    non-blocking flock with a budget, store/ownership/locks.py, so /proc/locks shows no waiter)."""
    from turnback.store import fs

    if not [p for p in (store / "txn").iterdir() if not fs.is_temp_name(p.name)]:
        return False
    lock = os.path.realpath(store / "lease.lock")
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == lock:
                return True
        except OSError:
            continue  # closed meanwhile
    return False


async def test_the_owner_killed_in_the_middle_of_a_relayed_request(ws, servers):
    """The owner is held at the commit point of a relayed rewind (it publishes inside the lease's
    flock, which this test holds; it waits for it up to 10 s), then SIGKILLed. The second editor takes the store over through
    the normal open (which rolls the interrupted commit back) and answers the request itself: the
    rewind is committed once, by the editor that now owns the store."""
    owner = await servers(ws, "vscode")
    info = await _eventually(lambda: owner.req("turnback/session/info", {}),
                             lambda i: i.get("socket"), "the owner's socket")
    second = await servers(ws, "emacs")
    await _attached(second, owner)
    n = (await second.req("turnback/turn/begin", {"prompt": "edit a"}))["turn"]
    (ws / "a.txt").write_text("two\n")
    await second.req("turnback/turn/capture", {"uris": [second.uri("a.txt")]})
    await second.req("turnback/turn/settle", {"turn": n})
    boundary = {"kind": "beforePrompt", "turn": n}
    cand = await second.req("turnback/rewind/prepare", {"boundary": boundary})
    fd = os.open(ws / ".turnback" / "lease.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        commit = asyncio.ensure_future(second.req("turnback/rewind/commit",
                                                  {"boundary": boundary, "planHash": cand["planHash"]},
                                                  timeout=120))
        # the owner gives the lock up after 10 s (lock-timeout): the kill comes well before
        await _eventually(lambda: asyncio.sleep(0, owner.process.pid),
                          lambda pid: _waits_at_the_commit_point(pid, ws / ".turnback"),
                          "the owner to wait at the commit point")
        owner.process.kill()
        await owner.process.wait()
    finally:
        os.close(fd)  # the lock goes with it
    done = await commit
    assert done["status"] == "committed", done
    assert (ws / "a.txt").read_text() == "one\n"
    mine = await second.req("turnback/session/info", {})
    assert mine["ownership"] == "owner" and mine["owner"]["pid"] == second.process.pid
    assert mine["turnCount"] == 0 and mine["recovery"] == 0
    assert fsck(ws / ".turnback").ok
