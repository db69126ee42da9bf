"""Shared set-ups for the transaction fault tests: a small session, and ways to interrupt a rewind."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sessionkit import REWIND_CHILD, Agent, run_child
from travelkit import tree

from turnback.store import fs

BOUNDARY = {"kind": "beforePrompt", "turn": 2}


def three_files(a: Agent) -> None:
    """Turn 1 writes a, b, c (and finds the empty folder keep/); turn 2 rewrites them, adds
    new/deep/d, removes keep/ and makes c.txt executable: a rewind to before prompt 2 rewrites
    three files (c's bits too), deletes one, removes two folders and makes keep/ again (a rollback
    the other way round). The crash loops compare whole trees: bytes, modes and empty folders."""
    (a.root / "keep").mkdir(exist_ok=True)
    a.turn("one", {"a.txt": "a1", "b.txt": "b1", "c.txt": "c1"})
    a.begin("two")
    for rel, data in {"a.txt": "a2", "b.txt": "b2", "c.txt": "c2", "new/deep/d.txt": "d2"}.items():
        a.write(rel, data)
    os.chmod(a.root / "c.txt", 0o755)
    os.rmdir(a.root / "keep")
    a.settle()


def commit(a: Agent, boundary=BOUNDARY) -> dict:
    c = a.wb.rewind.prepare({"boundary": boundary})
    return a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})


def intents(root: Path) -> list[Path]:
    folder = Path(root) / ".turnback" / "txn"
    return sorted(p for p in folder.iterdir() if p.suffix == ".cbor" and not fs.is_temp_name(p.name))


def recovery_files(root: Path) -> list[Path]:
    folder = Path(root) / ".turnback" / "recovery"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == ".cbor" and not fs.is_temp_name(p.name))


def recorded(root: Path) -> set[str]:
    """The workspace files the recovery records name (workspace-relative)."""
    from turnback.store.layout import Store

    a = Agent(root, store_kind=Store.open(Path(root) / ".turnback", kind=None, create=False).kind)
    try:
        records = a.wb.recovery.list()["recovery"]
    finally:
        a.close()
    base = Path(root).resolve().as_uri() + "/"
    return {uri[len(base):] for rec in records for uri in rec["paths"]}


def assert_recorded_exactly(root: Path, files: dict, old: dict, what: str) -> None:
    """A state that is neither old nor new must be explained file by file: the recovery records
    name exactly the files whose bytes differ from the old state, no more, no fewer."""
    differ = {rel for rel in set(files) | set(old) if files.get(rel) != old.get(rel)}
    names = recorded(root)
    assert differ, f"{what}: not the old state, yet every file is as it was"
    # Folders (travelkit.tree's empty "d/" keys, a record's folder keys) are held to their files: an
    # empty folder that differs only because a file in it could not be put back is explained by
    # that file's record, and a record may name the folders of a file it names (recovery lists
    # what it could not finish from that point on, the folders the file needs among them).
    files_differ = {rel for rel in differ if not rel.endswith("/")}
    files_named = {rel for rel in names if not rel.endswith("/")}
    # An empty folder that differs and is named itself (one the recovery could not remove or make)
    # is explained by its own record.
    for side, keys, other in (("differ", differ, names), ("are named", names, differ)):
        loose = {d for d in keys if d.endswith("/") and d not in other and not any(
            f.startswith(d) for f in files_differ | files_named)}
        assert not loose, f"{what}: folders {side} with no file under them: {sorted(loose)}"
    differ, names = files_differ, files_named
    assert names == differ, f"{what}: the records name {sorted(names)}, the files that differ are {sorted(differ)}"


def crashed_mid_apply(tmp_path: Path, kind: str = "heads") -> tuple[Path, dict[str, bytes]]:
    """A workspace whose rewind was killed after it touched some files but before its commit point:
    an intent is left and the files are a mix. Returns (workspace, files before the rewind)."""
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    a = Agent(pristine, store_kind=kind)
    three_files(a)
    before = a.files()
    whole = tree(a.root)
    a.close()
    for n in range(10, 400, 3):
        work = tmp_path / f"crash{n}"
        shutil.copytree(pristine, work, symlinks=True)
        if run_child(REWIND_CHILD, work, kind, crash_at=n).returncode == 0:
            break
        now = {p.relative_to(work).as_posix(): p.read_bytes() for p in work.rglob("*.txt")
               if ".turnback" not in p.parts}
        if intents(work) and now != before and now.get("c.txt") == b"c2":
            return work, whole  # the tree before the rewind: bytes, modes and folders
        shutil.rmtree(work)
    raise AssertionError("no crash point left an intent with the files half rewound")
