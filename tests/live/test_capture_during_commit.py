"""Requests that arrive while a rewind commits (issue 21, item 7): a hook's capture waits for the
commit and never runs between its slices; a begin whose client goes away while it waits is
cancelled and never applied. The gates are the disk (the first restored file seen, hundreds still
to write) and the owner's own accounting (the waiting begin's bytes held in its budget, then given
back); nothing here waits a while and accepts either outcome."""

from __future__ import annotations

import json
import time

from sessionkit import Agent

from .sockclient import SocketClient
from .test_daemon import root, tb  # noqa: F401 - root is a fixture
from .test_lease_loss import GATE

N = 800
BOUNDARY = {"kind": "beforePrompt", "turn": 2}
PROMPT = 20_000  # bytes: the waiting begin's share of the owner's byte budget is unmistakable


def _restored_somewhere(root) -> bool:
    for i in range(N):
        try:
            if (root / "f" / f"{i:04}.txt").read_text() == f"one {i}":
                return True
        except OSError:
            continue
    return False


def test_requests_during_a_commit_wait_for_it_or_are_cancelled(root):  # noqa: F811
    a = Agent(root)
    for word in ("one", "two"):  # written as a shell would, found by the settle's sweep
        a.begin(word)
        for i in range(N):
            a.write(f"f/{i:04}.txt", f"{word} {i}", capture=False)
        a.settle()
    a.close()
    started = json.loads(tb(root, "--json", "serve", "--background", "--idle-exit", "120").stdout)
    committer = SocketClient(started["socket"], timeout=GATE * 4)
    hook = SocketClient(started["socket"], timeout=GATE * 4)
    try:
        cand = committer.result("turnback/rewind/prepare", {"boundary": BOUNDARY})
        target = {f["uri"].rsplit("/f/", 1)[-1]: f["to"] for f in cand["files"]}
        assert len(target) == N
        committer.send({"jsonrpc": "2.0", "id": 50, "method": "turnback/rewind/commit",
                        "params": {"boundary": BOUNDARY, "planHash": cand["planHash"]}})
        deadline = time.monotonic() + GATE
        while not _restored_somewhere(root):  # the gate: the commit is writing files
            assert time.monotonic() < deadline, "the commit never wrote a file"
        assert (root / "f" / f"{N - 1:04}.txt").read_text() == f"two {N - 1}"  # still to come
        # a client asks for a turn, and goes away while its request waits for the commit
        leaver = SocketClient(started["socket"], timeout=GATE)
        leaver.send({"jsonrpc": "2.0", "id": 1, "method": "turnback/turn/begin",
                     "params": {"prompt": "abandoned " + "x" * PROMPT}})
        _until_buffered(hook, lambda held: held >= PROMPT, "the begin to wait for the lock")
        leaver.close()
        _until_buffered(hook, lambda held: held < PROMPT, "the abandoned begin to be cancelled")
        assert (root / "f" / f"{N - 1:04}.txt").read_text() == f"two {N - 1}"  # still committing
        uris = [(root / "f" / name).as_uri() for name in ("0000.txt", f"{N - 1:04}.txt")]
        captured = hook.result("turnback/turn/capture", {"uris": uris})
        done = committer.reply(50)
        after = hook.result("turnback/turn/begin", {"prompt": "next"})
    finally:
        committer.close()
        hook.close()
    assert done["result"]["status"] == "committed", done
    # the capture ran after the commit: it saw what the commit wrote, last file included
    seen = {c["uri"].rsplit("/f/", 1)[-1]: c["digest"] for c in captured["captured"]}
    assert seen == {"0000.txt": target["0000.txt"], f"{N - 1:04}.txt": target[f"{N - 1:04}.txt"]}
    # and its client heard the commit's epoch before the capture's answer
    assert "turnback/epoch" in [n.get("method") for n in hook.notifications]
    assert all((root / "f" / f"{i:04}.txt").read_text() == f"one {i}" for i in range(N))
    log = json.loads(tb(root, "--json", "log").stdout)
    assert [t["prompt"] for t in log["turns"]] == ["one", "next"] and after["turn"] == 2
    tb(root, "turn", "settle")
    tb(root, "daemon", "stop")
    assert tb(root, "fsck").returncode == 0


def _until_buffered(c: SocketClient, ok, what: str) -> None:
    """Ask the owner (a read: answered between the commit's slices) until the request bytes it
    holds satisfy `ok`."""
    deadline = time.monotonic() + GATE
    while not ok(c.result("turnback/session/info", {})["sockets"]["buffered"]):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
