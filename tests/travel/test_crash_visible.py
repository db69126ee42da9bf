"""Crashes visible (issue 25 item 6, issue 21 item 6): after a SIGKILL in the middle of a rewind or a
fork, read-only commands tell the truth (`info`: a dead owner as dead and the pending intent;
`recovery`: the intent; `fsck`: sound, with the intent noted), and the command that recovers says
what it rolled back or finished, on the command line and as `turnback/recovered` to the clients."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from sessionkit import Agent
from travelkit import as_json, child, tree, turnback

from turnback.bench.lspclient import LspClient

N = 120  # files the interrupted rewind writes (the bench measures 3,000: recovery-rollback)

KILLED = """
import os, signal, sys
from turnback.workbench import Workbench, Options
wb = Workbench.open(sys.argv[1], Options(store_kind=sys.argv[2]))
if sys.argv[3] == "rewind":
    b = {"kind": "beforePrompt", "turn": 2}
    job = wb.rewind.commit_job({"boundary": b, "planHash": wb.rewind.prepare({"boundary": b})["planHash"]})
else:
    job = wb.fork.confirm_job({"turn": 1, "hash": wb.fork.prepare({"turn": 1})["hash"]})
applied = 0
for value in job:
    applied += bool(getattr(value, "binding", False))
    if applied == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)  # the owner dies in the middle of writing the files
raise SystemExit("the job ended before the kill")
"""


def _build(root, kind):
    a = Agent(root, store_kind=kind)
    a.turn("one", {f"f/{i:03}.txt": f"one {i}" for i in range(N)})
    a.turn("two", {f"f/{i:03}.txt": f"two {i}" for i in range(N)})
    a.close()


def _killed(tmp_path, kind, what):
    root = tmp_path / "ws"
    root.mkdir()
    _build(root, kind)
    before = tree(root)
    proc = child(KILLED, root, kind, what, N // 2)
    assert proc.returncode == -9, proc.stderr
    assert tree(root) != before  # half written
    return root, before


@pytest.mark.parametrize("kind,what", [("heads", "rewind"), ("pid", "rewind"), ("heads", "fork")])
def test_after_a_sigkill_read_only_commands_tell_the_truth(tmp_path, kind, what):
    root, before = _killed(tmp_path, kind, what)
    info = as_json(root, "info")
    assert info["owner"]["state"] == "dead" and info["owner"]["alive"] is False
    assert info["ownership"] == "observer"
    [pending] = info["pending"]
    assert pending["operation"] == what and pending["state"] == "interrupted"
    text = turnback(root, "info")[1]
    assert "no longer running" in text and "store owned by pid" not in text
    assert f"pending:    {what}" in text
    listed = as_json(root, "recovery")
    assert [p["id"] for p in listed["pending"]] == [pending["id"]] and listed["recovery"] == []
    rc, out, _err = turnback(root, "fsck")
    assert rc == 0 and "sound, with 1 interrupted transaction(s) pending" in out
    assert [p["id"] for p in as_json(root, "fsck")["pending"]] == [pending["id"]]
    assert tree(root) != before  # nothing above wrote or recovered anything
    # The command that takes the store recovers, and says so (stderr: --json stays one document).
    rc, _out, err = turnback(root, "--json", "gc")
    assert rc == 0
    assert f"recovered: An interrupted {what} ({pending['id'][:12]}) was rolled back" in err
    assert tree(root) == before
    info = as_json(root, "info")
    assert info["pending"] == [] and info["owner"]["state"] in ("none", "dead")
    assert as_json(root, "fsck")["pending"] == []


async def test_the_server_that_recovers_tells_its_clients(tmp_path):
    root, before = _killed(tmp_path, "heads", "rewind")
    client = await LspClient.start([sys.executable, "-m", "turnback.lsp"], cwd=str(root))
    try:
        await client.initialize(root.as_uri())
        info = await client.request("turnback/session/info", {})
    finally:
        await client.shutdown()
    notes = [p for _t, m, p in client.notifications if m == "turnback/recovered"]
    assert len(notes) == 1, [m for _t, m, _p in client.notifications]
    [line] = notes[0]["transactions"]
    assert line["operation"] == "rewind" and line["action"] == "rolled-back" and line["files"] == N
    assert "rolled back" in notes[0]["message"]
    assert info["opened"]["recovered"][0]["action"] == "rolled-back" and info["pending"] == []
    assert tree(root) == before
    json.dumps(notes)  # a plain JSON document
    shutil.rmtree(root)


def test_a_transaction_under_way_is_in_progress_not_interrupted(agent):
    """Between two slices of its own commit, the owner calls its intent what it is."""
    a = agent()
    a.turn("one", {"a.txt": "1", "b.txt": "1"})
    a.turn("two", {"a.txt": "2", "b.txt": "2"})
    b = {"kind": "beforePrompt", "turn": 2}
    job = a.wb.rewind.commit_job({"boundary": b,
                                  "planHash": a.wb.rewind.prepare({"boundary": b})["planHash"]})
    states = set()
    for value in job:
        if getattr(value, "binding", False):
            states |= {p["state"] for p in a.wb.info()["pending"]}
    assert states == {"in-progress"} and a.wb.info()["pending"] == []
