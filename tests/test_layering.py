"""The floors of docs/architecture.md, written once and checked: this table is the map's source of truth.

Every import from one package of server/turnback into another (read with ast, imports inside
functions included, by tools/import_cycles.py) must point to a lower floor, or be one of the few
sideways arrows listed below, or one of the known upward arrows of issue 44. A new package needs a
floor here before its first import passes.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "tools" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_cycles)

# Packages of turnback (and its top-level modules, by name) and their floors, the ground floor first.
FLOORS = {
    "turnback": 0,            # __init__.py: the version
    "turnback.errors": 0,     # one error type with stable codes, importable from every floor
    "model": 1, "workspace": 1, "store": 1,
    "remote": 1,              # the socket's wire and client, standard library only
    "agents": 2,              # the agents' records (agent record, spool, transcript): store/ below
    "capture": 2, "timeline": 2, "collect": 2, "effects": 2, "directives": 2, "diffs": 2,
    "travel": 3,
    "workbench": 4,
    "lsp": 5, "cli": 5, "hooks": 5,   # the faces
    "bench": 6,               # drives the faces (the command line and a live owner as processes)
    "turnback.command": 7,    # the `turnback` command: the command line handed the bench's runner
    "turnback.__main__": 8,   # `python -m turnback`: runs turnback.command
}

# Arrows between packages of one floor; they must form no circle among themselves.
SIDEWAYS = {
    ("workspace", "store"),   # the fence checks a path before store/fs/ writes it
    ("collect", "timeline"),  # the collector marks what a session's published heads reach
    ("lsp", "hooks"),         # the owner runs the hook events it is sent (lsp/hookhost.py)
    ("cli", "hooks"),         # `turnback hook …`, `hooks install`, `guard`
    ("cli", "lsp"),           # `turnback serve`
}

# Known upward arrows, module to package, each inside a function. Issue 44: shrink this, never grow it.
# (Empty: `turnback bench` was cli/commands.py importing bench; turnback/command.py now hands the
# command line its bench runner from the top floor.)
KNOWN_UPWARD: set[tuple[str, str]] = set()


def package(module: str) -> str:
    """`turnback.store.fs` -> `store`; a top-level module (`turnback.errors`) is its own package."""
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and module in FLOORS):
        return module
    return parts[1]


def arrows(edges: dict[str, set[str]]) -> set[tuple[str, str, str]]:
    """(module, its package, the package it imports) for every import that leaves its package."""
    return {(m, package(m), package(t)) for m, targets in edges.items() for t in targets
            if package(m) != package(t)}


def misplaced(edges, known=KNOWN_UPWARD) -> list[str]:
    """Every arrow that is neither down a floor, nor listed sideways, nor a `known` upward one."""
    bad = []
    for module, source, target in sorted(arrows(edges)):
        if source not in FLOORS or target not in FLOORS:
            bad.append(f"{module} -> {target}: {source if source not in FLOORS else target} has no floor")
        elif FLOORS[target] < FLOORS[source] or (source, target) in SIDEWAYS:
            continue
        elif (module, target) not in known:
            way = "sideways" if FLOORS[target] == FLOORS[source] else "up"
            bad.append(f"{module} (floor {FLOORS[source]}) -> {target} (floor {FLOORS[target]}): {way}")
    return bad


@pytest.fixture(scope="module")
def edges():
    """module -> the modules of turnback it imports, at module level or inside a function."""
    top, inner = import_cycles.graph()
    assert len(top) > 150 and "turnback.workbench.core" in top  # the whole package was read
    return {m: top[m] | inner[m] for m in top}


def test_every_package_has_a_floor():
    names = {p.name for p in import_cycles.PACKAGE.iterdir() if (p / "__init__.py").exists()}
    modules = {f"turnback.{p.stem}" for p in import_cycles.PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert names | modules | {"turnback"} == set(FLOORS)


def test_imports_point_down_the_floors(edges):
    assert misplaced(edges) == []


def test_the_sideways_arrows_form_no_circle():
    graph = {a: {b for x, b in SIDEWAYS if x == a} for a, _ in SIDEWAYS}
    assert import_cycles.circles(graph) == []
    assert all(FLOORS[a] == FLOORS[b] for a, b in SIDEWAYS)


def test_every_exception_still_exists(edges):
    """A fixed upward arrow leaves the list, so it cannot come back unseen."""
    found = {(m, t) for m, _, t in arrows(edges)}
    assert KNOWN_UPWARD <= found


def test_no_circle_between_packages_but_through_a_known_upward_arrow(edges):
    allowed = {(m, t) for m, t in KNOWN_UPWARD}
    graph = {}
    for module, source, target in arrows(edges):
        if (module, target) not in allowed:
            graph.setdefault(source, set()).add(target)
    assert import_cycles.circles(graph) == []


def test_the_check_sees_an_upward_a_sideways_and_an_unplaced_arrow():
    edges = {"turnback.store.objects": {"turnback.workbench.core", "turnback.store.fs"},
             "turnback.capture.sweep": {"turnback.timeline.book", "turnback.store.fs"},
             "turnback.attic.old": {"turnback.store.fs"},
             "turnback.cli.commands": {"turnback.bench.runner"}}
    found = [
        "turnback.attic.old -> store: attic has no floor",
        "turnback.capture.sweep (floor 2) -> timeline (floor 2): sideways",
        "turnback.store.objects (floor 1) -> workbench (floor 4): up",
    ]
    # a known upward arrow passes; once it leaves the list, it is found like any other
    assert misplaced(edges, known={("turnback.cli.commands", "bench")}) == found
    assert misplaced(edges) == found[:2] + [
        "turnback.cli.commands (floor 5) -> bench (floor 6): up"] + found[2:]


def test_below_the_faces_nothing_speaks_the_wire():
    """The core returns results or raises TurnbackError: only lsp/ imports pygls or lsprotocol
    (read with ast, imports inside functions included)."""
    import ast

    speaking = set()
    for path in import_cycles.PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(n.split(".")[0] in ("pygls", "lsprotocol") for n in names):
                speaking.add(path.relative_to(import_cycles.PACKAGE).parts[0])
    assert speaking == {"lsp"}


def test_the_map_in_docs_names_every_floor_and_stays_short():
    """docs/architecture.md draws the floors of FLOORS (each package on its floor's line) and is
    read in one sitting (issue 44: under 15,000 characters)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert len(text) < 15_000
    lines = {int(m.group(1)): m.group(2) for m in
             (__import__("re").match(r"floor (\d+)\s+(.*)", line) for line in text.splitlines()) if m}
    for name, floor in FLOORS.items():
        drawn = name.removeprefix("turnback.") + (".py" if name.startswith("turnback.") else "/")
        assert name == "turnback" or drawn in lines.get(floor, ""), (name, floor)


def test_every_server_file_is_read_in_one_sitting():
    """Issue 44's done-when, kept: no file of the server over 450 lines (split by concern instead)."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "server" / "turnback").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 450}
    assert not long, long
