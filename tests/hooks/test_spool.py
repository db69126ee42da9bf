"""The hook spool (agents/spool.py) and its replay (hooks/drain.py) under faults: an append is whole or
absent at every failed operation, on a full disk and at every power cut; a replay failed at any
operation records every event exactly once after it is run again; a replay killed at any operation
(a power cut) never records an event twice, and the one event it may have cut short is named in the
hook log."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pychild import run_python
from sessionkit import assert_faulted

from turnback.hooks import drain as drain_mod
from turnback.hooks.runtime import handle
from turnback.store.testing import faultplan
from turnback.agents import spool


def replay(root, store, make_port, log, **kw):
    """The spool's replay as the hook runs it: each frame through the live event's mapping."""
    return drain_mod.drain(root, store, make_port, log, handle=handle, **kw)


EVENTS = ["e0", "e1", "e2"]


def record(i: int, root: Path) -> dict:
    body = json.dumps({"session_id": "s", "transcript_path": None, "cwd": str(root),
                       "hook_event_name": "UserPromptSubmit", "prompt": EVENTS[i]}).encode()
    return spool.record_of(f"id{i}", "claude-code", None, str(root), body, i % 2 == 0, "test")


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / ".turnback" / "agents").mkdir(parents=True, mode=0o700)
    os.chmod(root / ".turnback", 0o700)
    (root / "turnback.toml").write_text("")
    return root


def frames(root) -> list[str]:
    out = []
    for path in (spool.replaying_path(root / ".turnback"), spool.spool_path(root / ".turnback")):
        if os.path.lexists(path):
            out += [f.record["id"] for f in spool.read(path).frames]
    return out


def test_frames_come_back_in_order_and_a_torn_or_damaged_one_ends_the_read(ws):
    store = ws / ".turnback"
    for i in range(3):
        spool.append(store, record(i, ws))
    path = spool.spool_path(store)
    assert os.stat(path).st_mode & 0o777 == 0o600
    taken = spool.read(path)
    assert [f.record["id"] for f in taken.frames] == ["id0", "id1", "id2"] and taken.torn is None
    assert spool.body_of(taken.frames[1].record) == json.dumps(json.loads(
        spool.body_of(record(1, ws)))).encode()
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-5])  # a torn last append
    torn = spool.read(path)
    assert [f.record["id"] for f in torn.frames] == ["id0", "id1"] and "offset" in torn.torn
    damaged = bytearray(data)
    damaged[taken.frames[1].offset + 12] ^= 0xFF  # a bit flipped in the second frame's payload
    Path(path).write_bytes(bytes(damaged))
    assert [f.record["id"] for f in spool.read(path).frames] == ["id0"]
    with pytest.raises(ValueError):
        spool.frame_bytes({"x": "y" * (spool.MAX_FRAME + 1)})


def test_a_damaged_spool_is_kept_as_evidence_and_the_replay_goes_on(ws, monkeypatch):
    import turnback.hooks.mapper as mapper

    monkeypatch.setattr(mapper, "Mapper", stand_ins()["TwoPartMapper"])
    _spool_three(ws)
    path = Path(spool.spool_path(ws / ".turnback"))
    path.write_bytes(path.read_bytes()[:-3])  # the last append torn
    calls: list = []
    lines: list = []
    replay(ws, ws / ".turnback", lambda c, r: ListPort(calls), lines.append)
    assert [c[1] for c in calls] == ["e0", "e0", "e1", "e1"]
    kept = [p for p in path.parent.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1 and not path.exists() and frames(ws) == []
    assert any("torn or damaged" in line for line in lines)
    assert any(kept[0].name in line for line in lines)
    (ws / ".turnback" / "agents" / "spool").write_bytes(b"not a spool at all")
    replay(ws, ws / ".turnback", lambda c, r: ListPort(calls), lines.append)
    assert len([p for p in path.parent.iterdir() if ".damaged-" in p.name]) == 2
    assert len(calls) == 4


def _fault_loop(ws, existing: bool, **plan) -> tuple[int, int]:
    """Append an event (after event 0 when `existing`, else to no spool at all) with the Nth
    operation failing, for every N; after each, the spool holds what it held and the new event
    whole or not at all, and a later append still works."""
    store = ws / ".turnback"
    pristine = ws.parent / "pristine"
    before = []
    if existing:
        spool.append(store, record(0, ws))
        before = ["id0"]
    shutil.copytree(ws, pristine)
    tried = faulted = 0
    n = 0
    while True:
        n += 1
        shutil.rmtree(ws)
        shutil.copytree(pristine, ws)
        with faultplan.faults(**{k: (n if v is None else v) for k, v in plan.items()}) as fp:
            try:
                spool.append(store, record(1, ws))
            except OSError:
                pass
        if not fp.faulted:
            assert frames(ws) == before + ["id1"]
            break
        tried += 1
        faulted += 1
        assert frames(ws) in (before, before + ["id1"]), (n, fp.log)
        spool.append(store, record(2, ws))  # the device is back
        assert frames(ws)[-1] == "id2" and frames(ws)[:len(before)] == before
    return tried, faulted


@pytest.mark.parametrize("existing", [False, True], ids=["new-spool", "existing-spool"])
@pytest.mark.parametrize("plan", [{"fail_at": None}, {"fail_at": None, "sticky": True},
                                  {"disk_full_at": None}], ids=["fail", "sticky", "full-disk"])
def test_an_append_is_whole_or_absent_at_every_failed_operation(ws, plan, existing):
    tried, faulted = _fault_loop(ws, existing, **plan)
    assert tried >= 3, tried
    assert_faulted(faulted, tried, f"a spool append ({plan}, existing={existing})")


APPEND_CHILD = """
import json, sys
from pathlib import Path
from turnback.agents import spool
root = Path(sys.argv[1])
body = json.dumps({"cwd": str(root), "hook_event_name": "UserPromptSubmit", "prompt": "e1",
                   "session_id": "s"}).encode()
spool.append(root / ".turnback", spool.record_of("id1", "claude-code", None, str(root), body,
                                                  False, "test"))
"""


def run_child(code: str, *args, crash_at: int | None = None, model: str | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    if crash_at is not None:
        env["TURNBACK_CRASH_AT"] = str(crash_at)
    if model:
        env["TURNBACK_CRASH_MODEL"] = model
    return run_python(code, *args, env=env, timeout=120)


@pytest.mark.parametrize("existing", [False, True], ids=["new-spool", "existing-spool"])
def test_an_append_survives_a_power_cut_at_every_operation(ws, existing):
    before = []
    if existing:
        spool.append(ws / ".turnback", record(0, ws))
        before = ["id0"]
    pristine = ws.parent / "pristine"
    shutil.copytree(ws, pristine)
    n = crashed = 0
    while True:
        n += 1
        shutil.rmtree(ws)
        shutil.copytree(pristine, ws)
        proc = run_child(APPEND_CHILD, ws, crash_at=n, model="lose-unsynced")
        if proc.returncode == 0:
            assert frames(ws) == before + ["id1"]
            break
        assert proc.returncode == faultplan.CRASH_EXIT, proc.stderr
        crashed += 1
        assert frames(ws) in (before, before + ["id1"]), n
    assert crashed >= 3 and crashed >= 0.8 * (n - 1)


class ListPort:
    """A session that keeps what it was told in memory (faults can only hit the spool's side)."""

    name = "list"

    def __init__(self, calls: list):
        self.calls = calls

    def call(self, method, params):
        self.calls.append((method, params.get("prompt"), params.get("part")))
        return {}

    def close(self):
        pass


def _spool_three(ws):
    for i in range(3):
        spool.append(ws / ".turnback", record(i, ws))


def test_a_replay_failed_at_any_operation_records_each_event_once_when_run_again(ws, monkeypatch):
    import turnback.hooks.mapper as mapper

    monkeypatch.setattr(mapper, "Mapper", stand_ins()["TwoPartMapper"])
    _spool_three(ws)
    pristine = ws.parent / "pristine"
    shutil.copytree(ws, pristine)
    want = [("record", e, part) for e in EVENTS for part in (1, 2)]
    n = faulted = 0
    while True:
        n += 1
        shutil.rmtree(ws)
        shutil.copytree(pristine, ws)
        calls: list = []
        with faultplan.faults(fail_at=n) as fp:
            try:
                replay(ws, ws / ".turnback", lambda c, r: ListPort(calls), lambda _: None)
            except OSError:
                pass
        if not fp.faulted:
            assert calls == want and frames(ws) == []
            break
        faulted += 1
        replay(ws, ws / ".turnback", lambda c, r: ListPort(calls), lambda _: None)
        assert calls == want, (n, fp.log[-3:], calls)  # in order, each once
        assert frames(ws) == [], n
    assert faulted >= 6 and faulted >= 0.8 * (n - 1)


FILE_PORT = """
import json, os
from turnback.store import fs
from turnback.store.testing import faultplan

class FilePort:
    # a session whose every call is durable when it returns (as a synced journal frame is)
    name = "file"
    def __init__(self, root):
        self.log = root / "session.log"
    def call(self, method, params):
        new = not self.log.exists()
        fd = fs.open_for_append(self.log)
        try:
            fs.append(fd, (json.dumps([params["prompt"], params["part"]]) + "\\n").encode())
            fs.fsync(fd)
        finally:
            os.close(fd)
        if new:
            fs.fsync_dir(self.log.parent)
        return {}
    def close(self):
        pass

class TwoPartMapper:
    # stands in for the real mapper: an event is two calls, so a cut between them shows
    def __init__(self, ev, port, data, config, log):
        self.ev, self.port = ev, port
    def run(self):
        for part in (1, 2):
            self.port.call("record", {"prompt": self.ev.prompt, "part": part})
"""

REPLAY_CHILD = FILE_PORT + """
import sys
from pathlib import Path
import turnback.hooks.mapper as mapper
from turnback.hooks import drain
from turnback.hooks.runtime import handle
from turnback.agents.agentrecord import AgentRecord

root = Path(sys.argv[1])
mapper.Mapper = TwoPartMapper
drain.drain(root, root / ".turnback", lambda c, r: FilePort(root),
            AgentRecord(root / ".turnback").log, handle=handle)
"""


def stand_ins() -> dict:
    """The child's own stand-ins (FilePort, TwoPartMapper), for this process."""
    names: dict = {}
    exec(FILE_PORT, names)  # noqa: S102 - one definition for the child and the tests
    return names


def replay_here(ws, monkeypatch) -> None:
    """The next owner's replay, in this process, with the same stand-ins as the child's."""
    import turnback.hooks.mapper as mapper
    from turnback.agents.agentrecord import AgentRecord

    names = stand_ins()
    monkeypatch.setattr(mapper, "Mapper", names["TwoPartMapper"])
    replay(ws, ws / ".turnback", lambda c, r: names["FilePort"](ws),
                    AgentRecord(ws / ".turnback").log)


def _session(ws) -> list:
    try:
        lines = (ws / "session.log").read_text().splitlines()
    except FileNotFoundError:
        return []
    return [tuple(json.loads(line)) for line in lines if line.strip()]


def test_a_replay_cut_at_every_power_cut_never_records_an_event_twice(ws, monkeypatch):
    _spool_three(ws)
    pristine = ws.parent / "pristine"
    shutil.copytree(ws, pristine)
    n = crashed = cut_short = 0
    while True:
        n += 1
        shutil.rmtree(ws)
        shutil.copytree(pristine, ws)
        proc = run_child(REPLAY_CHILD, ws, crash_at=n, model="lose-unsynced")
        if proc.returncode == 0:
            assert _session(ws) == [(e, p) for e in EVENTS for p in (1, 2)]
            break
        assert proc.returncode == faultplan.CRASH_EXIT, proc.stderr
        crashed += 1
        replay_here(ws, monkeypatch)  # the next owner
        got = _session(ws)
        for e in EVENTS:
            parts = [p for name, p in got if name == e]
            assert parts in ([1, 2], [1], []), (n, got)  # never twice, never out of order
        whole = [e for e in EVENTS if [p for name, p in got if name == e] == [1, 2]]
        if len(whole) < len(EVENTS):
            cut_short += 1
            assert len(whole) == len(EVENTS) - 1, (n, got)  # only the one in flight
            log = (ws / ".turnback" / "agents" / "hook.log").read_text()
            assert "cut short" in log, (n, got)
        assert [name for name, p in got if p == 1] == [e for e in EVENTS if e in
                                                        {name for name, _ in got}]
        assert frames(ws) == [], n
    assert crashed >= 10 and crashed >= 0.8 * (n - 1), (crashed, n)
    assert cut_short, "no crash fell inside a mapping: the cut-short path was never tried"
