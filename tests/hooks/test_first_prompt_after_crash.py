"""The first hook after a crash (issue 21, item 6, the hook side): an owner killed in the middle of a
multi-file rewind leaves an intent and a dead lease; the next prompt's hook waits for the owner it
starts to recover, or keeps the event in the spool while that owner cannot answer, and either way
the prompt becomes a turn whose pre-turn checkpoint is the recovered workspace."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from hookkit import TURNBACK, spooled, tb
from sessionkit import REWIND_CHILD, Agent, run_child

from turnback.remote import client
from turnback.store import fs
from turnback.store.testing import faultplan

FILES = ["a.txt", "b.txt"] + [f"gen/{i:02}.txt" for i in range(12)]


def _tree(root) -> dict:
    return {rel: (root / rel).read_text() if (root / rel).exists() else None for rel in FILES}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Two turns (the second changes every file), and the number of the file-system operation in
    the middle of the rewind's file writes (to before turn 2), found by name in a dry run."""
    base = tmp_path_factory.mktemp("pristine")
    root = base / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    agent = Agent(root)
    agent.turn("first", {"a.txt": "one\n"})
    agent.turn("second", {rel: f"new {rel}\n" for rel in FILES})
    agent.close()
    probe = base / "probe"
    shutil.copytree(root, probe, symlinks=True)
    code = REWIND_CHILD.replace("import sys\n", "import sys\nfrom turnback.store import fs\nfrom turnback.store.testing import faultplan\n") \
        .replace("wb = Workbench.open", "plan = fs.install_from_env({'TURNBACK_FAIL_AT': '1000000'})\nwb = Workbench.open")
    code += "\nprint('\\n'.join(plan.log))\n"
    proc = run_child(code, probe, "heads")
    assert proc.returncode == 0, proc.stderr
    ops = proc.stdout.splitlines()
    writes = [i for i, op in enumerate(ops, 1) if op.split(" ", 1)[0] in ("rename", "unlink")
              and str(probe) in op and "/.turnback/" not in op and op.split(" ")[-1] != str(probe)]
    assert len(writes) == len(FILES), ops  # a.txt put back, every file turn 2 made deleted
    return root, writes[len(writes) // 2]


def crashed(tmp_path, pristine):
    """A copy of the workspace whose owner died in the middle of the rewind's file writes."""
    source, crash_at = pristine
    root = tmp_path / "ws"
    shutil.copytree(source, root, symlinks=True)
    old = _tree(root)
    proc = run_child(REWIND_CHILD, root, "heads", crash_at=crash_at)
    assert proc.returncode == faultplan.CRASH_EXIT, proc.stderr
    mixed = _tree(root)
    assert mixed != old and any(v == old[k] for k, v in mixed.items() if k != "a.txt"), \
        "the crash was not in the middle of the file writes"
    assert [p for p in (root / ".turnback" / "txn").iterdir() if not fs.is_temp_name(p.name)]
    return root, old


def prompt(root, text) -> bytes:
    return json.dumps({"session_id": "s", "transcript_path": None, "cwd": str(root),
                       "hook_event_name": "UserPromptSubmit", "prompt": text}).encode()


def run_hook(root, body, env=None):
    return subprocess.run(TURNBACK + ["hook", "claude-code"], input=body, capture_output=True,
                          cwd=root, env={**os.environ, **(env or {})}, timeout=120)


def until_recorded(root, text, seconds=90.0) -> dict:
    """Gate: the owner's log once a turn with this prompt is in it."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            log = client.call(str(root), "turnback/session/log", {}, timeout=30)
            if any(t.get("prompt") == text for t in log["turns"]):
                return log
        except (client.NoOwner, client.RemoteError):
            pass
        assert time.monotonic() < deadline, f"{text!r} was never recorded"
        time.sleep(0.05)


def until_replayed(root, seconds=60.0) -> None:
    """Gate: the spool is empty. A replay records its events and then removes what it replayed, so
    the turn can be in the log a moment before the spool is gone."""
    deadline = time.monotonic() + seconds
    while spooled(root):
        assert time.monotonic() < deadline, f"the spool was never replayed whole: {spooled(root)}"
        time.sleep(0.02)


def checkpoint_is_the_recovered_tree(root, old, log, text) -> None:
    info = client.call(str(root), "turnback/session/info", {})
    assert info["recovery"] == 0
    assert not [p for p in (root / ".turnback" / "txn").iterdir() if not fs.is_temp_name(p.name)]
    recovered = _tree(root)
    new = {**{rel: None for rel in FILES}, "a.txt": "one\n"}  # the files before turn 2
    assert recovered in (old, new), recovered  # rolled back or forward, never a mix
    n = next(t["turn"] for t in log["turns"] if t["prompt"] == text)
    assert log["turns"][-1]["turn"] == n and log["turns"][-1]["state"] == "running"
    # The agent now changes a file; a rewind to before this prompt gives back the recovered tree.
    rel = "gen/05.txt"
    uri = (root / rel).as_uri()
    client.call(str(root), "turnback/turn/capture", {"uris": [uri], "phase": "before"})
    (root / rel).parent.mkdir(exist_ok=True)
    (root / rel).write_text("written by the agent after the crash\n")
    client.call(str(root), "turnback/turn/capture", {"uris": [uri], "phase": "after"})
    client.call(str(root), "turnback/turn/settle", {"turn": n, "status": "settled"})
    boundary = {"kind": "beforePrompt", "turn": n}
    cand = client.call(str(root), "turnback/rewind/prepare", {"boundary": boundary})
    assert [f["path"] for f in cand["files"]] == [rel], cand["files"]
    done = client.call(str(root), "turnback/rewind/commit",
                       {"boundary": boundary, "planHash": cand["planHash"]})
    assert done["status"] == "committed"
    assert _tree(root) == recovered


def pending_intent(root) -> str:
    [name] = [p.name for p in (root / ".turnback" / "txn").iterdir() if not fs.is_temp_name(p.name)]
    return name.split(".")[0]


def said_what_it_recovered(root, txn: str) -> None:
    """The owner the hook started recovered the rewind; nobody was attached to hear
    `turnback/recovered`, so its log and `turnback info` say what it rolled back or finished."""
    sentence = f"An interrupted rewind ({txn[:12]}) was "
    daemon_log = (root / ".turnback" / "run" / "daemon.log").read_text()
    assert f"recovered at open: {sentence}" in daemon_log, daemon_log[-2000:]
    info = tb(root, "info").stdout
    assert f"recovered:  {sentence}" in info and "when this owner opened the store" in info, info


def test_the_first_prompt_after_a_crash_waits_for_recovery(tmp_path, pristine):
    root, old = crashed(tmp_path, pristine)
    txn = pending_intent(root)
    try:
        proc = run_hook(root, prompt(root, "after the crash"))
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
        log = until_recorded(root, "after the crash")
        said_what_it_recovered(root, txn)
        checkpoint_is_the_recovered_tree(root, old, log, "after the crash")
    finally:
        tb(root, "daemon", "stop", check=False)


def test_the_first_prompt_never_races_the_owner_it_started_for_the_store(tmp_path, pristine):
    """The owner the hook started is still starting when the hook's wait ends (a budget of 0 s:
    under load a start and the recovery of a big rewind take longer than 5 s), and the dead owner's
    lease is still in the store. The hook must not open the store itself: that would race the owner
    it started for the lease and, winning, roll the rewind back in the agent's way. It keeps the
    event in the spool, and the owner it started recovers and records it."""
    root, old = crashed(tmp_path, pristine)
    txn = pending_intent(root)
    try:
        proc = run_hook(root, prompt(root, "before the owner answers"),
                        env={"TURNBACK_HOOK_START_SECONDS": "0"})
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
        hooks = (root / ".turnback" / "agents" / "hook.log").read_text()
        assert "using the direct path" not in hooks, hooks
        assert "UserPromptSubmit: kept in the spool" in hooks, hooks
        log = until_recorded(root, "before the owner answers")  # the started owner replays it
        until_replayed(root)
        said_what_it_recovered(root, txn)
        checkpoint_is_the_recovered_tree(root, old, log, "before the owner answers")
    finally:
        tb(root, "daemon", "stop", check=False)


def test_the_first_prompt_is_kept_while_the_recovering_owner_cannot_answer(tmp_path, pristine):
    root, old = crashed(tmp_path, pristine)
    store = root / ".turnback"
    owner = subprocess.Popen([sys.executable, "-m", "turnback.lsp.daemon", "--workspace", str(root),
                              "--store", str(store), "--idle", "60"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _until_it_holds_the_lease(store, owner)
        os.kill(owner.pid, signal.SIGSTOP)  # recovering (or just done): it answers nothing now
        try:
            proc = run_hook(root, prompt(root, "while it recovers"),
                            env={"TURNBACK_HOOK_START_SECONDS": "1"})
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
            assert [k["sent"] for k in spooled(root)] == [False]
        finally:
            os.kill(owner.pid, signal.SIGCONT)
        log = until_recorded(root, "while it recovers")  # it replays the spool once it serves
        until_replayed(root)
        checkpoint_is_the_recovered_tree(root, old, log, "while it recovers")
    finally:
        tb(root, "daemon", "stop", check=False)
        owner.wait(timeout=60)


def _until_it_holds_the_lease(store, owner, seconds=60.0) -> None:
    from turnback.store.ownership.owners import who_owns

    deadline = time.monotonic() + seconds
    while (who_owns(store, "heads") or {}).get("pid") != owner.pid:
        assert owner.poll() is None, "the owner exited"
        assert time.monotonic() < deadline, "the owner never took the lease"
        time.sleep(0.005)
