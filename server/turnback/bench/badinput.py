"""real-history-bad-input: synthetic steps added to a real history, the inputs a store must survive.

On top of a real release (requests, from PyPI), each as one agent turn:

* `symlinks`: three links appear (to a file, to a folder, out of the workspace), and next turn one is
  retargeted: a documented gap (`symlink`), named once per path however many turns hold it, never
  followed, never restored;
* `mode-only`: files whose bytes stay and whose mode changes (`chmod +x`, then back);
* `big-file`: a 100 MiB file appears, then changes: over `capture.maxFileBytes`, a `too-large` gap;
* `many-files`: 10,000 files created in one turn, then every one of them changed in the next;
* `submodules`: a nested repository (a `.git` folder) and a submodule's checkout (a `.git` file,
  `.gitmodules`) appear, then change (their files and their git data): their files come and go with
  the turns, their git data is never touched, and a rewind to the release names the two folders it
  cannot empty (`folder-not-empty`).

Replayed through a live owner while a second client asks it for its status every 50 ms (the owner
answering throughout: every question answered, the slowest answer a figure), then through the
command line with no owner. Each side then rewinds to every earlier turn and Redoes back to the
last, comparing the whole tree byte for byte, modes included, with the gaps' paths left out and
checked instead: each gap named by the rewind, each symlink path once.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

from . import sdists
from .replay import differences, empty_folders, read_tree
from .sdists import Entry, Tree

BASE = ("requests", "2.33.0")
BIG = "data/big.bin"
BIG_BYTES = 100 * 2 ** 20
MANY = 10_000
LINKS = {"latest": b"README.md", "src-link": b"src", "outside": b"/etc/passwd"}


def _symlinks(tree: Tree) -> list[Tree]:
    with_links = {**tree, **{rel: Entry(target, 0o777, link=True) for rel, target in LINKS.items()}}
    return [with_links, {**with_links, "latest": Entry(b"HISTORY.md", 0o777, link=True)}]


def _mode_only(tree: Tree) -> list[Tree]:
    names = sorted(rel for rel, e in tree.items() if rel.endswith(".py") and not e.link)[:5]
    executable = {**tree, **{rel: Entry(tree[rel].data, 0o755) for rel in names}}
    return [executable, {**executable, names[0]: Entry(tree[names[0]].data, 0o644)}]


def _big_file(tree: Tree) -> list[Tree]:
    data = random.Random("big").randbytes(BIG_BYTES)
    changed = data[:1000] + b"an edit in the middle of a big file" + data[1035:]
    return [{**tree, BIG: Entry(data, 0o644)}, {**tree, BIG: Entry(changed, 0o644)}]


def _many_files(tree: Tree) -> list[Tree]:
    def files(edit: str) -> Tree:
        return {f"gen/{i // 500:02}/f{i:05}.txt": Entry(f"file {i}{edit}\n".encode() * 8, 0o644)
                for i in range(MANY)}
    return [{**tree, **files("")}, {**tree, **files(", changed")}]


NESTED, SUBMODULE = "vendor/nested", "vendor/sub"
GIT_DATA = {f"{NESTED}/.git/HEAD", f"{NESTED}/.git/config", f"{SUBMODULE}/.git"}


def _submodules(tree: Tree) -> list[Tree]:
    """A nested repository (its own `.git` folder) and a submodule's checkout (a `.git` file naming
    its git folder, and `.gitmodules`): their files are the workspace's, their git data never is."""
    def step(edit: str, head: bytes) -> Tree:
        return {**tree,
                ".gitmodules": Entry(f'[submodule "sub"]\n\tpath = {SUBMODULE}\n'.encode(), 0o644),
                f"{SUBMODULE}/.git": Entry(b"gitdir: ../../.git/modules/sub\n", 0o644),
                f"{SUBMODULE}/lib.py": Entry(f"VALUE = 1{edit}\n".encode(), 0o644),
                f"{NESTED}/.git/HEAD": Entry(head, 0o644),
                f"{NESTED}/.git/config": Entry(b"[core]\n\tbare = false\n", 0o644),
                f"{NESTED}/main.py": Entry(f"print('nested'){edit}\n".encode(), 0o644)}
    return [step("", b"ref: refs/heads/main\n"), step("  # changed", b"ref: refs/heads/other\n")]


STEPS = {"symlinks": _symlinks, "mode-only": _mode_only, "big-file": _big_file,
         "many-files": _many_files, "submodules": _submodules}
# paths each rewind to the release must name, with the reason
GAP_PATHS = {"symlinks": set(LINKS), "big-file": {BIG}, "submodules": {NESTED, SUBMODULE}}
GAP_REASONS = {"symlinks": "symlink", "big-file": "too-large", "submodules": "folder-not-empty"}
# paths never compared: git's own data, which turnback neither captures nor restores
UNCOMPARED = {"submodules": GIT_DATA}


def history(kind: str) -> list[tuple[str, Tree]]:
    """The base release, then the kind's synthetic turns."""
    (version, base), = sdists.release_trees(BASE[0], [BASE[1]])
    return [(f"{BASE[0]} {version}", base)] + [(f"{kind} {i}", t) for i, t in
                                               enumerate(STEPS[kind](base), 1)]


class Prober:
    """A second client asking the owner for its status every 50 ms while the turns run."""

    def __init__(self, client, root: Path):
        self.client, self.root = client, root
        self.times: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            t0 = time.perf_counter()
            try:
                self.client.call(self.root, "turnback/session/status", {})
            except Exception as exc:  # noqa: BLE001 - an unanswered question is the finding
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.times.append(time.perf_counter() - t0)


def _gap_paths(candidate: dict, root: Path) -> list[tuple[str, str]]:
    out = []
    for g in candidate.get("gaps", []):
        uri = g.get("uri")
        if uri:
            rel = str(Path(unquote(urlparse(uri).path)).relative_to(root))
            out.append((rel, g.get("reason")))
    return out


def travel_back(check, label: str, cli, kind: str, trees: list[Tree]) -> None:
    """Rewind to every earlier turn, then Redo back to the last; the tree compared after each, the
    gaps' paths checked instead of compared."""
    skip = GAP_PATHS.get(kind, set()) | UNCOMPARED.get(kind, set())
    top = cli.run("info")[0]["headSeq"]
    for k in range(len(trees) - 1, 0, -1):
        doc, _ = cli.run("rewind", "--before-prompt", str(k + 1), "--yes")
        want = trees[k - 1]
        got = read_tree(cli.root)
        diff = differences(want, got, skip)
        check(f"{label}: rewind before turn {k + 1} gives turn {k}'s tree", not diff, str(diff[:5]))
        untouched = {rel: got.get(rel) for rel in UNCOMPARED.get(kind, ())}
        check(f"{label}: rewind before turn {k + 1} leaves git's data as the last turn left it",
              untouched == {rel: trees[-1][rel] for rel in untouched}, str(sorted(untouched)))
        check(f"{label}: rewind before turn {k + 1} leaves no empty folder",
              not empty_folders(cli.root), str(empty_folders(cli.root)[:5]))
        named = _gap_paths(doc.get("candidate", {}), cli.root)
        paths = [rel for rel, _reason in named]
        check(f"{label}: rewind before turn {k + 1} names each gap's path once",
              len(paths) == len(set(paths)), str(named))
        if k == 1:  # every turn that held the bad input is discarded
            for rel in sorted(GAP_PATHS.get(kind, ())):
                check(f"{label}: the rewind to the release names {rel} ({GAP_REASONS[kind]})",
                      (rel, GAP_REASONS[kind]) in named, str(named))
    cli.run("redo", "--head", str(top), "--yes")
    diff = differences(trees[-1], read_tree(cli.root), skip)
    check(f"{label}: redo gives the last turn's tree back", not diff, str(diff[:5]))


def replay_owner(check, client, root: Path, releases) -> dict:
    from .realhistory import replay_owner as replay

    with Prober(client, root) as probe:
        timings = replay(root, releases, client)
    check("the owner answered every status question during the turns", not probe.errors,
          str(probe.errors[:3]))
    return {**timings, "probe": probe.times}


def run_kind(check, client, work: Path, kind: str, env: dict, side: str) -> dict:
    """One kind of bad input through one side ("owner" or "cli"); returns the turns' timings."""
    import shutil

    from .live import start_owner, stop_owner
    from .realhistory import Cli, replay_cli

    releases = history(kind)
    trees = [t for _v, t in releases]
    root = work / f"{kind}-{side}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    cli = Cli(root, env)
    if side == "owner":
        start_owner(root, env=env)
        try:
            out = replay_owner(check, client, root, releases)
            travel_back(check, f"{kind} (owner)", cli, kind, trees)
            client.call(root, "turnback/session/status", {})
        finally:
            stop_owner(root)
    else:
        out = replay_cli(cli, releases)
        travel_back(check, f"{kind} (command line)", cli, kind, trees)
    try:
        cli.run("fsck")
        check(f"{kind} ({side}): fsck finds the store sound", True)
    except RuntimeError as exc:
        check(f"{kind} ({side}): fsck finds the store sound", False, str(exc))
    return out


def run(ctx) -> None:
    import statistics

    from ..remote import client
    from .realhistory import _env
    from .runner import Unavailable

    why = sdists.reachable()
    if why is not None:
        raise Unavailable(f"PyPI is unreachable: {why}")
    env, _note = _env(ctx.work / ctx.scenario)
    for kind in STEPS:
        for side in ("owner", "cli"):
            out = run_kind(ctx.check, client, ctx.dir("ws"), kind, env, side)
            turn = [b + s for b, s in zip(out["begin"], out["settle"])]
            ctx.fig(f"{kind}-{side}-turn-max", max(turn[1:]), "s",
                    note="the slowest synthetic turn (begin + settle)")
            if side == "owner":
                ctx.fig(f"{kind}-owner-status-max", max(out["probe"]), "s",
                        baseline=statistics.median(out["probe"]), source="its median",
                        note=f"{len(out['probe'])} status questions during the turns")
