"""`turnback gc --dry-run` prints the collection's plan (collect/plan.py) and changes nothing: run in
this process, and through a live owner (`turnback/collect/run` with `dryRun`). What it says would go
is what the real `turnback gc` then removes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from turnback.store.layout import Store

from cli_helpers import cli, turnback_exe, ws  # noqa: F401  (fixtures)


def _session(cli, ws: Path) -> None:
    (ws / "a.txt").write_text("a0\n")
    for n in range(1, 4):
        cli.ok("turn", "begin", "--prompt", f"turn {n}")
        cli.ok("turn", "capture", "--phase", "before", "a.txt")
        (ws / "a.txt").write_text(f"a{n}\n")
        cli.ok("turn", "capture", "a.txt")
        cli.ok("turn", "settle")


def _orphan_and_age(store_path: Path) -> tuple[Store, str]:
    """An object nothing names (a crash's leftover), and every object old enough to go."""
    store = Store.open(store_path, kind=None, create=False)
    orphan = store.objects.put(b"written by a process that died before it published\n" * 40)
    old = os.path.getmtime(store.path) - 3600  # the collector keeps objects newer than its scan
    for fan in store.objects.root.iterdir():
        for f in fan.iterdir() if fan.is_dir() else ():
            os.utime(f, (old, old), follow_symlinks=False)
    return store, orphan


def _disk(store: Store) -> tuple[set[str], list[int], set[str]]:
    packs = {p.name for p in store.objects.packs.folder.iterdir()} \
        if store.objects.packs.folder.is_dir() else set()
    return set(store.objects.list()), store.heads.list_seqs(), packs


def test_dry_run_shows_the_plan_and_changes_nothing_then_gc_does_what_it_said(cli, ws):
    _session(cli, ws)
    store, orphan = _orphan_and_age(ws / ".turnback")
    size = store.objects.path(orphan).stat().st_size
    before = _disk(store)
    plan = cli.json("gc", "--dry-run")
    assert plan["dryRun"] is True and plan["skipped"] == []
    assert plan["objectsDeleted"] == 1 and plan["bytesFreed"] == size
    assert plan["headsKept"] >= 1 and plan["objectsReached"] > 0 and plan["objectsKept"] > 0
    text = cli.ok("gc", "--dry-run")
    assert text.startswith("would free ") and "1 unreferenced loose object(s)" in text
    assert "would keep " in text and "(dry run: nothing was changed)" in text
    assert _disk(store) == before and store.objects.has(orphan)  # nothing removed, nothing packed
    done = cli.json("gc")
    assert not store.objects.has(orphan)
    assert (done["bytesFreed"], done["headsRetired"]) == (plan["bytesFreed"], plan["headsRetired"])


def _turnback(ws: Path, *args: str, start: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TURNBACK_START_OWNER", "TURNBACK_DIRECT")}
    if start:
        env["TURNBACK_START_OWNER"] = "1"
    return subprocess.run([*turnback_exe(), "--workspace", str(ws), *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_dry_run_goes_through_a_live_owner(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    try:
        assert _turnback(ws, "turn", "begin", "--prompt", "first", start=True).returncode == 0
        (ws / "a.txt").write_text("two\n")
        assert _turnback(ws, "turn", "settle", start=True).returncode == 0
        status = json.loads(_turnback(ws, "--json", "daemon", "status").stdout)
        assert status.get("running") is True, status  # the owner holds the store: gc must ask it
        store, orphan = _orphan_and_age(ws / ".turnback")
        before = _disk(store)
        ran = _turnback(ws, "--json", "gc", "--dry-run")
        assert ran.returncode == 0, ran.stderr
        plan = json.loads(ran.stdout)
        assert plan["dryRun"] is True and plan["objectsDeleted"] >= 1
        assert _disk(store) == before and store.objects.has(orphan)
        text = _turnback(ws, "gc", "--dry-run")
        assert text.returncode == 0 and "would free" in text.stdout, text.stderr
    finally:
        _turnback(ws, "daemon", "stop")
