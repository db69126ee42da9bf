"""Helpers for the collection tests: sessions driven through the real workbench."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import turnback.collect  # noqa: F401  (registers the fsck body check)
from turnback.store.testing import faultplan
from turnback.store import journal as journal_mod
from turnback.store.objects.digest import is_digest
from turnback.store.fsck import fsck
from turnback.store.records import read_record, write_record
from turnback.timeline.codec import StateCodec
from turnback.timeline.staterefs import state_refs
from turnback.workbench import Options, Workbench

REPO = Path(__file__).resolve().parents[2]


def opts(**kw) -> Options:
    base = dict(grace_heads=0, grace_seconds=0.0, publish_interval=0.0)
    base.update(kw)
    return Options(**base)


def open_wb(root: Path, **kw) -> Workbench:
    return Workbench.open(root, opts(**kw))


def turn(wb: Workbench, root: Path, prompt: str, edits: list[tuple[str, str]], *, settle=True,
         result: str | None = None) -> int:
    """One turn: begin, write and capture each (path, text), a step, settle."""
    n = wb.run(wb.turns.begin_job({"prompt": prompt}))["turn"]
    for rel, text in edits:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        wb.turns.capture({"uris": [p.as_uri()]})
    wb.turns.step({"turn": n, "kind": "file-write", "scope": "host", "uris": [e[0] for e in edits],
                   **({"result": result} if result is not None else {})})
    wb.turns.respond({"turn": n, "text": f"answer {n}"})
    if settle:
        wb.run(wb.turns.settle_job({"turn": n}))
    return n


def rewind(wb: Workbench, before_prompt: int) -> dict:
    b = {"kind": "beforePrompt", "turn": before_prompt}
    c = wb.rewind.prepare({"boundary": b})
    return wb.rewind.commit({"boundary": b, "planHash": c["planHash"]})


def age_objects(store, seconds: float = 3600.0) -> None:
    """Make every existing object look old (the collector never sweeps objects newer than its scan)."""
    t = os.path.getmtime(store.path) - seconds
    for fan in store.objects.root.iterdir():
        if fan.is_dir():
            for f in fan.iterdir():
                os.utime(f, (t, t), follow_symlinks=False)


def objects(store) -> set[str]:
    return set(store.objects.list())


def digests_in(value, out: set) -> set:
    if isinstance(value, str):
        if is_digest(value):
            out.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            digests_in(k, out)
            digests_in(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            digests_in(v, out)
    return out


def body_closure(store, body: str) -> set[str]:
    doc = StateCodec(store.objects).read_body(body)
    return {body, *doc["refs"]}


def expected_live(store, state=None) -> set[str]:
    """Computed independently of the collector: what must exist after a collection."""
    live: set[str] = set()
    for seq in store.heads.list_seqs():
        live |= body_closure(store, store.heads.read(seq).body)
    if store.kind == "pid" and store.sidecar_path.exists():
        live |= body_closure(store, read_record(store.sidecar_path, "sidecar")["body"])
    for p in store.journal_dir.glob("*.wal"):
        for frame in journal_mod.scan(p).frames:
            digests_in(frame, live)
    for folder, kind in ((store.txn_dir, "intent"), (store.recovery_dir, "recovery")):
        for p in folder.glob("*.cbor"):
            rec = read_record(p, kind)
            digests_in(rec, live)
            if kind == "intent" and store.objects.has(rec["body"]):
                live |= body_closure(store, rec["body"])
    if state is not None:
        live |= state_refs(state)
    return live


def assert_sound(store_path: Path) -> None:
    """fsck is sound and every head (or the sidecar) reads back whole."""
    report = fsck(store_path)
    assert report.ok, report.errors
    from turnback.store.layout import Store

    store = Store.open(store_path, kind=None, create=False)
    codec = StateCodec(store.objects)
    bodies = [store.heads.read(s).body for s in store.heads.list_seqs()]
    if store.kind == "pid" and store.sidecar_path.exists():
        bodies.append(read_record(store.sidecar_path, "sidecar")["body"])
    for body in bodies:
        codec.read(body)  # the whole state decodes
        for ref in codec.read_body(body)["refs"]:
            assert store.objects.verify(ref), ref


def expire_lease(store_path: Path) -> None:
    """After a simulated crash the dead owner's lease would run out; make it so now."""
    p = Path(store_path) / "lease.cbor"
    if p.exists():
        rec = read_record(p, "lease")
        rec["expires"] = 0.0
        write_record(p, "lease", rec)


def run_py(code: str, *, env: dict | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    full_env.update(env or {})
    from pychild import run_python  # here: a child that imports this module has no tests/ on its path

    return run_python(textwrap.dedent(code), env=full_env, timeout=timeout, cwd=REPO)


@pytest.fixture
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("start\n")
    return root


@pytest.fixture
def fast_tmp(tmp_path):
    """A scratch folder on tmpfs when there is one (the fault loops pay thousands of fsyncs)."""
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        d = Path(tempfile.mkdtemp(prefix="tb-collect-", dir=shm))
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path


def build_template(root: Path, *, warm_cache: bool = True) -> Path:
    """A closed session with obsolete heads, a rewind, a stray object and a recovery record."""
    import time as _time

    from turnback.travel.transaction import RECOVERY_KIND

    ws = root / "template"
    ws.mkdir()
    (ws / "a.txt").write_text("start\n")
    wb = open_wb(ws)
    for i in range(3):
        turn(wb, ws, f"p{i}", [("a.txt", f"a{i}.1\n"), ("a.txt", f"a{i}.2\n"), (f"f{i}.txt", f"{i}\n")],
             result=f"result {i}")
    rewind(wb, 2)
    turn(wb, ws, "after rewind", [("a.txt", "new line\n")])
    wb.store.objects.put(b"a stray object")
    rescue = wb.store.objects.put(b"rescued by a recovery record")
    write_record(wb.store.recovery_dir / "r1.cbor", RECOVERY_KIND, {
        "id": "r1", "operation": "rewind", "created": _time.time(), "paths": ["a.txt"],
        "reason": "test", "backups": [{"rel": "a.txt", "digest": rescue}]})
    wb.close()
    age_objects(wb.store)
    if warm_cache:  # what an earlier scan would have left: the loops then skip the batch child
        from turnback.collect.cache import HeadCache
        from turnback.collect.scan import facts_of, observe_many

        cache = HeadCache.load(wb.store)
        for obs in observe_many(wb.store.path):
            cache.put(facts_of(obs))
        cache.save()
    return ws


def reference_run(ws: Path, scratch: Path):
    """One collection of a copy of `ws` (scratch/reference) with every file-system operation counted:
    (the fault plan that counted them, the run's statistics, the copy). What fault loops compare to."""
    ref = scratch / "reference"
    shutil.copytree(ws, ref, symlinks=True)
    wb = open_wb(ref)
    with faultplan.faults() as plan:
        stats = wb.collection.run()
    wb.close()
    return plan, stats, ref


def snapshot(store_path: Path) -> tuple:
    from turnback.store.layout import Store

    store = Store.open(store_path, kind=None, create=False)
    return tuple(store.heads.list_seqs()), frozenset(store.objects.list())


def finish_and_compare(ws: Path, expected: tuple) -> None:
    """After an interrupted collection: the store is sound, nothing the finished collection kept is
    lost, and the next full run ends exactly where an uninterrupted one did."""
    store_path = ws / ".turnback"
    assert_sound(store_path)
    before = snapshot(store_path)
    assert set(expected[0]) <= set(before[0]) and expected[1] <= before[1]
    wb = open_wb(ws)
    wb.collection.run()
    wb.close()
    assert snapshot(store_path) == expected  # the next run completes the half-done one
    assert_sound(store_path)
